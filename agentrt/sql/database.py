"""SQLite databases: found by a path or a SQLAlchemy-style URL, opened read-only, described.

    /data/shop.sqlite            a path
    sqlite:///data/shop.sqlite   a URL: three slashes and a path relative to the working folder
    sqlite:////data/shop.sqlite  four slashes: an absolute path

Every connection agentrt opens to a user's database is read-only at the SQLite level (the
`mode=ro` URI parameter): whatever gets past the SQL guard (`agentrt.sql.guard`), SQLite itself
refuses to write. The one exception is a guard whose policy explicitly allows writes
(`connect_readwrite`).

`read_schema` describes the tables, their columns (declared types, primary and foreign keys)
and the distinct textual values of each column, bounded per column: what grounding embeds.
`all_values` streams the distinct values of every text column, numbers stored as text
included, within a budget per database: what grounding matches word for word.
`infer_joins` finds the joins a schema does not declare (`customer_id` ↔ `customers.id`, whose
values it holds).
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict

from agentrt.exceptions import UserError
from agentrt.logs import get_logger
from agentrt.sql._text import stems

__all__ = [
    "Column",
    "ForeignKey",
    "Schema",
    "Table",
    "all_values",
    "connect_readonly",
    "connect_readwrite",
    "database_path",
    "infer_joins",
    "quote_identifier",
    "read_schema",
    "read_values",
]

log = get_logger("agentrt.sql.database")

_URL = re.compile(r"^sqlite(\+\w+)?://", re.IGNORECASE)
# Text that is a date, a time or a number: such columns are filtered and ranged, not named in a
# question the way a city or a status is; their values would only crowd the index.
_NOT_A_NAME = re.compile(
    r"^\s*(?:[-+]?\d+(?:[.,]\d+)?%?|\d{4}-\d{2}(?:-\d{2})?(?:[ T][\d:.]+Z?)?|[\d:.]+)\s*$"
)
# A date or a time stored as text: filtered and ranged, never said word for word.
_DATE_OR_TIME = re.compile(r"^\d{4}-\d{2}(?:-\d{2})?(?:[ T][\d:.]+Z?)?$|^[\d]+:[\d:.]+$")
_SHORT_NUMBER = re.compile(r"^[-+]?\d{1,2}$")
"""A number of one or two digits stored as text: "top 10" in a question is not that value."""
_KEY_NAME = re.compile(r"^(?P<stem>.+?)_?(?:id|code|key)$", re.IGNORECASE)
"""A column named like a reference to another table: `customer_id`, `CustomerId`, `country_code`."""
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
INFERRED_OVERLAP = 0.9
"""The share of a column's distinct values another table's key must hold for a join to be
inferred between them."""


class Column(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    type: str
    """As declared (`INTEGER`, `TEXT`, `VARCHAR(20)`, or empty)."""
    primary_key: bool = False
    not_null: bool = False


class Table(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    columns: list[Column]
    view: bool = False

    def column(self, name: str) -> Column | None:
        """The column of that name, compared as SQLite does (case-insensitively)."""
        folded = name.casefold()
        return next((c for c in self.columns if c.name.casefold() == folded), None)


class ForeignKey(BaseModel):
    model_config = ConfigDict(frozen=True)

    table: str
    column: str
    ref_table: str
    ref_column: str
    inferred: bool = False
    """Not declared: found by `infer_joins` from the column's name and values."""


class Schema(BaseModel):
    """The tables of a database and the foreign keys between them."""

    model_config = ConfigDict(frozen=True)

    tables: list[Table]
    foreign_keys: list[ForeignKey]

    def table(self, name: str) -> Table | None:
        """The table or view of that name, compared case-insensitively as SQLite does."""
        folded = name.casefold()
        return next((t for t in self.tables if t.name.casefold() == folded), None)

    @property
    def fingerprint(self) -> str:
        """Changes when a table, a column, a type or a key changes; not when rows do."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]


def database_path(database: str | Path) -> Path:
    """The file a path or a `sqlite://` URL names.

    :raises UserError: a URL of another database, an in-memory database, or no such file
    """
    text = str(database).strip()
    if "://" in text:
        if not _URL.match(text):
            msg = f"{text!r} is not a SQLite URL: only sqlite:///path databases are supported"
            raise UserError(msg)
        parts = urlsplit(text)
        if parts.netloc:
            msg = f"{text!r}: a SQLite URL has no host; write sqlite:///relative or sqlite:////abs"
            raise UserError(msg)
        # urlsplit keeps the leading slash of "sqlite:///x": x is relative, "//x" absolute.
        path_text = unquote(parts.path)[1:]
        if not path_text or path_text == ":memory:":
            msg = f"{text!r} is an in-memory database: there is nothing in it to query"
            raise UserError(msg)
        path = Path(path_text)
    else:
        path = Path(text).expanduser()
    if not path.is_file():
        msg = f"no SQLite database at {path.resolve()} (from {text!r})"
        raise UserError(msg)
    return path.resolve()


@contextmanager
def connect_readonly(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection that cannot write, closed on leaving the block.

    `mode=ro` makes SQLite open the file read-only; `query_only` refuses writes to anything
    else the connection could reach (a temporary table, say) as well.
    """
    connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, check_same_thread=False)
    try:
        connection.execute("PRAGMA query_only = ON")
        yield connection
    finally:
        connection.close()


@contextmanager
def connect_readwrite(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection that can write an existing database (`mode=rw` never creates one), in
    autocommit: each statement is its own transaction, committed whole or not at all, and no
    implicit BEGIN reaches the guard's authorizer. Closed on leaving the block."""
    connection = sqlite3.connect(
        f"{path.as_uri()}?mode=rw", uri=True, check_same_thread=False, isolation_level=None
    )
    try:
        yield connection
    finally:
        connection.close()


def quote_identifier(name: str) -> str:
    """A table or column name as SQL writes it: in double quotes, inner quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


def read_schema(path: Path) -> Schema:
    """The tables and views of the database at `path`, and their foreign keys."""
    with connect_readonly(path) as connection:
        names = connection.execute(
            "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
        ).fetchall()
        tables: list[Table] = []
        keys: list[ForeignKey] = []
        for name, kind in names:
            info = connection.execute(f"PRAGMA table_info({quote_identifier(name)})").fetchall()
            columns = [
                Column(name=c[1], type=c[2] or "", not_null=bool(c[3]), primary_key=c[5] > 0)
                for c in info
            ]
            tables.append(Table(name=name, columns=columns, view=kind == "view"))
            for row in connection.execute(
                f"PRAGMA foreign_key_list({quote_identifier(name)})"
            ).fetchall():
                ref_table, column, ref_column = row[2], row[3], row[4]
                if ref_column is None:  # REFERENCES t without a column: t's primary key
                    ref_column = next(
                        (
                            c[1]
                            for c in connection.execute(
                                f"PRAGMA table_info({quote_identifier(ref_table)})"
                            )
                            if c[5] > 0
                        ),
                        column,
                    )
                keys.append(
                    ForeignKey(
                        table=name, column=column, ref_table=ref_table, ref_column=ref_column
                    )
                )
    return Schema(tables=tables, foreign_keys=keys)


def read_values(
    path: Path, schema: Schema, per_column: int, max_length: int = 80
) -> dict[tuple[str, str], list[str]]:
    """The distinct textual values of each column of each table, the most frequent first:
    at most `per_column` per column, each at most `max_length` characters once trimmed.

    Only text is taken (`typeof(value) = 'text'`), and a column whose values read as numbers,
    dates or times is left out.
    """
    values: dict[tuple[str, str], list[str]] = {}
    with connect_readonly(path) as connection:
        for table in schema.tables:
            if table.view:
                continue
            for column in table.columns:
                col = quote_identifier(column.name)
                rows = connection.execute(
                    f"SELECT trim({col}) AS v, count(*) AS n FROM {quote_identifier(table.name)} "
                    f"WHERE typeof({col}) = 'text' AND length(trim({col})) BETWEEN 1 AND ? "
                    f"GROUP BY v ORDER BY n DESC, v LIMIT ?",
                    (max_length, per_column),
                ).fetchall()
                texts = [str(v) for v, _ in rows]
                named = [t for t in texts if not _NOT_A_NAME.match(t)]
                # A column mostly of numbers or dates stored as text is not a column of names.
                if named and len(named) * 2 >= len(texts):
                    values[(table.name, column.name)] = named
    return values


def all_values(
    path: Path, schema: Schema, budget: int, max_length: int = 80
) -> Iterator[tuple[str, str, str]]:
    """`(table, column, value)` for the distinct text values of every column of every table
    (trimmed, at most `max_length` characters), numbers stored as text included (postal codes,
    years), dates, times and one- or two-digit numbers left out; at most `budget` in all.

    Past the budget, each column keeps its fair share, its most frequent values first: a
    column with fewer distinct values than an equal share keeps them all, and what it leaves
    is shared among the others.
    """
    with connect_readonly(path) as connection:
        counts: dict[tuple[str, str], int] = {}
        for table in schema.tables:
            if table.view:
                continue
            for column in table.columns:
                sql = _distinct_text(table.name, column.name, "count(DISTINCT trim({c}))", "")
                counts[(table.name, column.name)] = connection.execute(
                    sql, (max_length,)
                ).fetchone()[0]
        shares = _fair_shares(counts, budget)
        if sum(counts.values()) > budget:
            log.warning(
                "value budget reached: the least frequent values of the largest columns are "
                "not matched word for word",
                database=str(path),
                values=sum(counts.values()),
                budget=budget,
            )
        for (table_name, column_name), share in shares.items():
            sql = _distinct_text(
                table_name,
                column_name,
                "trim({c}) AS v",
                "GROUP BY v ORDER BY count(*) DESC, v LIMIT ?",
            )
            for (value,) in connection.execute(sql, (max_length, share)):
                text = str(value)
                if not (_DATE_OR_TIME.match(text) or _SHORT_NUMBER.match(text)):
                    yield table_name, column_name, text


def _distinct_text(table: str, column: str, select: str, rest: str) -> str:
    col = quote_identifier(column)
    return (
        f"SELECT {select.format(c=col)} FROM {quote_identifier(table)} "
        f"WHERE typeof({col}) = 'text' AND length(trim({col})) BETWEEN 1 AND ? {rest}"
    )


def _fair_shares(counts: dict[tuple[str, str], int], budget: int) -> dict[tuple[str, str], int]:
    """How many values each column keeps: all of them, or an equal share of what the smaller
    columns leave (water-filling)."""
    shares: dict[tuple[str, str], int] = {}
    left = [k for k, n in sorted(counts.items(), key=lambda kv: kv[1]) if n]
    remaining = budget
    while left:
        share = remaining // len(left)
        key = left[0]
        if counts[key] > share:
            return shares | dict.fromkeys(left, share)
        shares[key] = counts[key]
        remaining -= counts[key]
        left.pop(0)
    return shares


def infer_joins(path: Path, schema: Schema) -> list[ForeignKey]:
    """The joins the schema does not declare: a column named like another table's key
    (`customer_id` or `customerId` ↔ `customers.id` or `customers.customer_id`; a column named
    as another table's single-column primary key), at least `INFERRED_OVERLAP` of whose
    distinct values that key holds. Marked `inferred`."""
    declared = {(k.table, k.column) for k in schema.foreign_keys}
    keys = {
        t.name: pk[0].name
        for t in schema.tables
        if not t.view and len(pk := [c for c in t.columns if c.primary_key]) == 1
    }
    found: list[ForeignKey] = []
    with connect_readonly(path) as connection:
        for table in schema.tables:
            if table.view:
                continue
            for column in table.columns:
                if (table.name, column.name) in declared or keys.get(table.name) == column.name:
                    continue
                for ref_table in _referenced(column.name, table.name, keys):
                    if _overlap(connection, table.name, column.name, ref_table, keys[ref_table]):
                        found.append(
                            ForeignKey(
                                table=table.name,
                                column=column.name,
                                ref_table=ref_table,
                                ref_column=keys[ref_table],
                                inferred=True,
                            )
                        )
                        break
    return found


def _referenced(column: str, table: str, keys: dict[str, str]) -> list[str]:
    """The other tables whose key `column` is named after: the same name as their key (not a
    bare `id`), or their name, in any form of its words, followed by id, code or key."""
    folded = column.casefold()
    match = _KEY_NAME.match(column)
    named = _name_stems(match["stem"]) if match else None
    return [
        other
        for other, key in keys.items()
        if other != table
        and ((folded == key.casefold() and folded != "id") or named == _name_stems(other))
    ]


def _name_stems(name: str) -> str:
    return " ".join(stems(_CAMEL.sub(" ", name).replace("_", " ")))


def _overlap(
    connection: sqlite3.Connection, table: str, column: str, ref_table: str, ref_column: str
) -> bool:
    col, ref = quote_identifier(column), quote_identifier(ref_column)
    distinct, held = connection.execute(
        f"SELECT count(DISTINCT {col}), count(DISTINCT CASE WHEN {col} IN "
        f"(SELECT {ref} FROM {quote_identifier(ref_table)}) THEN {col} END) "
        f"FROM {quote_identifier(table)} WHERE {col} IS NOT NULL"
    ).fetchone()
    return bool(distinct) and held >= INFERRED_OVERLAP * distinct
