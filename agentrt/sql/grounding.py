"""Schema grounding: the few tables, columns and values of a database that a question needs.

Offline, `SchemaIndex.build` indexes a SQLite database: every table and every column, each
with an embedding of its name (and of a description, when one is given) and its metadata (item
kind, column type, primary key, the foreign key it is: declared, or inferred from the column's
name and values, `agentrt.sql.database.infer_joins`); the most frequent distinct textual values
of each column, embedded too; and every distinct text value, numbers stored as text included,
within a budget per database, in a SQLite file searched word for word and with FTS5
(`agentrt.sql.values`). It is built once and cached on disk:

    <cache>/grounding/<embedder>/<schema>/items.json     the items (their documents, metadata)
    <cache>/grounding/<embedder>/<schema>/vectors.npz    their vectors (`agentrt.vectors.cache`)
    <cache>/grounding/<embedder>/<schema>/values.sqlite  every value (`agentrt.sql.values`)

keyed by a hash of the schema and the descriptions, so a database seen before is grounded
without embedding anything or reading its rows again. `rebuild=True` reads the values again
(after the data changed) and embeds only the ones not seen before.

At query time, `SchemaIndex.ground` embeds the question (and earlier turns of the dialogue, at a
discount), retrieves candidates of each kind from FAISS (inner product of normalised vectors),
matches values word for word (every run of the question's words, as Porter stems, possessives
stripped: "Isaac Newman's" finds 'Isaac Newman') and by FTS5 (values holding some of its words,
scored by the share they say), applies the database's synonyms (`Synonyms`: "united states" is
country.Code = 'USA'), and re-ranks with the structure:

- the tables the dialogue names (a table, even by a stem its name extends: "shipped" names
  `shipments`; a column by words no other table's names have; a value found word for word; a
  synonym) are its anchors; words many tables' names have
  ("name", "date") weigh little and anchor none; a value several tables hold anchors only those
  nearest the others; a value inside a longer one said ('Orange' in "Orange Free State") is
  not said, a number of up to four digits anchors nothing (a year, as often as not), and a
  code of one or two letters is said as it is written ("US", not "us");
- a row a value names gives its code to the columns holding it: "Switzerland" is
  `countries.country_name`, and 'CH', its text primary key, is the value to compare
  `locations.country_id` with;
- a value found lifts its column, and a column lifts its table;
- tables are chosen greedily, each next one with a bonus when a foreign key joins it to those
  already chosen, and a larger one when it lies on a shortest join path between two chosen
  anchors (a bridge), so that the choice tends to be a joinable whole; when two anchors are
  joined by several equally short routes, every route that fits comes in, and the SQL writer
  chooses ("fines per branch": a member's branch, or the branch of the copy lent);
- columns are chosen within the budget in this order: the keys joining the anchors and
  bridges (cheap, and required), the best column of each anchor and of each bridge that
  every shortest route crosses, then the others by score (those of anchors and bridges
  slightly ahead), where a column of a table not joined yet brings the keys of its join path
  with it; when the first three tables join among themselves, they go through these steps
  before the fourth and fifth, so grounding more tables never costs a column of the first
  ones; a column of a composite primary key (film_actor.actor_id) is data as well as a key; a
  first name brings the last name of the same table with it; an anchor's label (its first
  name or title column) is needed too, since "which customer" shows the customer's name;
- values are taken from the chosen tables, literal matches first.

The result holds at most `tables` tables, `columns` columns and `values` values;
`Grounding.render()` is the grounded schema a prompt gets instead of the whole one, an inferred
join marked as such.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentrt._validation import load_yaml, load_yaml_model
from agentrt.exceptions import UserError
from agentrt.logs import get_logger
from agentrt.sql._text import stem, stems, words_of
from agentrt.sql.database import (
    ForeignKey,
    Schema,
    all_values,
    connect_readonly,
    database_path,
    infer_joins,
    quote_identifier,
    read_schema,
    read_values,
)
from agentrt.sql.values import ValueHit, ValueIndex
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
    "Synonyms",
    "load_synonyms",
    "normalize_value",
]

log = get_logger("agentrt.sql.grounding")

ItemKind = Literal["table", "column", "value"]

_FORMAT = 2
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
stop words ("customers", "unit price"; "borrowed" names `borrowed_on`); a column's times the
weight of its words: log(1 + N/df) / log(1 + N) when df of the schema's N tables have a name
holding them all, 1 for words one table's names have ("postal code" of customers), falling
towards 0 for "name", "id" or "date", which every table has. Only a column whose words no
other table's names have makes its table an anchor."""
SUFFIX = 4
"""How many letters a table name's word may add to a stem the question says and still be
named by it: Porter keeps "shipment" and "rental" apart from "ship" and "rent"."""
CODE_SCORE = 0.9
"""The code of a row a value names ('CH' for "Switzerland"), in the columns that hold it."""
PARTIAL_SCORE = 0.6
"""A value that FTS5 finds holding some of the question's words, times the share of its words
the question says ("Kabul" and 'Kabul Province': 0.3)."""
PARTIAL_CANDIDATES = 20
"""How many values FTS5 returns per text, best (BM25) first."""
VALUE_BUDGET = 300_000
"""The distinct values indexed per database for matching word for word (see
`agentrt.sql.database.all_values` for what happens past it): about 20 MB on disk."""
CORE_BONUS = 0.1
"""Added to the worth of a column of an anchor or a bridge when the budget is filled by worth:
the tables the question is about come first, not so far first that their incidental columns
(a customer's fax) pass another table's wanted one."""
FIRST_TABLES = 3
"""The tables whose columns come first when more are grounded: a fourth or fifth table's
columns only take what the first three leave of the budget, so grounding more tables never
loses a column grounding three would have given."""
COLUMN_TO_TABLE = 0.9
"""The share of its best column's score a table gets, at least."""
JOIN_BONUS = 0.08
"""Added to a candidate table that a foreign key joins to the tables already chosen."""
BRIDGE_BONUS = 0.3
"""Added to a candidate table on a shortest join path between two chosen anchors that the
chosen tables do not connect yet: the table in the middle of a many-to-many question
("members who borrowed a title": loans, and copies)."""
TABLE_IN_COLUMN = 0.15
"""The share of a table's score that its columns inherit when columns are ranked."""
CANDIDATES = {"table": 64, "column": 256, "value": 128}
"""How many items of each kind FAISS retrieves per text before re-ranking."""

_WORD = re.compile(r"\w+(?:['’.-]\w+)*")
_YEAR_OR_SMALL = re.compile(r"^\d{1,4}$")
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
_STOP_STEMS = frozenset(stem(w) for w in _STOPWORDS)


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
    inferred: bool = False
    """`references` is not declared but inferred (`agentrt.sql.database.infer_joins`)."""
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
    inferred: bool = False
    """`references` is not declared in the schema but inferred from the column's name and
    values: the SQL writer should know that the join may not hold for every row."""
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
                    if c.inferred:
                        part += " (inferred, not declared)"
                parts.append(part)
            lines.append(f"{table.name}({', '.join(parts)})")
        if self.values:
            lines.append("Values in the data that match the question:")
            lines += [f"{v.table}.{v.column} = {_sql_string(v.value)}" for v in self.values]
        return "\n".join(lines)


class Synonyms(BaseModel):
    """What a database's users call things, for grounding: a phrase of questions → what it
    means here, one target or a list of them, each a value (`table.column=value`, as stored),
    a column (`table.column`) or a table. Phrases are compared by their words' stems.

        united states: country.Code=USA
        official: countrylanguage.IsOfficial=T
        head count: [employees, employees.id]
    """

    model_config = ConfigDict(frozen=True)

    phrases: dict[str, list[str]]

    @field_validator("phrases", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        """A single target needs no list."""
        if isinstance(value, dict):
            return {k: [v] if isinstance(v, str) else v for k, v in value.items()}
        return value


def load_synonyms(path: Path) -> Synonyms:
    """The synonyms file at `path` (YAML: phrase → target or list of targets, see `Synonyms`).

    :raises WorkspaceError: the file cannot be read or is not such a mapping
    """
    return load_yaml_model(path, Synonyms, data={"phrases": load_yaml(path) or {}})


@dataclass(frozen=True, slots=True)
class _Synonym:
    """A phrase (its stems) and what it grounds: items (tables, columns), values."""

    words: tuple[str, ...]
    items: tuple[int, ...]
    values: tuple[ValueHit, ...]


class _Picking:
    """The columns chosen so far, within a budget: which are join columns, which tables they
    ground."""

    def __init__(self, budget: int, items: Sequence[SchemaItem]) -> None:
        self.budget = budget
        self.items = items
        self.picked: dict[int, None] = {}
        self.joins: set[int] = set()
        self.grounded: set[str] = set()

    def take(self, path: list[int], column: int | None = None, partner: int | None = None) -> None:
        """The join columns `path` and the `column` they reach, all of them or, when they do
        not fit the budget, none; then the column's `partner`, when it fits."""
        new = [c for c in dict.fromkeys([*path, column]) if c is not None and c not in self.picked]
        if partner is not None and len(self.picked) + len(new) < self.budget:
            new.append(partner)
        if len(self.picked) + len(new) <= self.budget:
            self.picked.update(dict.fromkeys(new))
            self.joins.update(path)
            self.grounded.update(self.items[c].table for c in new)


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
        self.joins = [*schema.foreign_keys, *_inferred_joins(items)]
        """The foreign keys, declared and inferred (`ForeignKey.inferred`)."""
        self._composite = {
            (t.name, c.name)
            for t in schema.tables
            if sum(c.primary_key for c in t.columns) > 1
            for c in t.columns
            if c.primary_key
        }
        """The columns of composite primary keys: data as much as keys (film_actor.actor_id)."""
        self._names = self._name_index()
        self._partner = self._partners()
        self._label = self._labels()
        """Table → the column that names its rows (a name, a title), when it has one."""
        self._vocabulary = self._table_words()
        self._codes = {
            t.name: keys[0].name
            for t in schema.tables
            if len(keys := [c for c in t.columns if c.primary_key]) == 1
            and "INT" not in keys[0].type.upper()
            and any(j.ref_table == t.name for j in self.joins)
        }
        """Table → its text primary key, when other tables reference it: a code ('CH')."""
        """A person's first name column ↔ the last name column of the same table."""
        self._synonyms = [
            self._synonym(p, t) for p, t in (synonyms or Synonyms(phrases={})).phrases.items()
        ]
        self._neighbours: dict[str, set[str]] = defaultdict(set)
        for key in self.joins:
            self._neighbours[key.table].add(key.ref_table)
            self._neighbours[key.ref_table].add(key.table)
        self._distance: dict[str, dict[str, int]] = {}
        """Table → table → the fewest foreign keys a join between them crosses."""
        self._routes: dict[str, dict[str, int]] = {}
        """Table → table → how many join paths between them are that short."""
        for table in schema.tables:
            self._distance[table.name], self._routes[table.name] = self._hops(table.name)

    def _name_index(self) -> list[tuple[int, frozenset[str], float]]:
        """Tables and columns by the stems of the words of their names (`id` and stop words left
        out), with the weight of those words (see `NAMED_SCORE`); keys are left out, as
        `store_id` names another table, not what its own table holds."""
        named: list[tuple[int, frozenset[str]]] = []
        for i in range(self._ranges["value"].start):
            item = self.items[i]
            if item.kind == "column" and (item.references or not self._holds_data(item)):
                continue
            words_ = stems(words(item.column or item.table))
            found = frozenset(w for w in words_ if w != "id" and w not in _STOP_STEMS)
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

    def _labels(self) -> dict[str, int]:
        """Each table's first data column with "name" or "title" in its name: what a question
        asking which rows wants shown ("which customer": a customer's name)."""
        labels: dict[str, int] = {}
        for i in range(self._ranges["column"].start, self._ranges["column"].stop):
            item = self.items[i]
            said = set(words(item.column or "").split())
            if item.table not in labels and self._holds_data(item) and said & {"name", "title"}:
                labels[item.table] = i
        return labels

    def _partners(self) -> dict[int, int]:
        """Columns whose names differ only by first ↔ last (`first_name`, `FirstName`,
        `cust_first_name`): a person is named by both, and a query selects them together."""
        by_words = {
            (item.table, words(item.column or "")): i
            for i in range(self._ranges["column"].start, self._ranges["column"].stop)
            if (item := self.items[i])
        }
        found: dict[int, int] = {}
        for (table, name), i in by_words.items():
            split = name.split()
            if "first" in split:
                last = " ".join("last" if w == "first" else w for w in split)
                partner = by_words.get((table, last))
                if partner is not None:
                    found[i], found[partner] = partner, i
        return found

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

    def _holds_data(self, item: SchemaItem) -> bool:
        """Whether a column holds data of its own, not only a key (an id, a reference): a
        column of a composite primary key does (the language of a country's languages)."""
        if (item.table, item.column) in self._composite:
            return True
        return not (item.primary_key or item.references)

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
        picked_columns, join_set = self._shared_columns(
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
        value_score = {_hit(self.items[i]): s for i, s in similar.items() if i >= first_value}
        literal: set[ValueHit] = set()
        anchors: set[str] = set()  # the tables the dialogue names, or names a value of
        for text, weight in zip(texts, weights, strict=True):
            said = stems(text)
            for hit, found in self._value_matches(text, said).items():
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
                if _contains(said, synonym.words):
                    for i in synonym.items:
                        anchors.add(self.items[i].table)
                        score[i] = max(score.get(i, 0.0), NAMED_SCORE * weight)
                    for hit in synonym.values:
                        literal.add(hit)
                        value_score[hit] = max(value_score.get(hit, 0.0), LITERAL_SCORE * weight)
        anchors |= self._value_anchors(literal, anchors)
        for hit in self._coded_values(literal):
            literal.add(hit)
            value_score[hit] = max(value_score.get(hit, 0.0), CODE_SCORE)
        return score, value_score, literal, anchors

    def _coded_values(self, literal: Collection[ValueHit]) -> set[ValueHit]:
        """The codes of the rows the literal values name, where other tables hold the code
        ("Switzerland" is `countries.country_name`; its `country_id` 'CH' is what
        `locations.country_id` compares with): the row's text primary key, and the same value
        in every column that references it."""
        wanted = [(t, c, v) for t, c, v in literal if t in self._codes and c != self._codes[t]]
        if not wanted:
            return set()
        found: set[ValueHit] = set()
        with connect_readonly(self.path) as connection:
            for table, column, value in wanted:
                key = self._codes[table]
                rows = connection.execute(
                    f"SELECT DISTINCT {quote_identifier(key)} FROM {quote_identifier(table)} "
                    f"WHERE trim({quote_identifier(column)}) = ? LIMIT 3",
                    (value,),
                ).fetchall()
                for (code,) in rows:
                    if isinstance(code, str):
                        found.add((table, key, code))
                        found.update(
                            (j.table, j.column, code)
                            for j in self.joins
                            if (j.ref_table, j.ref_column) == (table, key)
                        )
        return found

    def _name_words(self, said: Sequence[str]) -> set[str]:
        """The stems said, and the words of table names that extend one of at least four
        letters by a suffix Porter's rules keep ("shipped" → ship → `shipments`, "rent" →
        `rental`); not of column names, where "member" would name `membership`."""
        present = set(said)
        for word in said:
            if len(word) >= 4:
                present.update(self._vocabulary.get(word, ()))
        return present

    def _value_matches(self, text: str, said: Sequence[str]) -> dict[ValueHit, float]:
        """The values the text holds: each run of its words that is a value's words (stemmed),
        `LITERAL_SCORE`; values FTS5 finds holding some of its words, `PARTIAL_SCORE` times
        the share of their words it says."""
        raw = set(words_of(text))
        runs: dict[str, list[range]] = defaultdict(list)
        for size in range(1, self.values.longest + 1):
            for start in range(len(said) - size + 1):
                runs[" ".join(said[start : start + size])].append(range(start, start + size))
        keys = [k for k in runs if len(k) > 1 and k not in _STOP_STEMS]
        hits = self.values.literal(keys)
        spans = [runs[key] for _, key in hits]
        found: dict[ValueHit, float] = {}
        for hit, key in hits:
            # Within a longer value said ("EAGLES ORANGE"), a shorter one ('Orange', a city)
            # was not said: it only holds some of the words.
            inside = all(
                any(len(o) > len(r) and r.start in o and r[-1] in o for s in spans for o in s)
                for r in runs[key]
            )
            found[hit] = (
                PARTIAL_SCORE if inside or not _said_as(hit[2], key, raw) else LITERAL_SCORE
            )
        # A code of one or two letters is said as it is written: "US", not "us"; "id" is not
        # Indonesia's 'ID'.
        for hit in [h for h in found if len(h[2]) <= 2 and not h[2].isdigit()]:
            if not re.search(rf"(?<!\w){re.escape(hit[2])}(?!\w)", text):
                del found[hit]
        present = set(said)
        content = [
            w
            for w, s in zip(words_of(text), said, strict=True)
            if s not in _STOP_STEMS and len(s) > 2
        ]
        for hit, key in self.values.search(content, PARTIAL_CANDIDATES):
            if hit not in found:
                words_ = key.split()
                share = sum(w in present for w in words_) / max(1, len(words_))
                found[hit] = PARTIAL_SCORE * share
        return found

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

    def _shared_columns(
        self,
        chosen: Mapping[str, float],
        anchors: set[str],
        bridges: set[str],
        table_score: Mapping[str, float],
        score: Mapping[int, float],
        budget: int,
    ) -> tuple[list[int], set[int]]:
        """At most `budget` columns of the chosen tables, join columns first, and which of them
        are join columns. The first `FIRST_TABLES` chosen tables come first at each step, the
        others after them: their needed columns (`_needed_columns`), then the needed columns
        of all, then the other columns of the first tables' core (anchors and bridges), of
        the first tables, of the core of all, of all, by score (their own plus a share of
        their table's). A column of a table not joined yet comes with the keys of the shortest
        join path to it, or not at all, so the keys of a table only similar to the question
        never crowd out the columns of the tables the question is about ("stock clerks in
        Turin": not a customer's city). Last, the other keys between grounded tables (a
        second route between them)."""
        first = dict(list(chosen.items())[:FIRST_TABLES])
        groups = [chosen]
        if len(chosen) > len(first) and self._joined(first, _core(first, anchors, bridges)):
            groups = [first, chosen]
        picking = _Picking(budget, self.items)
        cores = [
            self._needed_columns(
                group, anchors, bridges & group.keys(), table_score, score, picking
            )
            for group in groups
        ]
        worth = self._column_worth(chosen, table_score, score)
        for core, group in zip(cores, groups, strict=True):
            ranked = sorted(
                (i for i in worth if self.items[i].table in group),
                key=lambda i: -worth[i] - CORE_BONUS * (self.items[i].table in core),
            )
            for i in ranked:
                if len(picking.picked) == picking.budget:
                    break
                path = self._join_path(self.items[i].table, picking.grounded, group)
                picking.take(path, i, self._partner.get(i))
        for path in self._keys_between(picking.grounded):
            picking.take(path)
        return sorted(picking.picked, key=lambda i: i not in picking.joins), picking.joins

    def _needed_columns(
        self,
        chosen: Mapping[str, float],
        anchors: set[str],
        bridges: set[str],
        table_score: Mapping[str, float],
        score: Mapping[int, float],
        picking: _Picking,
    ) -> list[str]:
        """The columns a query on the chosen tables needs, into `picking`, each only when it
        fits whole; the core tables. In this order:

        1. the core: the chosen anchors and bridges, or the best table when there is no anchor.
           The keys of shortest join paths (through chosen tables) that connect the core, and
           every key between two core tables: cheap, and required to write the query;
        2. the best data column (not a key) of each anchor and of each bridge that every
           shortest route between two anchors crosses, when it has none yet: the question
           names an anchor for something, and the bridge of a many-to-many question usually
           holds what is counted or summed (the quantity of a sale); a bridge on one of
           several equally short routes may be the route the query does not take.
        """
        take, grounded = picking.take, picking.grounded
        core = _core(chosen, anchors, bridges)
        for table in core:
            take(self._join_path(table, grounded, chosen))
            grounded.add(table)
        for path in self._keys_between(core):
            take(path)
        worth = self._column_worth(chosen, table_score, score)
        for table in self._counted_tables(core, chosen, anchors, bridges):
            own = [
                i for i in worth if self.items[i].table == table and self._holds_data(self.items[i])
            ]
            if own and not picking.picked.keys() & own:
                best = max(own, key=worth.__getitem__)
                take(self._join_path(table, grounded, chosen), best, self._partner.get(best))
        for table in [t for t in core if t in anchors]:
            label = self._label.get(table)
            if label is not None and label not in picking.picked:
                take(self._join_path(table, grounded, chosen), label, self._partner.get(label))
        return core

    def _joined(self, tables: Collection[str], core: Collection[str]) -> bool:
        """Whether the `core` tables join through `tables` alone: when they do not, the tables
        chosen after them are needed to join them (the bridge of a many-to-many question), and
        do not wait for the others' columns."""
        component = _components(tables, self._neighbours)
        return len({component[t] for t in core}) <= 1

    def _keys_between(self, tables: Collection[str]) -> list[list[int]]:
        """The columns of each foreign key between two of `tables`."""
        return [
            self._key_columns(key)
            for key in self.joins
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
            for key in self.joins:
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


def _core(chosen: Mapping[str, float], anchors: set[str], bridges: set[str]) -> list[str]:
    """The chosen anchors and bridges, or the best chosen table when there is none."""
    return [t for t in chosen if t in anchors | bridges] or list(chosen)[:1]


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


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _reference(key: ForeignKey | None) -> str | None:
    return f"{key.ref_table}.{key.ref_column}" if key else None


def _inferred_joins(items: Iterable[SchemaItem]) -> list[ForeignKey]:
    """The inferred joins the column items carry."""
    found = []
    for item in items:
        if item.inferred and item.references and item.column:
            ref_table, _, ref_column = item.references.partition(".")
            found.append(
                ForeignKey(
                    table=item.table,
                    column=item.column,
                    ref_table=ref_table,
                    ref_column=ref_column,
                    inferred=True,
                )
            )
    return found


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


def _hit(item: SchemaItem) -> ValueHit:
    return (item.table, item.column or "", item.value or "")


def _said_as(value: str, key: str, raw: Collection[str]) -> bool:
    """Whether a value of one word is said as it is, or in the plural: the stem of
    'Purchasing' and 'orderable' is that of "purchase" and "orders", but neither is said."""
    if " " in key:
        return True
    word = normalize_value(value)
    plurals = {word, word + "s", word + "es", word[:-1] + "ies"}
    return bool(plurals & set(raw))


def _contains(said: Sequence[str], phrase: Sequence[str]) -> bool:
    """Whether the words `phrase` occur in `said`, in order and together."""
    size = len(phrase)
    return bool(size) and any(
        tuple(said[i : i + size]) == tuple(phrase) for i in range(len(said) - size + 1)
    )
