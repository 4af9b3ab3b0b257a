"""SQLite databases: found by a path or a SQLAlchemy-style URL, opened read-only, described.

    /data/shop.sqlite            a path
    sqlite:///data/shop.sqlite   a URL: three slashes and a path relative to the working folder
    sqlite:////data/shop.sqlite  four slashes: an absolute path

Every connection agentrt opens to a user's database is read-only at the SQLite level (the
`mode=ro` URI parameter): whatever gets past the SQL guard (`agentrt.sql.guard`), SQLite itself
refuses to write. The one exception is a guard whose policy explicitly allows writes
(`connect_readwrite`).

`read_schema` describes the tables, their columns (declared types, primary and foreign keys)
and the distinct textual values of each column, bounded per column: what grounding indexes.
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

__all__ = [
    "Column",
    "ForeignKey",
    "Schema",
    "Table",
    "connect_readonly",
    "connect_readwrite",
    "database_path",
    "quote_identifier",
    "read_schema",
    "read_values",
]

_URL = re.compile(r"^sqlite(\+\w+)?://", re.IGNORECASE)
# Text that is a date, a time or a number: such columns are filtered and ranged, not named in a
# question the way a city or a status is; their values would only crowd the index.
_NOT_A_NAME = re.compile(
    r"^\s*(?:[-+]?\d+(?:[.,]\d+)?%?|\d{4}-\d{2}(?:-\d{2})?(?:[ T][\d:.]+Z?)?|[\d:.]+)\s*$"
)


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
