"""Schema grounding: the few tables, columns and values of a database that a question needs.

Offline, `SchemaIndex.build` indexes a SQLite database: every table, every column and the
distinct textual values of each column (bounded per column, see `agentrt.sql.database`), each with
an embedding of its name (and of a description, when one is given) and its metadata: item
kind, column type, primary key, the foreign key it is. It is built once and cached on disk:

    <cache>/grounding/<embedder>/<schema>/items.json    the items (their documents, metadata)
    <cache>/grounding/<embedder>/<schema>/vectors.npz   their vectors (`agentrt.vectors.cache`)

keyed by a hash of the schema and the descriptions, so a database seen before is grounded
without embedding anything or reading its rows again. `rebuild=True` reads the values again
(after the data changed) and embeds only the ones not seen before.

At query time, `SchemaIndex.ground` embeds the question (and earlier turns of the dialogue, at a
discount), retrieves candidates of each kind from FAISS (inner product of normalised vectors),
also matches values literally (trimmed and case-insensitively, as whole words of the question),
and re-ranks with the structure:

- the tables the dialogue names (a table or column named word for word, a value found word for
  word) are its anchors; a value several tables hold anchors only those nearest the others;
- a value found lifts its column, and a column lifts its table;
- tables are chosen greedily, each next one with a bonus when a foreign key joins it to those
  already chosen, and a larger one when it lies on a shortest join path between two chosen
  anchors (a bridge), so that the choice tends to be a joinable whole; when two anchors are
  joined by several equally short routes, every route that fits comes in, and the SQL writer
  chooses ("fines per branch": a member's branch, or the branch of the copy lent);
- columns are chosen within the budget in this order: the keys joining the anchors and
  bridges (cheap, and required), the best column of each anchor and of each bridge that
  every shortest route crosses, the other columns of those tables by score, then the rest by
  score, where a column of a table not joined yet brings the keys of its join path with it;
- values are taken from the chosen tables, literal matches first.

The result holds at most `tables` tables, `columns` columns and `values` values;
`Grounding.render()` is the grounded schema a prompt gets instead of the whole one.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field

from agentrt.logs import get_logger
from agentrt.sql.database import ForeignKey, Schema, database_path, read_schema, read_values
from agentrt.vectors.cache import embed_cached, write_atomic
from agentrt.vectors.embedder import Embedder

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "GroundedColumn",
    "GroundedTable",
    "GroundedValue",
    "Grounding",
    "SchemaIndex",
    "SchemaItem",
    "normalize_value",
]

log = get_logger("agentrt.sql.grounding")

ItemKind = Literal["table", "column", "value"]

_FORMAT = 1
"""The version of the item documents: part of the cache key, raised when `document` changes."""

CONTEXT_WEIGHT = 0.8
"""How much an earlier turn of the dialogue counts against the question itself."""
LITERAL_SCORE = 1.0
"""A value found word for word in the question (cosine similarity tops out at 1)."""
VALUE_TO_COLUMN = 0.95
"""The share of a literally matched value's score its column gets, at least."""
SIMILAR_VALUE_TO_COLUMN = 0.5
"""The same for a value only similar to the question: similarity among short values is noisy
("Jane Austen" is close to "borrowed Emma"), and should not pull in its table."""
NAMED_SCORE = 0.8
"""A table or column every word of whose name the question says, stemmed and leaving out
stop words ("customers", "unit price"; "borrowed" names `borrowed_on`)."""
COLUMN_TO_TABLE = 0.9
"""The share of its best column's score a table gets, at least."""
JOIN_BONUS = 0.08
"""Added to a candidate table that a foreign key joins to the tables already chosen."""
BRIDGE_BONUS = 0.3
"""Added to a candidate table on a shortest join path between two chosen anchors that the
chosen tables do not connect yet: the table in the middle of a many-to-many question
("members who borrowed a title": loans, and copies)."""
TABLE_IN_COLUMN = 0.25
"""The share of a table's score that its columns inherit when columns are ranked."""
CANDIDATES = {"table": 64, "column": 256, "value": 128}
"""How many items of each kind FAISS retrieves per text before re-ranking."""

_WORD = re.compile(r"\w+(?:['’.-]\w+)*")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "show",
        "that",
        "the",
        "their",
        "them",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "yes",
        "you",
        "your",
        "all",
        "any",
        "each",
        "many",
        "much",
        "most",
    ]
)
"""Words too common to be a value on their own: a column holding 'No' or 'All' should not be
grounded because a question says 'no' or 'all'."""


def normalize_value(text: str) -> str:
    """A value as compared: its words, lower-cased (casefolded), single-spaced."""
    return " ".join(_WORD.findall(text.casefold()))


def words(name: str) -> str:
    """An identifier as words: `unit_price` → `unit price`, `soldOn` → `sold on`."""
    return " ".join(_CAMEL.sub(" ", name).replace("_", " ").split()).lower()


class SchemaItem(BaseModel):
    """One table, column or value of the index, with its metadata."""

    model_config = ConfigDict(frozen=True)

    kind: ItemKind
    table: str
    column: str | None = None
    value: str | None = None
    type: str | None = None
    """A column's (or a value's column's) declared type."""
    primary_key: bool = False
    references: str | None = None
    """For a column that is a foreign key: the `table.column` it references."""
    description: str | None = None

    def document(self) -> str:
        """The text embedded for this item."""
        if self.kind == "table":
            text = f"{words(self.table)} table"
        elif self.kind == "column":
            assert self.column is not None
            text = f"{words(self.column)} of {words(self.table)}"
        else:
            assert self.column is not None
            assert self.value is not None
            text = f"{self.value} ({words(self.column)})"
        return f"{text}: {self.description}" if self.description else text


class GroundedTable(BaseModel):
    name: str
    score: float


class GroundedColumn(BaseModel):
    table: str
    name: str
    type: str
    primary_key: bool = False
    references: str | None = None
    join: bool = False
    """Chosen because it joins two of the grounded tables."""
    score: float


class GroundedValue(BaseModel):
    table: str
    column: str
    value: str
    """As stored (trimmed): what a query must compare with."""
    literal: bool
    """Found word for word (ignoring case) in the dialogue, not only by similarity."""
    score: float


class Grounding(BaseModel):
    """What a question needs of a database, best first within each kind."""

    question: str
    tables: list[GroundedTable] = Field(default_factory=list)
    columns: list[GroundedColumn] = Field(default_factory=list)
    values: list[GroundedValue] = Field(default_factory=list)

    def contains(
        self,
        tables: Sequence[str] = (),
        columns: Sequence[str] = (),
        values: Sequence[str] = (),
    ) -> bool:
        """Whether every one of these is grounded: tables by name, columns as `table.column`,
        values as `table.column=value` (compared as `normalize_value` does); all
        case-insensitively."""
        have_tables = {t.name.casefold() for t in self.tables}
        have_columns = {f"{c.table}.{c.name}".casefold() for c in self.columns}
        have_values = {
            (f"{v.table}.{v.column}".casefold(), normalize_value(v.value)) for v in self.values
        }
        wanted_values = set()
        for item in values:
            column, _, value = item.partition("=")
            wanted_values.add((column.casefold(), normalize_value(value)))
        return (
            {t.casefold() for t in tables} <= have_tables
            and {c.casefold() for c in columns} <= have_columns
            and wanted_values <= have_values
        )

    def render(self) -> str:
        """The grounded schema as a prompt shows it: each table with its grounded columns (in
        the table's order), then the values found."""
        lines = []
        by_table: dict[str, list[GroundedColumn]] = defaultdict(list)
        for column in self.columns:
            by_table[column.table].append(column)
        for table in self.tables:
            parts = []
            for c in by_table.get(table.name, []):
                part = f"{c.name} {c.type}".rstrip()
                if c.primary_key:
                    part += " PRIMARY KEY"
                if c.references:
                    ref_table, _, ref_column = c.references.partition(".")
                    part += f" REFERENCES {ref_table}({ref_column})"
                parts.append(part)
            lines.append(f"{table.name}({', '.join(parts)})")
        if self.values:
            lines.append("Values in the data that match the question:")
            lines += [f"{v.table}.{v.column} = {_sql_string(v.value)}" for v in self.values]
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class _Range:
    """The items of one kind: a contiguous run of `SchemaIndex.items`."""

    start: int
    stop: int
    index: Any
    """The FAISS index of these items' vectors."""


class SchemaIndex:
    """The embedded tables, columns and values of one SQLite database. Build it with `build`.

    :param items: tables, then columns, then values
    :param vectors: one normalised row per item
    """

    def __init__(
        self,
        path: Path,
        schema: Schema,
        items: list[SchemaItem],
        vectors: npt.NDArray[np.float32],
        embedder: Embedder,
    ) -> None:
        import faiss

        self.path = path
        self.schema = schema
        self.items = items
        self.embedder = embedder
        self.embedded = 0
        """How many items the build had to embed (0 when all came from the cache)."""
        self._ranges: dict[str, _Range] = {}
        start = 0
        for kind in ("table", "column", "value"):
            stop = start
            while stop < len(items) and items[stop].kind == kind:
                stop += 1
            index = faiss.IndexFlatIP(embedder.dimension)
            if stop > start:
                index.add(vectors[start:stop])
            self._ranges[kind] = _Range(start, stop, index)
            start = stop
        if start != len(items):
            msg = "items must be ordered tables, then columns, then values"
            raise ValueError(msg)
        self._position = {_key(item): i for i, item in enumerate(items)}
        self._literal: dict[str, list[int]] = defaultdict(list)
        """A value's normalised words → the value items that have them."""
        self._longest = 1
        for i in range(self._ranges["value"].start, len(items)):
            value = normalize_value(items[i].value or "")
            if value and value not in _STOPWORDS and len(value) > 1:
                self._literal[value].append(i)
                self._longest = max(self._longest, value.count(" ") + 1)
        self._names: list[tuple[int, frozenset[str]]] = []
        """Tables and columns by the words of their names (singular, `id` left out); keys are
        left out, as `store_id` names another table, not what its own table holds."""
        for i in range(self._ranges["value"].start):
            item = items[i]
            if item.references or item.primary_key:
                continue
            name = words(item.column or item.table).split()
            named = frozenset(_stem(w) for w in name if w != "id" and w not in _STOPWORDS)
            if named:
                self._names.append((i, named))
        self._neighbours: dict[str, set[str]] = defaultdict(set)
        for key in schema.foreign_keys:
            self._neighbours[key.table].add(key.ref_table)
            self._neighbours[key.ref_table].add(key.table)
        self._distance: dict[str, dict[str, int]] = {}
        """Table → table → the fewest foreign keys a join between them crosses."""
        self._routes: dict[str, dict[str, int]] = {}
        """Table → table → how many join paths between them are that short."""
        for table in schema.tables:
            self._distance[table.name], self._routes[table.name] = self._hops(table.name)

    @classmethod
    def build(
        cls,
        database: str | Path,
        embedder: Embedder,
        cache: Path | None,
        *,
        descriptions: Mapping[str, str] | None = None,
        values_per_column: int = 200,
        rebuild: bool = False,
    ) -> SchemaIndex:
        """Index `database` (a path or a `sqlite:///` URL), or load its index from `cache`.

        Blocking (it embeds); `abuild` runs it in a worker thread.

        :param descriptions: `"table"` or `"table.column"` → a description, embedded with the
            item's name
        :param values_per_column: the most frequent distinct values kept per column
        :param rebuild: read the values again even when the schema's index is cached
        """
        path = database_path(database)
        schema = read_schema(path)
        notes = {k.casefold(): v for k, v in (descriptions or {}).items()}
        key = json.dumps(
            [_FORMAT, schema.fingerprint, sorted(notes.items()), values_per_column]
        ).encode()
        folder = None
        if cache is not None:
            digest = hashlib.sha256(key).hexdigest()[:16]
            folder = cache / "grounding" / embedder.fingerprint / digest
            stored = folder / "items.json"
            if stored.is_file() and not rebuild:
                items = [SchemaItem.model_validate(i) for i in json.loads(stored.read_text())]
                vectors, embedded = embed_cached(
                    [i.document() for i in items], embedder, folder / "vectors.npz"
                )
                built = cls(path, schema, items, vectors, embedder)
                built.embedded = embedded
                return built

        items = _items(schema, read_values(path, schema, values_per_column), notes)
        store = folder / "vectors.npz" if folder is not None else None
        vectors, embedded = embed_cached([i.document() for i in items], embedder, store)
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            text = json.dumps([i.model_dump(exclude_defaults=True) for i in items])
            write_atomic(folder / "items.json", lambda f: f.write(text.encode()))
        built = cls(path, schema, items, vectors, embedder)
        built.embedded = embedded
        log.info("schema index built", database=str(path), items=len(items), embedded=embedded)
        return built

    @classmethod
    async def abuild(
        cls,
        database: str | Path,
        embedder: Embedder,
        cache: Path | None,
        *,
        descriptions: Mapping[str, str] | None = None,
        values_per_column: int = 200,
        rebuild: bool = False,
    ) -> SchemaIndex:
        """`build` in a worker thread."""
        return await anyio.to_thread.run_sync(
            lambda: cls.build(
                database,
                embedder,
                cache,
                descriptions=descriptions,
                values_per_column=values_per_column,
                rebuild=rebuild,
            )
        )

    def ground(
        self,
        question: str,
        *,
        context: Sequence[str] = (),
        tables: int = 3,
        columns: int = 10,
        values: int = 10,
    ) -> Grounding:
        """What `question` needs: at most `tables` tables, `columns` columns, `values` values.

        Blocking (it embeds the question); `aground` runs it in a worker thread.

        :param context: earlier turns of the dialogue, most recent first; they count
            `CONTEXT_WEIGHT` as much as the question (a follow-up says "he", not the name)
        """
        texts = [question, *context]
        instruction = self.embedder.query_instruction
        vectors = self.embedder.encode([instruction + t for t in texts])
        weights = [1.0] + [CONTEXT_WEIGHT] * len(context)
        return self.ground_vectors(
            question, texts, vectors, weights, tables=tables, columns=columns, values=values
        )

    async def aground(
        self,
        question: str,
        *,
        context: Sequence[str] = (),
        tables: int = 3,
        columns: int = 10,
        values: int = 10,
    ) -> Grounding:
        """`ground` in a worker thread."""
        return await anyio.to_thread.run_sync(
            lambda: self.ground(
                question, context=context, tables=tables, columns=columns, values=values
            )
        )

    def ground_vectors(
        self,
        question: str,
        texts: Sequence[str],
        vectors: npt.NDArray[np.float32],
        weights: Sequence[float],
        *,
        tables: int,
        columns: int,
        values: int,
    ) -> Grounding:
        """`ground` with the texts already embedded (one row of `vectors` per text, each text
        weighted by its `weights` entry)."""
        score, literal, anchors = self._direct_scores(texts, vectors, weights)
        table_score = self._lift(score, literal, anchors)
        chosen, bridges = self._choose_tables(table_score, anchors, tables)
        picked_columns, join_set = self._choose_columns(
            chosen, anchors, bridges, table_score, score, columns
        )
        chosen_set = set(chosen)
        value_rank = sorted(
            (
                i
                for i in score
                if i >= self._ranges["value"].start and self.items[i].table in chosen_set
            ),
            key=lambda i: (i not in literal, -score[i]),
        )[:values]
        return Grounding(
            question=question,
            tables=[GroundedTable(name=n, score=round(table_score[n], 4)) for n in chosen],
            columns=[
                GroundedColumn(
                    table=self.items[i].table,
                    name=self.items[i].column or "",
                    type=self.items[i].type or "",
                    primary_key=self.items[i].primary_key,
                    references=self.items[i].references,
                    join=i in join_set,
                    score=round(score.get(i, 0.0), 4),
                )
                for i in picked_columns
            ],
            values=[
                GroundedValue(
                    table=self.items[i].table,
                    column=self.items[i].column or "",
                    value=self.items[i].value or "",
                    literal=i in literal,
                    score=round(score[i], 4),
                )
                for i in value_rank
            ],
        )

    def _direct_scores(
        self, texts: Sequence[str], vectors: npt.NDArray[np.float32], weights: Sequence[float]
    ) -> tuple[dict[int, float], set[int], set[str]]:
        """Each item's own score (similar, a literal value, or named), the items whose value
        the dialogue holds literally, and the tables it names or names a value of."""
        score = self._similarities(vectors, weights)
        literal: set[int] = set()
        anchors: set[str] = set()  # the tables the dialogue names, or names a value of
        for text, weight in zip(texts, weights, strict=True):
            for i in self._literal_matches(text):
                literal.add(i)
                score[i] = max(score.get(i, 0.0), LITERAL_SCORE * weight)
            said = {_stem(w) for w in normalize_value(text).split()}
            for i, named in self._names:
                if named <= said:
                    anchors.add(self.items[i].table)
                    score[i] = max(score.get(i, 0.0), NAMED_SCORE * weight)
        anchors |= self._value_anchors(literal, anchors)
        return score, literal, anchors

    def _lift(
        self, score: dict[int, float], literal: set[int], anchors: set[str]
    ) -> dict[str, float]:
        """Scores upward: a value lifts its column (in `score`), a column its table; the
        tables' scores."""
        for i in range(self._ranges["value"].start, len(self.items)):
            if i in score:
                item = self.items[i]
                column = self._position[("column", item.table, item.column or "")]
                # A value the other anchors place in another table is weak evidence for this
                # one: "Turin" of a customer, when the question is about a store's staff.
                sure = i in literal and item.table in anchors
                share = VALUE_TO_COLUMN if sure else SIMILAR_VALUE_TO_COLUMN
                score[column] = max(score.get(column, 0.0), share * score[i])
        table_score: dict[str, float] = {}
        for i in range(self._ranges["table"].start, self._ranges["table"].stop):
            table_score[self.items[i].table] = score.get(i, 0.0)
        for i in range(self._ranges["column"].start, self._ranges["column"].stop):
            name = self.items[i].table
            lifted = COLUMN_TO_TABLE * score.get(i, 0.0)
            table_score[name] = max(table_score.get(name, 0.0), lifted)
        return table_score

    def _value_anchors(self, literal: set[int], named: set[str]) -> set[str]:
        """The tables of the values found word for word. A value held by several tables
        ("Turin": a store's city, a customer's city) anchors only those of them nearest (in
        joins) to the other anchors, when there are any: in "the stock clerks in Turin", a
        clerk is an employee, who works in a store."""
        holders: dict[str, set[str]] = defaultdict(set)
        for i in literal:
            holders[normalize_value(self.items[i].value or "")].add(self.items[i].table)
        sure = named.union(*(t for t in holders.values() if len(t) == 1))
        anchors = set(sure)
        for tables in holders.values():
            if len(tables) > 1:
                hops = {t: self._hops_to(t, sure) for t in tables}
                anchors |= {t for t in tables if hops[t] == min(hops.values())}
        return anchors

    def _hops_to(self, table: str, others: set[str]) -> int:
        """The fewest foreign keys between `table` and any of `others` (as many as there are
        tables when none is reachable, or none given)."""
        near = self._distance[table]
        return min((near[o] for o in others if o in near), default=len(self._distance))

    def _choose_tables(
        self, table_score: Mapping[str, float], anchors: set[str], count: int
    ) -> tuple[dict[str, float], set[str]]:
        """The `count` tables to ground, in the order chosen, each with its worth (its score
        plus what joining the tables chosen before it adds, `_join_bonus`), and which of them
        were chosen as bridges between anchors."""
        chosen: dict[str, float] = {}
        bridges: set[str] = set()
        while len(chosen) < min(count, len(table_score)):
            best, best_worth, best_bonus = "", float("-inf"), 0.0
            pairs = self._anchor_pairs(chosen, anchors)
            for name, base in table_score.items():
                if name in chosen:
                    continue
                bonus = self._join_bonus(name, chosen, anchors, pairs)
                if base + bonus > best_worth:
                    best, best_worth, best_bonus = name, base + bonus, bonus
            chosen[best] = best_worth
            if best_bonus > JOIN_BONUS:
                bridges.add(best)
        return chosen, bridges

    def _join_bonus(
        self,
        name: str,
        chosen: Mapping[str, float],
        anchors: set[str],
        pairs: Sequence[tuple[str, str]],
    ) -> float:
        """What a candidate table adds by joining the tables already chosen: `JOIN_BONUS` when a
        foreign key joins it to one of them, `BRIDGE_BONUS` more when it lies on a shortest join
        path between two groups of chosen tables that are not joined yet, each holding an
        anchor (a table the dialogue names), or on another shortest path between two chosen
        anchors already joined (`pairs`): which of equally short routes a question means is
        the SQL writer's to choose, when the budget holds them all."""
        if not any(c in self._neighbours[name] for c in chosen):
            return 0.0
        groups: dict[int, set[str]] = defaultdict(set)
        for table, number in _components(chosen, self._neighbours).items():
            groups[number].add(table)
        anchored = [g for g in groups.values() if g & anchors]
        for i, first in enumerate(anchored):
            for second in anchored[i + 1 :]:
                gap = min(self._hops_to(a, second) for a in first)
                via = self._hops_to(name, first) + self._hops_to(name, second)
                if gap < len(self._distance) and via == gap:
                    return JOIN_BONUS + BRIDGE_BONUS
        if any(self._routes_through(name, a, b) for a, b in pairs):
            return JOIN_BONUS + BRIDGE_BONUS
        return JOIN_BONUS

    def _anchor_pairs(self, chosen: Iterable[str], anchors: set[str]) -> list[tuple[str, str]]:
        """The pairs of chosen anchors that a join can connect with no other chosen anchor on
        any shortest path between them: members and books are no such pair when loans (named by
        "borrowed") lies between them, so a route through the members' branch is no rival."""
        ends = [t for t in chosen if t in anchors]
        return [
            (a, b)
            for i, a in enumerate(ends)
            for b in ends[i + 1 :]
            if b in self._distance[a]
            and not any(self._routes_through(c, a, b) for c in ends if c not in (a, b))
        ]

    def _routes_through(self, table: str, a: str, b: str) -> int:
        """How many of the shortest join paths between `a` and `b` go through `table`."""
        near = self._distance[a]
        if table not in near or b not in near or near[table] + self._distance[table][b] > near[b]:
            return 0
        return self._routes[a][table] * self._routes[table][b]

    def _choose_columns(
        self,
        chosen: Mapping[str, float],
        anchors: set[str],
        bridges: set[str],
        table_score: Mapping[str, float],
        score: Mapping[int, float],
        budget: int,
    ) -> tuple[list[int], set[int]]:
        """At most `budget` columns of the chosen tables, join columns first, and which of them
        are join columns. Taken in this order, each only when it fits whole:

        1. the core: the chosen anchors and bridges, or the best table when there is no anchor.
           The keys of shortest join paths (through chosen tables) that connect the core, and
           every key between two core tables: cheap, and required to write the query;
        2. the best data column (not a key) of each anchor and of each bridge that every
           shortest route between two anchors crosses, when it has none yet: the question
           names an anchor for something, and the bridge of a many-to-many question usually
           holds what is counted or summed (the quantity of a sale); a bridge on one of
           several equally short routes may be the route the query does not take;
        3. the other columns of the core by score (their own plus a share of their table's),
           then those of the other chosen tables; a column of a table not joined yet comes
           with the keys of the shortest join path to it, or not at all, so the keys of a
           table only similar to the question never crowd out the columns of the tables the
           question is about ("stock clerks in Turin": not a customer's city);
        4. the other keys between grounded tables (a second route between them).
        """
        picked: dict[int, None] = {}
        joins: set[int] = set()
        grounded: set[str] = set()

        def take(path: list[int], column: int | None = None) -> None:
            new = [c for c in dict.fromkeys([*path, column]) if c is not None and c not in picked]
            if len(picked) + len(new) <= budget:
                picked.update(dict.fromkeys(new))
                joins.update(path)
                grounded.update(self.items[c].table for c in new)

        core = [t for t in chosen if t in anchors | bridges] or list(chosen)[:1]
        for table in core:
            take(self._join_path(table, grounded, chosen))
            grounded.add(table)
        for path in self._keys_between(core):
            take(path)

        worth = self._column_worth(chosen, table_score, score)
        for table in self._counted_tables(core, chosen, anchors, bridges):
            own = [i for i in worth if self.items[i].table == table and _holds_data(self.items[i])]
            if own and not picked.keys() & own:
                take(self._join_path(table, grounded, chosen), max(own, key=worth.__getitem__))

        ranked = sorted(worth, key=lambda i: -worth[i])
        for i in [i for i in ranked if self.items[i].table in core] + ranked:
            if len(picked) == budget:
                break
            take(self._join_path(self.items[i].table, grounded, chosen), i)

        for path in self._keys_between(grounded):
            take(path)
        return sorted(picked, key=lambda i: i not in joins), joins

    def _keys_between(self, tables: Collection[str]) -> list[list[int]]:
        """The columns of each foreign key between two of `tables`."""
        return [
            self._key_columns(key)
            for key in self.schema.foreign_keys
            if key.table in tables and key.ref_table in tables
        ]

    def _column_worth(
        self,
        chosen: Mapping[str, float],
        table_score: Mapping[str, float],
        score: Mapping[int, float],
    ) -> dict[int, float]:
        """Each column of the chosen tables: its own score plus a share of its table's."""
        return {
            i: score.get(i, 0.0) + TABLE_IN_COLUMN * table_score[self.items[i].table]
            for i in range(self._ranges["column"].start, self._ranges["column"].stop)
            if self.items[i].table in chosen
        }

    def _counted_tables(
        self, core: list[str], chosen: Mapping[str, float], anchors: set[str], bridges: set[str]
    ) -> list[str]:
        """The core tables whose best data column is wanted: the anchors, and the bridges
        that every shortest route between two anchors crosses."""
        pairs = self._anchor_pairs(chosen, anchors)
        return [
            table
            for table in core
            if table not in bridges
            or any(0 < self._routes_through(table, a, b) == self._routes[a][b] for a, b in pairs)
        ]

    def _join_path(self, start: str, grounded: set[str], chosen: Mapping[str, float]) -> list[int]:
        """The join columns of a shortest path from `start` to a grounded table, through chosen
        tables only, the more worthy tables first among equally short paths: every key between
        two tables of the path (a flight's origin and its destination). Empty when `start` is
        grounded or none joins."""
        if start in grounded or not grounded:
            return []
        came_from: dict[str, str] = {start: start}
        frontier = [start]
        while frontier:
            following = []
            for table in frontier:
                nearby = sorted(self._neighbours[table] & chosen.keys(), key=lambda t: -chosen[t])
                for neighbour in nearby:
                    if neighbour in came_from:
                        continue
                    came_from[neighbour] = table
                    if neighbour in grounded:
                        return self._path_columns(neighbour, came_from)
                    following.append(neighbour)
            frontier = following
        return []

    def _path_columns(self, end: str, came_from: Mapping[str, str]) -> list[int]:
        columns: list[int] = []
        table = end
        while came_from[table] != table:
            previous = came_from[table]
            for key in self.schema.foreign_keys:
                if {key.table, key.ref_table} == {table, previous}:
                    columns += self._key_columns(key)
            table = previous
        return columns

    def _key_columns(self, key: ForeignKey) -> list[int]:
        """A foreign key's column, then the column it references (when it is indexed)."""
        pair = [self._position[("column", key.table, key.column)]]
        ref = ("column", key.ref_table, key.ref_column)
        if ref in self._position:
            pair.append(self._position[ref])
        return pair

    def _hops(self, start: str) -> tuple[dict[str, int], dict[str, int]]:
        """Breadth first over the foreign keys: each table reachable from `start`, by hops, and
        by how many join paths of that length reach it."""
        hops = {start: 0}
        routes = {start: 1}
        frontier = [start]
        while frontier:
            following = []
            for table in frontier:
                for neighbour in self._neighbours[table]:
                    if neighbour not in hops:
                        hops[neighbour] = hops[table] + 1
                        routes[neighbour] = 0
                        following.append(neighbour)
                    if hops[neighbour] == hops[table] + 1:
                        routes[neighbour] += routes[table]
            frontier = following
        return hops, routes

    def _similarities(
        self, vectors: npt.NDArray[np.float32], weights: Sequence[float]
    ) -> dict[int, float]:
        """Item position → its best weighted cosine similarity to any of the texts, for the
        candidates FAISS retrieves of each kind."""
        best: dict[int, float] = {}
        for kind, span in self._ranges.items():
            size = span.stop - span.start
            if not size:
                continue
            scores, rows = span.index.search(vectors, min(size, CANDIDATES[kind]))
            for weight, score_row, index_row in zip(weights, scores, rows, strict=True):
                for s, row in zip(score_row, index_row, strict=True):
                    if row >= 0:
                        i = span.start + int(row)
                        best[i] = max(best.get(i, 0.0), weight * float(s))
        return best

    def _literal_matches(self, text: str) -> set[int]:
        """Value items whose words occur, in order and whole, in `text` (the last word of a
        value may be in the plural: "yoga mats" finds "Yoga Mat")."""
        tokens = normalize_value(text).split()
        found: set[int] = set()
        for size in range(1, self._longest + 1):
            for start in range(len(tokens) - size + 1):
                words = tokens[start : start + size]
                found.update(self._literal.get(" ".join(words), ()))
                singular = " ".join([*words[:-1], _singular(words[-1])])
                found.update(self._literal.get(singular, ()))
        return found


def _stem(word: str) -> str:
    """A crude stem, enough to match the words of a name with those of a question: the same
    for admitted and admit, borrowed and borrow, diagnoses and diagnosis, courses and course."""
    if len(word) <= 3:
        return word
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + replacement
            break
    if word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]
    return word


_SUFFIXES = (
    ("ies", "y"),
    ("ied", "y"),
    ("ing", ""),
    ("ed", ""),
    ("es", ""),
    ("is", ""),
    ("ss", "ss"),
    ("s", ""),
    ("e", ""),
)
"""Endings and what replaces them, tried in order; the first that fits is replaced (a word in
-ss is left as it is, not taken for a plural)."""


def _singular(word: str) -> str:
    """A crude singular, enough to compare names and values with questions: mats → mat,
    categories → category, boxes → box; short words and words in -ss are left alone."""
    if len(word) <= 3 or word.endswith("ss"):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    return word[:-1] if word.endswith("s") else word


def _holds_data(item: SchemaItem) -> bool:
    """Whether a column holds data of its own, not a key (an id, a reference)."""
    return not (item.primary_key or item.references)


def _components(tables: Iterable[str], neighbours: Mapping[str, set[str]]) -> dict[str, int]:
    """Each table → a number shared by the tables it joins to through the others given."""
    among = set(tables)
    component: dict[str, int] = {}
    for number, first in enumerate(among):
        if first in component:
            continue
        stack = [first]
        while stack:
            table = stack.pop()
            if table not in component:
                component[table] = number
                stack += [n for n in neighbours[table] if n in among]
    return component


def _key(item: SchemaItem) -> tuple[str, ...]:
    if item.kind == "table":
        return ("table", item.table)
    if item.kind == "column":
        return ("column", item.table, item.column or "")
    return ("value", item.table, item.column or "", item.value or "")


def _items(
    schema: Schema, values: Mapping[tuple[str, str], list[str]], notes: Mapping[str, str]
) -> list[SchemaItem]:
    references = {(k.table, k.column): f"{k.ref_table}.{k.ref_column}" for k in schema.foreign_keys}
    tables = [
        SchemaItem(kind="table", table=t.name, description=notes.get(t.name.casefold()))
        for t in schema.tables
    ]
    columns = [
        SchemaItem(
            kind="column",
            table=t.name,
            column=c.name,
            type=c.type,
            primary_key=c.primary_key,
            references=references.get((t.name, c.name)),
            description=notes.get(f"{t.name}.{c.name}".casefold()),
        )
        for t in schema.tables
        for c in t.columns
    ]
    types = {(t.name, c.name): c.type for t in schema.tables for c in t.columns}
    found = [
        SchemaItem(kind="value", table=table, column=column, value=v, type=types[(table, column)])
        for (table, column), texts in values.items()
        for v in texts
    ]
    return [*tables, *columns, *found]


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
