"""The guarded SQL executor: a statement is checked before it runs, and runs fenced in.

    SqlGuard(database, GuardPolicy(...), constraints=[...])
        .check(sql)     → CheckedStatement, or QueryRefused saying why
        .execute(sql)   → QueryResult (at most `max_rows` rows, within `timeout` seconds)

Checks, in order (the first that fails refuses the statement, and its message says which):

1. sqlglot parses the text as SQLite SQL: exactly one statement (stacked statements are
   refused; comments are not statements);
2. the statement only reads: a SELECT (with CTEs, set operations and subqueries) and nothing
   inside it that writes, changes the schema, sets a PRAGMA or attaches a file; with the
   policy's `allow_writes`, an INSERT, UPDATE or DELETE may run too (never anything else);
3. every table it reads is on the allow-list (by default, every table and view of the
   database), in the `main` schema, named (not a table-valued function);
4. every column it reads of a table with a column allow-list is on it (`SELECT *` of such a
   table is refused: the columns must be named);
5. each custom constraint (a function of the checked statement) returns no reason to refuse.

What passes runs on a connection that cannot write (`agentrt.sql.database.connect_readonly`; with
`allow_writes`, one that can, in autocommit: each statement commits alone or not at all),
under a SQLite authorizer that enforces the same allow-lists inside SQLite (so a statement
sqlglot reads differently from SQLite still cannot read a forbidden column, write (unless
allowed, and then only rows of the allowed tables), attach or set a PRAGMA) and a progress
handler that stops it at the deadline. Rows are fetched lazily and at most `max_rows` of them:
SQLite stops computing once the limit is reached.

Errors (drawn in `agentrt.exceptions`; both are `ToolError`s, so the model reads them):
`QueryRefused` (the statement was not run: `reason` says why) and `QueryTimeout` (it ran past
the deadline and was stopped).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from agentrt.exceptions import QueryRefused, QueryTimeout, ToolError, UserError
from agentrt.sql.database import (
    Schema,
    connect_readonly,
    connect_readwrite,
    database_path,
    read_schema,
)

if TYPE_CHECKING:
    from sqlglot import exp

__all__ = [
    "CheckedStatement",
    "Constraint",
    "GuardPolicy",
    "QueryResult",
    "SqlGuard",
]

_WRITES = frozenset(
    [
        "insert",
        "update",
        "delete",
        "merge",
        "create",
        "drop",
        "alter",
        "truncatetable",
        "command",
        "pragma",
        "attach",
        "detach",
        "transaction",
        "commit",
        "rollback",
        "set",
        "use",
        "copy",
        "loaddata",
        "analyze",
        "refresh",
        "cache",
        "uncache",
        "altertable",
        "renamecolumn",
    ]
)
"""sqlglot node kinds (`Expression.key`) that write, change the schema or the session.
`command` is sqlglot's catch-all for statements it does not model (VACUUM, REINDEX, …)."""
_ROW_WRITES = frozenset({"insert", "update", "delete"})
"""Of those, the ones `allow_writes` lets run: they change rows, never the schema."""
_FORBIDDEN_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit"})
"""SQL functions that reach outside the database (the last three exist only in the CLI, but
a connection may have them registered)."""
_PROGRESS_STEPS = 1000
"""SQLite virtual-machine instructions between two looks at the clock."""


class GuardPolicy(BaseModel):
    """What statements may read and how much they may cost."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tables: list[str] | None = None
    """The tables and views a statement may read; None: all of the database's."""
    columns: dict[str, list[str]] = {}
    """Table → the only columns of it a statement may read; a table not named here keeps all."""
    max_rows: int = Field(200, ge=1)
    """Rows returned at most; a result that has more says it was cut."""
    timeout: float = Field(5.0, gt=0)
    """Seconds a statement may run before it is stopped."""
    allow_writes: bool = False
    """Let INSERT, UPDATE and DELETE change rows of the tables a statement may read (a table
    with a column allow-list: UPDATE of those columns only); the connection is then opened
    read-write. Schema changes, PRAGMA, ATTACH and transactions stay refused."""


@dataclass(frozen=True, slots=True)
class CheckedStatement:
    """A statement that passed the built-in checks, as custom constraints see it."""

    sql: str
    """The text as given (what runs)."""
    tree: exp.Expr
    """sqlglot's parse of it."""
    tables: frozenset[str]
    """The database tables it reads, as the schema names them (CTEs are not tables)."""


Constraint = Callable[[CheckedStatement], str | None]
"""A custom check: returns the reason to refuse the statement, or None to let it pass."""


class QueryResult(BaseModel):
    """Rows of one statement, bounded by the policy's `max_rows`."""

    sql: str
    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool
    """More rows were there than `max_rows`; only the first are kept."""
    seconds: float
    changed: int | None = None
    """Rows an INSERT, UPDATE or DELETE changed; None for a read."""

    def summary(
        self, rows: int = 20, cell_chars: int = 80, max_chars: int = 4000
    ) -> dict[str, Any]:
        """The result as a model reads it, bounded: the columns, how many rows, the first
        `rows` rows (each cell cut at `cell_chars`), within `max_chars` of JSON as a whole.
        Rows are dropped from the end until it fits; `shown` says how many remain."""
        import json

        def cell(value: Any) -> Any:
            if isinstance(value, bytes):
                return f"<{len(value)} bytes>"
            if isinstance(value, str) and len(value) > cell_chars:
                return value[: cell_chars - 1] + "…"
            return value

        shown = [[cell(v) for v in row] for row in self.rows[:rows]]
        out: dict[str, Any] = {
            "columns": self.columns,
            "rows": len(self.rows),
            "more_rows": self.truncated,
            "shown": len(shown),
            "head": shown,
        }
        while shown and len(json.dumps(out, default=str)) > max_chars:
            shown.pop()
            out["shown"] = len(shown)
        return out


class SqlGuard:
    """Checks and runs SQL against one SQLite database (a path or `sqlite:///` URL): reads
    only, unless the policy allows writes.

    :param policy: the allow-lists and the limits; defaults read anything, 200 rows, 5 s
    :param constraints: custom checks, run after the built-in ones, in order
    :raises UserError: no such database, or an allow-list naming a table or column it lacks
    """

    def __init__(
        self,
        database: str | Path,
        policy: GuardPolicy | None = None,
        constraints: Sequence[Constraint] = (),
    ) -> None:
        self.path = database_path(database)
        self.schema: Schema = read_schema(self.path)
        self.policy = policy or GuardPolicy()
        self.constraints = list(constraints)
        self._tables = self._allowed_tables()
        self._columns = self._allowed_columns()

    # --- checking ------------------------------------------------------------------------

    def check(self, sql: str) -> CheckedStatement:
        """The statement, checked; raises `QueryRefused` with the reason when it may not run."""
        tree = _parse_one(sql)
        _require_allowed_kind(tree, writes=self.policy.allow_writes)
        tables = self._check_tables(tree)
        self._check_columns(tree, tables)
        checked = CheckedStatement(sql=sql, tree=tree, tables=frozenset(tables.values()))
        for constraint in self.constraints:
            reason = constraint(checked)
            if reason:
                name = getattr(constraint, "__name__", type(constraint).__name__)
                msg = f"refused by the constraint {name}: {reason}"
                raise QueryRefused(msg)
        return checked

    def _check_tables(self, tree: exp.Expr) -> dict[str, str]:
        """Alias (or name), casefolded → the schema's name of each table the statement reads."""
        from sqlglot import exp

        ctes = {cte.alias_or_name.casefold() for cte in tree.find_all(exp.CTE)}
        found: dict[str, str] = {}
        for table in tree.find_all(exp.Table):
            if not isinstance(table.this, exp.Identifier):
                msg = (
                    f"{table.sql(dialect='sqlite')!r} is a table-valued function; only tables "
                    f"and views may be read: {self._table_list()}"
                )
                raise QueryRefused(msg)
            if table.catalog or (table.db and table.db.casefold() != "main"):
                msg = (
                    f"{table.sql(dialect='sqlite')!r} names another database schema; only the "
                    f"tables of this database may be read: {self._table_list()}"
                )
                raise QueryRefused(msg)
            folded = table.name.casefold()
            if folded in ctes and not table.db:
                continue
            real = self._tables.get(folded)
            if real is None:
                known = self.schema.table(table.name) is not None
                why = "is not on the allow-list" if known else "does not exist"
                msg = f"table {table.name!r} {why}: {self._table_list()}"
                raise QueryRefused(msg)
            found[table.alias_or_name.casefold()] = real
            found.setdefault(folded, real)
        return found

    def _check_columns(self, tree: exp.Expr, tables: Mapping[str, str]) -> None:
        from sqlglot import exp

        restricted = {t for t in set(tables.values()) if t in self._columns}
        if not restricted:
            return
        for select in tree.find_all(exp.Select):
            for item in select.expressions:
                star = isinstance(item, exp.Star) or (
                    isinstance(item, exp.Column) and isinstance(item.this, exp.Star)
                )
                if star:
                    names = ", ".join(sorted(restricted))
                    msg = (
                        f"SELECT * would read every column of {names}, of which only some may "
                        f"be read: name the columns ({self._column_list(restricted)})"
                    )
                    raise QueryRefused(msg)
        for column in tree.find_all(exp.Column):
            if isinstance(column.this, exp.Star):
                continue
            name = column.name.casefold()
            if column.table:
                owner = tables.get(column.table.casefold())
                candidates = [owner] if owner in restricted else []
            else:
                # Unqualified: any restricted table of the statement that has such a column
                # could be the one read (an output alias matches none and is let through).
                candidates = [
                    t
                    for t in restricted
                    if (schema_table := self.schema.table(t)) and schema_table.column(name)
                ]
            for table in candidates:
                assert table is not None
                if name not in self._columns[table]:
                    msg = (
                        f"column {table}.{column.name} may not be read "
                        f"({self._column_list([table])})"
                    )
                    raise QueryRefused(msg)

    # --- running -------------------------------------------------------------------------

    def execute(self, sql: str) -> QueryResult:
        """Check `sql` and run it (blocking; `aexecute` runs it in a worker thread).

        :raises QueryRefused: the statement may not run, or SQLite's authorizer refused it
        :raises QueryTimeout: it ran past `policy.timeout`
        :raises ToolError: SQLite reported an error (no such column, a syntax SQLite rejects)
        """
        writes = self.check(sql).tree.key in _ROW_WRITES
        limit, timeout = self.policy.max_rows, self.policy.timeout
        started = time.monotonic()
        deadline = started + timeout
        with self._fenced() as (connection, denied):
            connection.set_progress_handler(
                lambda: int(time.monotonic() > deadline), _PROGRESS_STEPS
            )
            try:
                cursor = connection.execute(sql)
                rows = cursor.fetchmany(limit + 1)
            except sqlite3.Error as exc:
                if denied:
                    msg = f"SQLite refused the statement: {'; '.join(denied)}"
                    raise QueryRefused(msg) from None
                if time.monotonic() > deadline and "interrupt" in str(exc):
                    msg = (
                        f"the statement ran longer than {timeout:g} s and was stopped; make it "
                        f"cheaper (filter first, aggregate, avoid cross joins)"
                    )
                    raise QueryTimeout(msg) from None
                msg = f"SQLite error: {exc}"
                raise ToolError(msg) from None
            columns = [d[0] for d in cursor.description or ()]
        return QueryResult(
            sql=sql,
            columns=columns,
            rows=[tuple(r) for r in rows[:limit]],
            truncated=len(rows) > limit,
            seconds=round(time.monotonic() - started, 4),
            changed=cursor.rowcount if writes else None,
        )

    async def aexecute(self, sql: str) -> QueryResult:
        """`execute` in a worker thread."""
        return await anyio.to_thread.run_sync(self.execute, sql)

    @contextmanager
    def _fenced(self) -> Iterator[tuple[sqlite3.Connection, list[str]]]:
        """A read-only connection under an authorizer enforcing the allow-lists; the list
        collects what the authorizer refused, in words."""
        denied: list[str] = []
        views = {t.name for t in self.schema.tables if t.view and t.name in self._tables.values()}

        def authorize(
            action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None
        ) -> int:
            if action == sqlite3.SQLITE_SELECT or action == sqlite3.SQLITE_RECURSIVE:
                return sqlite3.SQLITE_OK
            if action == sqlite3.SQLITE_FUNCTION:
                if (arg2 or "").casefold() in _FORBIDDEN_FUNCTIONS:
                    denied.append(f"function {arg2} is not allowed")
                    return sqlite3.SQLITE_DENY
                return sqlite3.SQLITE_OK
            if action == sqlite3.SQLITE_READ and arg1 is not None:
                if source in views:  # what an allowed view reads on its own is allowed
                    return sqlite3.SQLITE_OK
                real = self._tables.get(arg1.casefold())
                if real is None:
                    # A name that is no table of the schema is a CTE, whose own reads are
                    # authorized one by one; SQLite's internal tables are never readable.
                    stored = self.schema.table(arg1) is not None
                    if stored or arg1.casefold().startswith("sqlite_"):
                        denied.append(f"table {arg1} may not be read")
                        return sqlite3.SQLITE_DENY
                    return sqlite3.SQLITE_OK
                allowed = self._columns.get(real)
                if allowed is not None and arg2 and arg2.casefold() not in allowed:
                    denied.append(f"column {real}.{arg2} may not be read")
                    return sqlite3.SQLITE_DENY
                return sqlite3.SQLITE_OK
            if self.policy.allow_writes and action in _ROW_ACTIONS:
                return self._authorize_write(action, arg1, arg2, denied)
            denied.append(f"action {_ACTION_NAMES.get(action, action)} is not a read")
            return sqlite3.SQLITE_DENY

        connect = connect_readwrite if self.policy.allow_writes else connect_readonly
        with connect(self.path) as connection:
            connection.set_authorizer(authorize)
            yield connection, denied

    def _authorize_write(
        self, action: int, table: str | None, column: str | None, denied: list[str]
    ) -> int:
        """Rows of an allowed table may change; of one with a column allow-list, only those
        columns, by UPDATE (an INSERT or DELETE would write the others too)."""
        real = self._tables.get((table or "").casefold())
        if real is None:
            denied.append(f"table {table} may not be written")
            return sqlite3.SQLITE_DENY
        allowed = self._columns.get(real)
        if allowed is None:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_UPDATE and (column or "").casefold() in allowed:
            return sqlite3.SQLITE_OK
        what = f"column {real}.{column}" if action == sqlite3.SQLITE_UPDATE else f"rows of {real}"
        denied.append(f"{what} may not be written ({self._column_list([real])})")
        return sqlite3.SQLITE_DENY

    # --- the allow-lists -----------------------------------------------------------------

    def _allowed_tables(self) -> dict[str, str]:
        """Casefolded name → the schema's name, for every table a statement may read."""
        every = {t.name.casefold(): t.name for t in self.schema.tables}
        if self.policy.tables is None:
            return every
        allowed = {}
        for name in self.policy.tables:
            if name.casefold() not in every:
                msg = (
                    f"the allow-list names table {name!r}, which {self.path.name} does not "
                    f"have (it has: {', '.join(every.values())})"
                )
                raise UserError(msg)
            allowed[name.casefold()] = every[name.casefold()]
        return allowed

    def _allowed_columns(self) -> dict[str, set[str]]:
        """The schema's table name → casefolded columns, for tables with a column allow-list."""
        allowed: dict[str, set[str]] = {}
        for name, columns in self.policy.columns.items():
            table = self.schema.table(name)
            if table is None or table.name.casefold() not in self._tables:
                msg = (
                    f"the column allow-list names table {name!r}, which is not one the policy "
                    f"lets statements read ({', '.join(self._tables.values())})"
                )
                raise UserError(msg)
            for column in columns:
                if table.column(column) is None:
                    msg = (
                        f"the column allow-list names {table.name}.{column}, which does not "
                        f"exist (its columns: {', '.join(c.name for c in table.columns)})"
                    )
                    raise UserError(msg)
            allowed[table.name] = {c.casefold() for c in columns}
        return allowed

    def _table_list(self) -> str:
        return "the tables that may be read are " + ", ".join(sorted(self._tables.values()))

    def _column_list(self, tables: Sequence[str] | set[str]) -> str:
        return "; ".join(
            f"readable columns of {t}: {', '.join(sorted(self._columns[t]))}"
            for t in sorted(tables)
        )


def _parse_one(sql: str) -> exp.Expr:
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    if not sql.strip():
        msg = "the statement is empty"
        raise QueryRefused(msg)
    try:
        parsed = sqlglot.parse(sql, read="sqlite")
        # An empty statement (`;;`, or a comment alone) parses as None or a bare Semicolon.
        statements = [s for s in parsed if s is not None and not isinstance(s, exp.Semicolon)]
    except (ParseError, TokenError) as exc:
        msg = f"the statement cannot be parsed as SQLite SQL: {_first_line(exc)}"
        raise QueryRefused(msg) from None
    if not statements:
        msg = "the text holds no statement (only comments or semicolons)"
        raise QueryRefused(msg)
    if len(statements) > 1:
        kinds = ", ".join(s.key.upper() for s in statements)
        msg = f"{len(statements)} statements ({kinds}): send exactly one statement at a time"
        raise QueryRefused(msg)
    return statements[0]


def _require_allowed_kind(tree: exp.Expr, *, writes: bool) -> None:
    """A read; or, when `writes`, an INSERT, UPDATE or DELETE too. Nothing else, anywhere."""
    from sqlglot import exp

    allowed = _ROW_WRITES if writes else frozenset()
    if not isinstance(tree, exp.Query) and tree.key not in allowed:
        may = (
            "SELECT, INSERT, UPDATE and DELETE statements"
            if writes
            else "reading statements (SELECT)"
        )
        msg = f"only {may} may run; this is {_kind(tree)}"
        raise QueryRefused(msg)
    for node in tree.walk():
        if node.key in _WRITES and node.key not in allowed:
            may = "reads and row writes" if writes else "reading statements"
            msg = f"only {may} may run; this {tree.key.upper()} contains {_kind(node)}"
            raise QueryRefused(msg)
        if isinstance(node, exp.Func):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).casefold()
            if name in _FORBIDDEN_FUNCTIONS:
                msg = f"function {name} reaches outside the database and may not be called"
                raise QueryRefused(msg)


def _kind(node: exp.Expr) -> str:
    """A statement's kind as a person says it: `an INSERT`, `a PRAGMA`, `a VACUUM`."""
    from sqlglot import exp

    if isinstance(node, exp.Command):
        word = str(node.this).split()[0].upper() if node.this else "COMMAND"
    else:
        word = node.key.upper()
    article = "an" if word[:1] in "AEIOU" else "a"
    return f"{article} {word} statement"


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


_ROW_ACTIONS = frozenset({sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE})
"""Authorizer actions that change rows: what `allow_writes` lets through, table by table."""

_ACTION_NAMES = {
    getattr(sqlite3, f"SQLITE_{name}"): name.replace("_", " ")
    for name in [
        "INSERT",
        "UPDATE",
        "DELETE",
        "PRAGMA",
        "ATTACH",
        "DETACH",
        "TRANSACTION",
        "SAVEPOINT",
        "ANALYZE",
        "REINDEX",
        "ALTER_TABLE",
        "CREATE_TABLE",
        "CREATE_INDEX",
        "CREATE_VIEW",
        "CREATE_TRIGGER",
        "CREATE_TEMP_TABLE",
        "DROP_TABLE",
        "DROP_INDEX",
        "DROP_VIEW",
        "DROP_TRIGGER",
        "CREATE_VTABLE",
        "DROP_VTABLE",
    ]
}
"""Authorizer action codes that are not reads → their names, for refusals."""
