"""Internal. The schema index: how it is built and cached, and how it grounds a question
(scores, anchors, the choice of tables and of columns); `agentrt.sql.grounding` explains it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from agentrt.exceptions import UserError
from agentrt.logs import get_logger
from agentrt.sql._text import stems
from agentrt.sql.database import (
    ForeignKey,
    Schema,
    all_values,
    database_path,
    infer_joins,
    read_schema,
    read_values,
)
from agentrt.sql.grounding.columns import ColumnChoice
from agentrt.sql.grounding.graph import JoinGraph, components, inferred_joins
from agentrt.sql.grounding.matching import (
    CODE_SCORE,
    LITERAL_SCORE,
    STOP_STEMS,
    coded_values,
    contains,
    item_hit,
    value_matches,
)
from agentrt.sql.grounding.models import (
    GroundedColumn,
    GroundedTable,
    GroundedValue,
    Grounding,
    SchemaItem,
    Synonyms,
    normalize_value,
    words,
)
from agentrt.sql.values import ValueHit, ValueIndex
from agentrt.vectors.cache import embed_cached, write_atomic
from agentrt.vectors.embedder import Embedder

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = get_logger("agentrt.sql.grounding")

_FORMAT = 2
"""The version of the item documents: part of the cache key, raised when `document` changes."""

CONTEXT_WEIGHT = 0.8
"""How much an earlier turn of the dialogue counts against the question itself."""
VALUE_TO_COLUMN = 0.95
"""The share of a literally matched value's score its column gets, at least."""
SIMILAR_VALUE_TO_COLUMN = 0.5
"""The same for a value only similar to the question: similarity among short values is noisy
("Jane Austen" is close to "borrowed Emma"), and should not pull in its table."""
NAMED_SCORE = 0.8
"""A table or column every word of whose name the question says, stemmed and leaving out
stop words ("customers", "unit price"; "borrowed" names `borrowed_on`); a column's times the
weight of its words: log(1 + N/df) / log(1 + N) when df of the schema's N tables have a name
holding them all, 1 for words one table's names have ("postal code" of customers), falling
towards 0 for "name", "id" or "date", which every table has. Only a column whose words no
other table's names have makes its table an anchor."""
SUFFIX = 4
"""How many letters a table name's word may add to a stem the question says and still be
named by it: Porter keeps "shipment" and "rental" apart from "ship" and "rent"."""
VALUE_BUDGET = 300_000
"""The distinct values indexed per database for matching word for word (see
`agentrt.sql.database.all_values` for what happens past it): about 20 MB on disk."""
COLUMN_TO_TABLE = 0.9
"""The share of its best column's score a table gets, at least."""
JOIN_BONUS = 0.08
"""Added to a candidate table that a foreign key joins to the tables already chosen."""
BRIDGE_BONUS = 0.3
"""Added to a candidate table on a shortest join path between two chosen anchors that the
chosen tables do not connect yet: the table in the middle of a many-to-many question
("members who borrowed a title": loans, and copies)."""
CANDIDATES = {"table": 64, "column": 256, "value": 128}
"""How many items of each kind FAISS retrieves per text before re-ranking."""

_YEAR_OR_SMALL = re.compile(r"^\d{1,4}$")


@dataclass(frozen=True, slots=True)
class _Synonym:
    """A phrase (its stems) and what it grounds: items (tables, columns), values."""

    words: tuple[str, ...]
    items: tuple[int, ...]
    values: tuple[ValueHit, ...]


@dataclass(frozen=True, slots=True)
class _Range:
    """The items of one kind: a contiguous run of `SchemaIndex.items`."""

    start: int
    stop: int
    index: Any
    """The FAISS index of these items' vectors."""


class SchemaIndex:
    """The embedded tables, columns and values of one SQLite database, and the index of all
    its values (`agentrt.sql.values`). Build it with `build`.

    :param items: tables, then columns, then values (the embedded ones: the most frequent of
        each column)
    :param vectors: one normalised row per item
    :param values: every distinct value, matched word for word and by FTS5
    :param synonyms: what the database's users call its values, columns and tables
    :raises UserError: a synonym whose target is not in the schema
    """

    def __init__(
        self,
        path: Path,
        schema: Schema,
        items: list[SchemaItem],
        vectors: npt.NDArray[np.float32],
        embedder: Embedder,
        values: ValueIndex,
        synonyms: Synonyms | None = None,
    ) -> None:
        self.path = path
        self.schema = schema
        self.items = items
        self.embedder = embedder
        self.values = values
        self.embedded = 0
        """How many items the build had to embed (0 when all came from the cache)."""
        self._ranges = _ranges(items, vectors, embedder.dimension)
        self._position = {_key(item): i for i, item in enumerate(items)}
        self.joins = [*schema.foreign_keys, *inferred_joins(items)]
        """The foreign keys, declared and inferred (`ForeignKey.inferred`)."""
        self._graph = JoinGraph([t.name for t in schema.tables], self.joins, self._position)
        span = self._ranges["column"]
        self._columns = ColumnChoice(schema, items, range(span.start, span.stop), self._graph)
        self._names = self._name_index()
        self._vocabulary = self._table_words()
        self._codes = {
            t.name: keys[0].name
            for t in schema.tables
            if len(keys := [c for c in t.columns if c.primary_key]) == 1
            and "INT" not in keys[0].type.upper()
            and any(j.ref_table == t.name for j in self.joins)
        }
        """Table → its text primary key, when other tables reference it: a code ('CH')."""
        self._synonyms = [
            self._synonym(p, t) for p, t in (synonyms or Synonyms(phrases={})).phrases.items()
        ]

    def _name_index(self) -> list[tuple[int, frozenset[str], float]]:
        """Tables and columns by the stems of the words of their names (`id` and stop words left
        out), with the weight of those words (see `NAMED_SCORE`); keys are left out, as
        `store_id` names another table, not what its own table holds."""
        named: list[tuple[int, frozenset[str]]] = []
        for i in range(self._ranges["value"].start):
            item = self.items[i]
            if item.kind == "column" and (item.references or not self._columns.holds_data(item)):
                continue
            words_ = stems(words(item.column or item.table))
            found = frozenset(w for w in words_ if w != "id" and w not in STOP_STEMS)
            if found:
                named.append((i, found))
        by_table: dict[str, list[frozenset[str]]] = defaultdict(list)
        for i, found in named:
            by_table[self.items[i].table].append(found)
        tables = max(1, len(self.schema.tables))

        def weight(found: frozenset[str]) -> float:
            spread = sum(any(found <= other for other in names) for names in by_table.values())
            return math.log(1 + tables / spread) / math.log(1 + tables)

        return [(i, found, weight(found)) for i, found in named]

    def _table_words(self) -> dict[str, set[str]]:
        """A stem → the words of table names it begins, at most `SUFFIX` letters longer."""
        vocabulary: dict[str, set[str]] = defaultdict(set)
        for i, named, _ in self._names:
            for word in named if self.items[i].kind == "table" else ():
                for cut in range(max(4, len(word) - SUFFIX), len(word)):
                    vocabulary[word[:cut]].add(word)
        return vocabulary

    def _synonym(self, phrase: str, targets: Sequence[str]) -> _Synonym:
        """A synonym's targets found in the schema, by their names as the schema spells them."""
        items: list[int] = []
        values: list[ValueHit] = []
        for target in targets:
            name, _, value = target.partition("=")
            table_name, _, column_name = name.strip().partition(".")
            table = self.schema.table(table_name)
            column = table.column(column_name) if table and column_name else None
            if table is None or (column_name and column is None):
                msg = f"synonym {phrase!r}: no {name.strip()!r} in the schema of {self.path}"
                raise UserError(msg)
            if value and column is not None:
                values.append((table.name, column.name, value.strip()))
            elif column is not None:
                items.append(self._position[("column", table.name, column.name)])
            else:
                items.append(self._position[("table", table.name)])
        return _Synonym(tuple(stems(phrase)), tuple(items), tuple(values))

    @classmethod
    def build(
        cls,
        database: str | Path,
        embedder: Embedder,
        cache: Path | None,
        *,
        descriptions: Mapping[str, str] | None = None,
        synonyms: Synonyms | None = None,
        values_per_column: int = 200,
        value_budget: int = VALUE_BUDGET,
        rebuild: bool = False,
    ) -> SchemaIndex:
        """Index `database` (a path or a `sqlite:///` URL), or load its index from `cache`.

        Blocking (it embeds); `abuild` runs it in a worker thread.

        :param descriptions: `"table"` or `"table.column"` → a description, embedded with the
            item's name
        :param synonyms: what the database's users call things (`load_synonyms`); applied to
            questions, so not part of the cache key
        :param values_per_column: the most frequent distinct values embedded per column
        :param value_budget: the distinct values matched word for word, in all
        :param rebuild: read the values again (and infer the joins again) even when the
            schema's index is cached
        """
        path = database_path(database)
        schema = read_schema(path)
        notes = {k.casefold(): v for k, v in (descriptions or {}).items()}
        key = json.dumps(
            [_FORMAT, schema.fingerprint, sorted(notes.items()), values_per_column, value_budget]
        ).encode()
        folder = None
        if cache is not None:
            folder = (
                cache / "grounding" / embedder.fingerprint / hashlib.sha256(key).hexdigest()[:16]
            )
            stored = folder / "items.json"
            if stored.is_file() and (folder / "values.sqlite").is_file() and not rebuild:
                items = [SchemaItem.model_validate(i) for i in json.loads(stored.read_text())]
                values = ValueIndex.open(folder / "values.sqlite")
                return cls._embedded(path, schema, items, embedder, folder, values, synonyms)

        joins = infer_joins(path, schema)
        items = _items(schema, joins, read_values(path, schema, values_per_column), notes)
        target = folder / "values.sqlite" if folder is not None else None
        values = ValueIndex.build(all_values(path, schema, value_budget), target)
        built = cls._embedded(path, schema, items, embedder, folder, values, synonyms)
        if folder is not None:
            text = json.dumps([i.model_dump(exclude_defaults=True) for i in items])
            write_atomic(folder / "items.json", lambda f: f.write(text.encode()))
        log.info(
            "schema index built",
            database=str(path),
            items=len(items),
            embedded=built.embedded,
            values=len(values),
            inferred_joins=len(joins),
        )
        return built

    @classmethod
    def _embedded(
        cls,
        path: Path,
        schema: Schema,
        items: list[SchemaItem],
        embedder: Embedder,
        folder: Path | None,
        values: ValueIndex,
        synonyms: Synonyms | None,
    ) -> SchemaIndex:
        """The index of these items, their vectors taken from `folder` or embedded (and kept
        there)."""
        store = folder / "vectors.npz" if folder is not None else None
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
        vectors, embedded = embed_cached([i.document() for i in items], embedder, store)
        built = cls(path, schema, items, vectors, embedder, values, synonyms)
        built.embedded = embedded
        return built

    @classmethod
    async def abuild(
        cls,
        database: str | Path,
        embedder: Embedder,
        cache: Path | None,
        *,
        descriptions: Mapping[str, str] | None = None,
        synonyms: Synonyms | None = None,
        values_per_column: int = 200,
        value_budget: int = VALUE_BUDGET,
        rebuild: bool = False,
    ) -> SchemaIndex:
        """`build` in a worker thread."""
        return await anyio.to_thread.run_sync(
            lambda: cls.build(
                database,
                embedder,
                cache,
                descriptions=descriptions,
                synonyms=synonyms,
                values_per_column=values_per_column,
                value_budget=value_budget,
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
        score, value_score, literal, anchors = self._direct_scores(texts, vectors, weights)
        table_score = self._lift(score, value_score, literal, anchors)
        chosen, bridges = self._choose_tables(table_score, anchors, tables)
        picked_columns, join_set = self._columns.choose(
            chosen, anchors, bridges, table_score, score, columns
        )
        value_rank = sorted(
            (hit for hit in value_score if hit[0] in chosen),
            key=lambda hit: (hit not in literal, -value_score[hit]),
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
                    inferred=self.items[i].inferred,
                    join=i in join_set,
                    score=round(score.get(i, 0.0), 4),
                )
                for i in picked_columns
            ],
            values=[
                GroundedValue(
                    table=table,
                    column=column,
                    value=value,
                    literal=(table, column, value) in literal,
                    score=round(value_score[(table, column, value)], 4),
                )
                for table, column, value in value_rank
            ],
        )

    def _direct_scores(
        self, texts: Sequence[str], vectors: npt.NDArray[np.float32], weights: Sequence[float]
    ) -> tuple[dict[int, float], dict[ValueHit, float], set[ValueHit], set[str]]:
        """Each table's and column's own score (similar, named), each value's (similar, found
        word for word or by FTS5, or a synonym's), the values the dialogue holds literally, and
        the tables it names or names a value of."""
        similar = self._similarities(vectors, weights)
        first_value = self._ranges["value"].start
        score = {i: s for i, s in similar.items() if i < first_value}
        value_score = {item_hit(self.items[i]): s for i, s in similar.items() if i >= first_value}
        literal: set[ValueHit] = set()
        anchors: set[str] = set()  # the tables the dialogue names, or names a value of
        for text, weight in zip(texts, weights, strict=True):
            said = stems(text)
            for hit, found in value_matches(self.values, text, said).items():
                if found == 1.0:
                    literal.add(hit)
                value_score[hit] = max(value_score.get(hit, 0.0), found * weight)
            present = self._name_words(said)
            for i, named, distinct in self._names:
                if named <= present:
                    if self.items[i].kind == "table" or distinct == 1.0:
                        anchors.add(self.items[i].table)
                    named_score = NAMED_SCORE * (1.0 if self.items[i].kind == "table" else distinct)
                    score[i] = max(score.get(i, 0.0), named_score * weight)
            for synonym in self._synonyms:
                if contains(said, synonym.words):
                    for i in synonym.items:
                        anchors.add(self.items[i].table)
                        score[i] = max(score.get(i, 0.0), NAMED_SCORE * weight)
                    for hit in synonym.values:
                        literal.add(hit)
                        value_score[hit] = max(value_score.get(hit, 0.0), LITERAL_SCORE * weight)
        anchors |= self._value_anchors(literal, anchors)
        for hit in coded_values(self.path, self._codes, self.joins, literal):
            literal.add(hit)
            value_score[hit] = max(value_score.get(hit, 0.0), CODE_SCORE)
        return score, value_score, literal, anchors

    def _name_words(self, said: Sequence[str]) -> set[str]:
        """The stems said, and the words of table names that extend one of at least four
        letters by a suffix Porter's rules keep ("shipped" → ship → `shipments`, "rent" →
        `rental`); not of column names, where "member" would name `membership`."""
        present = set(said)
        for word in said:
            if len(word) >= 4:
                present.update(self._vocabulary.get(word, ()))
        return present

    def _lift(
        self,
        score: dict[int, float],
        value_score: Mapping[ValueHit, float],
        literal: set[ValueHit],
        anchors: set[str],
    ) -> dict[str, float]:
        """Scores upward: a value lifts its column (in `score`), a column its table; the
        tables' scores."""
        for hit, found in value_score.items():
            column = self._position.get(("column", hit[0], hit[1]))
            if column is None:
                continue
            # A value the other anchors place in another table is weak evidence for this
            # one: "Turin" of a customer, when the question is about a store's staff.
            sure = hit in literal and hit[0] in anchors
            share = VALUE_TO_COLUMN if sure else SIMILAR_VALUE_TO_COLUMN
            score[column] = max(score.get(column, 0.0), share * found)
        table_score: dict[str, float] = {}
        for i in range(self._ranges["table"].start, self._ranges["table"].stop):
            table_score[self.items[i].table] = score.get(i, 0.0)
        for i in range(self._ranges["column"].start, self._ranges["column"].stop):
            name = self.items[i].table
            lifted = COLUMN_TO_TABLE * score.get(i, 0.0)
            table_score[name] = max(table_score.get(name, 0.0), lifted)
        return table_score

    def _value_anchors(self, literal: set[ValueHit], named: set[str]) -> set[str]:
        """The tables of the values found word for word. A value held by several tables
        ("Turin": a store's city, a customer's city) anchors only those of them nearest (in
        joins) to the other anchors, when there are any: in "the stock clerks in Turin", a
        clerk is an employee, who works in a store. A number of up to four digits anchors
        nothing: "in 2023" is as likely a date's year as a model year stored as text."""
        holders: dict[str, set[str]] = defaultdict(set)
        for table, _, value in literal:
            if not _YEAR_OR_SMALL.match(value):
                holders[normalize_value(value)].add(table)
        sure = named.union(*(t for t in holders.values() if len(t) == 1))
        anchors = set(sure)
        for tables in holders.values():
            if len(tables) > 1:
                hops = {t: self._graph.hops_to(t, sure) for t in tables}
                anchors |= {t for t in tables if hops[t] == min(hops.values())}
        return anchors

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
            pairs = self._graph.anchor_pairs(chosen, anchors)
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
        if not any(c in self._graph.neighbours[name] for c in chosen):
            return 0.0
        groups: dict[int, set[str]] = defaultdict(set)
        for table, number in components(chosen, self._graph.neighbours).items():
            groups[number].add(table)
        anchored = [g for g in groups.values() if g & anchors]
        for i, first in enumerate(anchored):
            for second in anchored[i + 1 :]:
                gap = min(self._graph.hops_to(a, second) for a in first)
                via = self._graph.hops_to(name, first) + self._graph.hops_to(name, second)
                if gap < len(self._graph.distance) and via == gap:
                    return JOIN_BONUS + BRIDGE_BONUS
        if any(self._graph.routes_through(name, a, b) for a, b in pairs):
            return JOIN_BONUS + BRIDGE_BONUS
        return JOIN_BONUS

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


def _key(item: SchemaItem) -> tuple[str, ...]:
    if item.kind == "table":
        return ("table", item.table)
    if item.kind == "column":
        return ("column", item.table, item.column or "")
    return ("value", item.table, item.column or "", item.value or "")


def _items(
    schema: Schema,
    inferred: Sequence[ForeignKey],
    values: Mapping[tuple[str, str], list[str]],
    notes: Mapping[str, str],
) -> list[SchemaItem]:
    references = {(k.table, k.column): k for k in [*schema.foreign_keys, *inferred]}
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
            references=_reference(references.get((t.name, c.name))),
            inferred=bool((key := references.get((t.name, c.name))) and key.inferred),
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


def _reference(key: ForeignKey | None) -> str | None:
    return f"{key.ref_table}.{key.ref_column}" if key else None


def _ranges(
    items: Sequence[SchemaItem], vectors: npt.NDArray[np.float32], dimension: int
) -> dict[str, _Range]:
    """The run of each kind of item in `items`, with the FAISS index of its vectors."""
    import faiss

    ranges: dict[str, _Range] = {}
    start = 0
    for kind in ("table", "column", "value"):
        stop = start
        while stop < len(items) and items[stop].kind == kind:
            stop += 1
        index = faiss.IndexFlatIP(dimension)
        if stop > start:
            index.add(vectors[start:stop])
        ranges[kind] = _Range(start, stop, index)
        start = stop
    if start != len(items):
        msg = "items must be ordered tables, then columns, then values"
        raise ValueError(msg)
    return ranges
