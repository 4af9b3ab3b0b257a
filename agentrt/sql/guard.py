"""The guarded SQL executor: a statement is checked before it runs, and runs fenced in.

    SqlGuard(database, GuardPolicy(...), constraints=[...])
        .check(sql)     → CheckedStatement, or QueryRefused saying why
        .execute(sql)   → QueryResult (at most `max_rows` rows, within `timeout` seconds)

Checks, in order (the first that fails refuses the statement, and its message says which):

0. the text is at most `max_sql_chars` long and nested at most `max_depth` deep, measured on
   its tokens before it is parsed (parsing is slower than linear, runs outside the timeout, and
   recurses once per level);
1. sqlglot parses the text as SQLite SQL: exactly one statement (stacked statements are
   refused; comments are not statements);
2. the statement only reads: a SELECT (with CTEs, set operations and subqueries) and nothing
   inside it that writes, changes the schema, sets a PRAGMA or attaches a file; with the
   policy's `allow_writes`, an INSERT, UPDATE or DELETE may run too (never anything else);
3. every table it reads is on the allow-list (by default, every table and view of the
   database), in the `main` schema, named (not a table-valued function);
4. every column it reads of a table with a column allow-list is on it, including the columns
   it compares implicitly: `SELECT *` (and `t.*`, `RETURNING *`) and `NATURAL JOIN` are refused
   when such a table is read (the columns must be named), and `JOIN … USING (col)` counts as a
   read of `col` (SQLite's authorizer never sees these comparisons);
5. every function it calls (that sqlglot does not know by name) is on the allow-list of
   SQLite functions (`SAFE_FUNCTIONS` and the policy's `functions`);
6. each custom constraint (a function of the checked statement) returns no reason to refuse.

What passes runs on a connection that cannot write (`agentrt.sql.database.connect_readonly`; with
`allow_writes`, one that can, in autocommit: each statement commits alone or not at all),
under a SQLite authorizer that enforces the same allow-lists inside SQLite (so a statement
sqlglot reads differently from SQLite still cannot read a forbidden column, write (unless
allowed, and then only rows of the allowed tables), attach, set a PRAGMA or call a function off
the allow-list). The deadline binds twice: a progress handler between SQLite steps, and a
watchdog thread that interrupts the connection from outside (one step can be long). SQLite
may build no string or blob longer than `max_built_bytes` (`SQLITE_LIMIT_LENGTH`, which bounds
the memory one value takes). Rows are fetched lazily, at most `max_rows` of them and while their
values add up to at most `max_result_bytes`, each text or blob cut at `max_value_bytes`:
SQLite stops computing once a limit is reached, and the result's `note` says what was cut.

Errors (drawn in `agentrt.exceptions`; both are `ToolError`s, so the model reads them):
`QueryRefused` (the statement was not run: `reason` says why) and `QueryTimeout` (it ran past
the deadline and was stopped). SQLite's own errors are `ToolError`s too; "no such column"
comes with the columns of the tables read and, when other tables have that column, the joins
to them (the `joins` given, by default the declared foreign keys); `join_missing` runs the
statement with such a join added where that is safe.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from agentrt.exceptions import QueryRefused, QueryTimeout, ToolError, UserError
from agentrt.sql._fence import (
    NEVER_FUNCTIONS,
    SAFE_FUNCTIONS,
    Watchdog,
    check_format,
    check_nesting,
    check_size,
    fetch_bounded,
    instr,
)
from agentrt.sql.database import (
    ForeignKey,
    Schema,
    connect_readonly,
    connect_readwrite,
    database_path,
    read_schema,
)
from agentrt.sql.joins import join_clauses, join_route, join_steps, sql_name, walk

if TYPE_CHECKING:
    from sqlglot import Token, exp

__all__ = [
    "SAFE_FUNCTIONS",
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
    max_value_bytes: int = Field(65_536, ge=1)
    """A text or blob value of the result longer than this (in UTF-8 bytes) is cut to it."""
    max_result_bytes: int = Field(1_048_576, ge=1)
    """Rows are kept while their values add up to at most this many bytes; the rest are cut."""
    max_built_bytes: int = Field(16_777_216, ge=1_000)
    """The longest string or blob SQLite may build or load while the statement runs
    (`SQLITE_LIMIT_LENGTH`): a statement that needs a longer one fails, and its memory stays
    bounded (one `printf` could otherwise build a gigabyte)."""
    max_sql_chars: int = Field(20_000, ge=100)
    """The longest statement the guard reads; a longer one is refused before it is parsed."""
    max_depth: int = Field(20, ge=1, le=40)
    """How deeply a statement may nest (parentheses, subqueries, CASE, prefix operators):
    deeper is refused before parsing. Beyond 40 the parser could exhaust Python's stack."""
    functions: list[str] = []
    """SQLite functions a statement may call beyond `SAFE_FUNCTIONS` (say `snippet` and
    `bm25` for a full-text table); the ones in `NEVER_FUNCTIONS` cannot be added."""
    allow_writes: bool = False
    """Let INSERT, UPDATE and DELETE change rows of the tables a statement may read (a table
    with a column allow-list: UPDATE of those columns only); the connection is then opened
    read-write. Schema changes, PRAGMA, ATTACH and transactions stay refused."""
    join_missing: bool = False
    """Run a SELECT that reads a column where it is not, mended, where what it meant is clear:
    - a column of a table it does not join, named bare or by that table's name, gets the join,
      in the SELECT (or subquery) that reads it, when one other table has the column (or
      others too, joined only through it) and each key of the join leads to at most one row
      (no row repeated), or the column is named by its table's name and one key joins it
      (`payment.amount`: the payments' rows are what it asks for), or the SELECT is a
      DISTINCT one that counts nothing (a repeated row is shown once); a column named by an
      alias the statement never defines (`p.model_year`) is then read as the joined table's;
    - a key column named as a table's that has none (`category.film_id`) is read from the one
      table next to it (one key away, not read by the statement) that has it as a key column:
      the table is read as itself joined to that one, under the same name (`film.name` is
      left alone: a title misnamed as likely as the language's name).
    The result's `repaired` says what was done. Off by default: what runs is then not what
    was written."""


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
    """Rows of one statement, bounded by the policy's `max_rows`, `max_result_bytes` and
    `max_value_bytes`."""

    sql: str
    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool
    """Rows were left out (past `max_rows` or `max_result_bytes`); only the first are kept."""
    seconds: float
    changed: int | None = None
    """Rows an INSERT, UPDATE or DELETE changed; None for a read."""
    note: str | None = None
    """What was cut to keep the result within the limits, and which limit; None if nothing."""
    repaired: str | None = None
    """What the guard added to the statement to run it (`GuardPolicy.join_missing`); `sql` is
    then the statement as it ran."""

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
        if self.note:
            out["note"] = self.note
        if self.repaired:
            out |= {"repaired": self.repaired, "sql": self.sql}
        while shown and len(json.dumps(out, default=str)) > max_chars:
            shown.pop()
            out["shown"] = len(shown)
        return out


class SqlGuard:
    """Checks and runs SQL against one SQLite database (a path or `sqlite:///` URL): reads
    only, unless the policy allows writes.

    :param policy: the allow-lists and the limits; defaults read anything, 200 rows, 5 s
    :param constraints: custom checks, run after the built-in ones, in order
    :param joins: the joins an error may suggest for a column of a table the statement does
        not read; defaults to the declared foreign keys (a schema index's `joins` adds the
        inferred ones)
    :raises UserError: no such database, or an allow-list naming a table or column it lacks
    """

    def __init__(
        self,
        database: str | Path,
        policy: GuardPolicy | None = None,
        constraints: Sequence[Constraint] = (),
        joins: Sequence[ForeignKey] | None = None,
    ) -> None:
        self.path = database_path(database)
        self.schema: Schema = read_schema(self.path)
        self.joins = self.schema.foreign_keys if joins is None else list(joins)
        self.policy = policy or GuardPolicy()
        self.constraints = list(constraints)
        self._tables = self._allowed_tables()
        self._columns = self._allowed_columns()
        self._functions = self._allowed_functions()

    # --- checking ------------------------------------------------------------------------

    def check(self, sql: str) -> CheckedStatement:
        """The statement, checked; raises `QueryRefused` with the reason when it may not run."""
        try:
            return self._check(sql)
        except RecursionError:
            # The nesting limit keeps the parser's recursion in bounds; this catches what it
            # does not measure (a long chain the tree walks recurse over, a constraint's own).
            msg = (
                "the statement is nested too deeply for the guard to check: flatten it (a CTE "
                "per level, IN lists instead of nested ORs)"
            )
            raise QueryRefused(msg) from None

    def _check(self, sql: str) -> CheckedStatement:
        check_size(sql, self.policy.max_sql_chars)
        tree, tokens = _parse_one(sql, self.policy.max_depth)
        _require_allowed_kind(tree, writes=self.policy.allow_writes)
        tables = self._check_tables(tree)
        self._check_columns(tree, tables)
        self._check_implicit_columns(tree, tables, {t.token_type.name for t in tokens})
        self._check_functions(tree)
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

        restricted = self._restricted(tables)
        if not restricted:
            return
        for star in tree.find_all(exp.Star):
            # `count(*)` counts rows; any other `*` (SELECT *, t.*, RETURNING *) expands to
            # every column, and through a subquery or a CTE to every column of what it reads.
            if not isinstance(star.parent, exp.Func):
                names = ", ".join(sorted(restricted))
                msg = (
                    f"SELECT * would read every column of {names}, of which only some may "
                    f"be read: name the columns ({self._column_list(restricted)})"
                )
                raise QueryRefused(msg)
        for column in tree.find_all(exp.Column):
            if isinstance(column.this, exp.Star):
                continue
            if column.table:
                owner = tables.get(column.table.casefold())
                candidates = [owner] if owner in restricted else []
            else:
                # Unqualified: any restricted table of the statement that has such a column
                # could be the one read (an output alias matches none and is let through).
                candidates = self._having_column(restricted, column.name)
            for table in candidates:
                assert table is not None
                self._require_readable(table, column.name)

    def _check_implicit_columns(
        self, tree: exp.Expr, tables: Mapping[str, str], tokens: set[str]
    ) -> None:
        """The comparisons a join makes without naming its columns in an expression, which
        SQLite's authorizer does not see: NATURAL compares every shared column, USING the
        listed ones, on both sides."""
        from sqlglot import exp

        restricted = self._restricted(tables)
        if not restricted:
            return
        joins = list(tree.find_all(exp.Join))
        # The tokens as well as the tree: a NATURAL the parser read some other way still counts.
        if "NATURAL" in tokens or any(j.method.upper() == "NATURAL" for j in joins):
            names = ", ".join(sorted(restricted))
            msg = (
                f"NATURAL JOIN compares every column its two sides share, and this statement "
                f"reads {names}, of which only some columns may be read: join with ON and name "
                f"the columns ({self._column_list(restricted)})"
            )
            raise QueryRefused(msg)
        using = [ident for j in joins for ident in j.args.get("using") or ()]
        if "USING" in tokens and not using:
            msg = "the statement has a USING clause the guard cannot read: join with ON instead"
            raise QueryRefused(msg)
        for ident in using:
            for table in self._having_column(restricted, ident.name):
                self._require_readable(table, ident.name, using=True)

    def _check_functions(self, tree: exp.Expr) -> None:
        """Functions sqlglot does not model are checked by name here; the ones it models are
        named differently by sqlglot than by SQLite, and SQLite's authorizer checks them."""
        from sqlglot import exp
        from sqlglot.helper import seq_get

        for call in tree.find_all(exp.Format, exp.Anonymous):
            if isinstance(call, exp.Format) or call.name.casefold() == "printf":
                first = call.this if isinstance(call, exp.Format) else seq_get(call.expressions, 0)
                fmt = first.name if isinstance(first, exp.Literal) and first.is_string else None
                name = "format" if isinstance(call, exp.Format) else "printf"
                check_format(name, fmt, self.policy.max_built_bytes)
        for node in tree.find_all(exp.Anonymous):
            name = node.name.casefold()
            if name in NEVER_FUNCTIONS:
                msg = (
                    f"function {name} reaches outside the database (code, files, pointers or "
                    f"the log) and may not be called"
                )
                raise QueryRefused(msg)
            if name not in self._functions:
                msg = (
                    f"function {name} may not be called: it is not on the guard's allow-list "
                    f"of SQLite functions (SAFE_FUNCTIONS, and the policy's `functions`)"
                )
                raise QueryRefused(msg)

    def _restricted(self, tables: Mapping[str, str]) -> set[str]:
        """The tables of `tables` that have a column allow-list."""
        return {t for t in set(tables.values()) if t in self._columns}

    def _having_column(self, restricted: set[str], name: str) -> list[str]:
        return sorted(
            t
            for t in restricted
            if (schema_table := self.schema.table(t)) and schema_table.column(name)
        )

    def _require_readable(self, table: str, column: str, *, using: bool = False) -> None:
        if column.casefold() in self._columns[table]:
            return
        readable = self._column_list([table])
        if using:
            msg = (
                f"JOIN … USING ({column}) compares column {table}.{column}, which may not be "
                f"read: join with ON on readable columns ({readable})"
            )
        else:
            msg = f"column {table}.{column} may not be read ({readable})"
        raise QueryRefused(msg)

    # --- running -------------------------------------------------------------------------

    def execute(self, sql: str) -> QueryResult:
        """Check `sql` and run it (blocking; `aexecute` runs it in a worker thread). With the
        policy's `join_missing`, a statement missing a join is run again with it (each run
        with its own `timeout`), up to `_JOINS_ADDED` joins; when the statement as joined
        misses another column no join gives, that error is raised with the joins added, and
        any other failure of it raises the error of the statement as written.

        :raises QueryRefused: the statement may not run, or SQLite's authorizer refused it
        :raises QueryTimeout: it ran past `policy.timeout` (its checking counts)
        :raises ToolError: SQLite reported an error (no such column, a syntax SQLite rejects, a
            value longer than `policy.max_built_bytes`)
        """
        added: list[str] = []
        statement = sql
        first: _MissingColumn | None = None
        while True:
            try:
                result = self._execute(statement)
            except _MissingColumn as missing:
                if missing.joined is None or len(added) == _JOINS_ADDED:
                    if first is None:
                        raise
                    # The model's next mistake, shown with the joins that got it this far:
                    # the first error alone, about a join it would get again, kept the 1.5B
                    # from ever seeing it (a payment's invoice_status, seven turns).
                    msg = f"{missing} (the guard had added: {'; '.join(added)})"
                    raise ToolError(msg) from None
                first = first or missing
                statement, what = missing.joined
                added.append(what)
            except ToolError:
                if first is None:
                    raise
                raise first from None  # the join itself broke it (a column made ambiguous)
            else:
                return result.model_copy(update={"repaired": "; ".join(added) or None})

    def _execute(self, sql: str) -> QueryResult:
        policy = self.policy
        started = time.monotonic()
        checked = self.check(sql)
        writes = checked.tree.key in _ROW_WRITES
        deadline = started + policy.timeout
        with (
            self._fenced() as (connection, denied),
            Watchdog(connection, max(deadline - time.monotonic(), 0.0)) as watchdog,
        ):
            connection.set_progress_handler(
                lambda: int(time.monotonic() > deadline), _PROGRESS_STEPS
            )
            try:
                cursor = connection.execute(sql)
                fetched = fetch_bounded(
                    cursor, policy.max_rows, policy.max_value_bytes, policy.max_result_bytes
                )
            except sqlite3.Error as exc:
                timed_out = watchdog.fired or time.monotonic() > deadline
                raise self._failure(exc, denied, checked, timed_out=timed_out) from None
            columns = [d[0] for d in cursor.description or ()]
        return QueryResult(
            sql=sql,
            columns=columns,
            rows=fetched.rows,
            truncated=fetched.more,
            seconds=round(time.monotonic() - started, 4),
            changed=cursor.rowcount if writes else None,
            note="; ".join(fetched.notes) or None,
        )

    def _failure(
        self, exc: sqlite3.Error, denied: list[str], checked: CheckedStatement, *, timed_out: bool
    ) -> ToolError:
        """The error the model reads for a statement SQLite stopped."""
        if denied:
            return QueryRefused(f"SQLite refused the statement: {'; '.join(denied)}")
        if timed_out and "interrupt" in str(exc):
            return QueryTimeout(
                f"the statement ran longer than {self.policy.timeout:g} s and was stopped; make "
                f"it cheaper (filter first, aggregate, avoid cross joins)"
            )
        if "too big" in str(exc):
            return ToolError(
                f"SQLite error: {exc}: the statement built or read a value longer than "
                f"{self.policy.max_built_bytes:,} bytes (the policy's max_built_bytes); take "
                f"less of it (substr, length) or leave it out"
            )
        if str(exc).startswith("no such column"):
            return self._missing_column(str(exc), checked)
        return ToolError(f"SQLite error: {exc}")

    def _missing_column(self, error: str, checked: CheckedStatement) -> _MissingColumn:
        """What there is instead of a missing column: the columns of the tables the statement
        reads and, where another table has that column, how to join it. Told only "no such
        column: track_name", the 1.5B sent the same query again until its budget was spent;
        told the columns there are, it still sent `SELECT region_name FROM countries` again
        (issue 24): the column was one of a table it had not joined. Told the join, it wrote
        its query unchanged in all seven of its turns: `join_missing` mends it where safe."""
        qualifier, _, name = error.partition(":")[2].strip().rpartition(".")
        reference = self._failing_reference(checked.tree, qualifier, name)
        read = frozenset(reference.around.values()) if reference else checked.tables
        hints = [self._column_names(read), *self._read_elsewhere(reference, qualifier, name)]
        aliases = _aliases(checked.tree, self._tables)
        found = self._tables_having(name, read)
        for column, table, route in found:
            if route is None:
                hints.append(f"{column} is a column of {table}")
            else:
                hints.append(
                    f"{column} is a column of {table}, which the query does not read: "
                    f"{join_clauses(route, table, aliases)}, then read "
                    f"{sql_name(table)}.{sql_name(column)}"
                )
        message = "; ".join([f"SQLite error: {error}", *(h for h in hints if h)])
        mended = None
        # a write runs as written or not at all: what it changes is not for the guard to guess
        if self.policy.join_missing and reference and checked.tree.key not in _ROW_WRITES:
            owner = reference.table(qualifier)
            mended = (
                self._joined(checked, reference, found, qualifier)
                if owner is None
                else self._bridged(checked, reference, qualifier, owner, name)
            )
        return _MissingColumn(message, mended)

    def _read_elsewhere(self, reference: _Reference | None, qualifier: str, name: str) -> list[str]:
        """Where the query reads a column `name` under another name than `qualifier`: the 1.5B
        wrote `T1.name` of film for `T2.name` of language, and was pointed at category."""
        if reference is None or reference.table(qualifier) is None:
            return []
        return [
            f"{column} is a column of {real}, which the query reads as {called}: "
            f"read {called}.{sql_name(column)}"
            for called, real in reference.around.items()
            if (column := self._readable_column(real, name))
        ]

    def _joined(
        self,
        checked: CheckedStatement,
        reference: _Reference,
        found: Sequence[tuple[str, str, list[ForeignKey] | None]],
        qualifier: str,
    ) -> tuple[str, str] | None:
        """The statement with the join to the one table `found` added to the SELECT that reads
        the column (a subquery's own: `… IN (SELECT customer_id FROM customers WHERE
        country_name = 'Brazil')`), and what was added; None unless it is safe (see
        `GuardPolicy.join_missing`)."""
        # `customer.customer_id` names its table, though rental has one too; `p.model_year`,
        # p defined nowhere, names none.
        undefined = bool(qualifier) and self.schema.table(qualifier) is None
        if qualifier and not undefined:
            found = [f for f in found if f[1].casefold() == qualifier.casefold()]
        if len(found) != 1:
            return None
        column, table, route = found[0]
        if route is None:
            return None
        walked = walk(route, table)
        if _other_end(route[0], walked[0][1]) not in reference.own:
            return None  # the route starts at a table of a SELECT around it
        tree, select = reference.in_copy(checked.tree)
        # Each key from a table joined already to the one it references: no row repeated;
        # but a column named by its table's name (`payment.amount`) asks for that table's rows,
        # and a SELECT DISTINCT that counts nothing gives each row once however often it comes.
        named = qualifier.casefold() == table.casefold() and len(route) == 1
        repeats = any(new != key.ref_table for key, new in walked)
        if repeats and not named and not _distinct_rows(select):
            return None
        self._qualify(select, reference.own)
        for new, on in join_steps(route, table, reference.own):
            select.join(new, on=on, dialect="sqlite", copy=False)
        added = join_clauses(route, table, reference.own)
        repaired = f"{column} is a column of {table}, which the query did not read: {added} added"
        if undefined:
            _rename_table(select, qualifier, table)
            repaired += f", and {qualifier}, which it does not define, read as {sql_name(table)}"
        return tree.sql(dialect="sqlite"), repaired

    def _qualify(self, select: exp.Select, own: Mapping[str, str]) -> None:
        """Name the table of each bare column `select` reads of its own tables, where one has
        it: a join must not make `SELECT id FROM employees` ambiguous. Names of its own
        results (`ORDER BY total`) are left as they are."""
        from sqlglot import exp

        results = {e.alias.casefold() for e in select.expressions if e.alias}
        for column in select.find_all(exp.Column):
            if (
                column.table
                or column.name.casefold() in results
                or column.find_ancestor(exp.Select) is not select
            ):
                continue
            having = [
                named for real, named in own.items() if self._readable_column(real, column.name)
            ]
            if len(having) == 1:
                column.set("table", exp.to_identifier(having[0]))

    def _bridged(
        self,
        checked: CheckedStatement,
        reference: _Reference,
        qualifier: str,
        owner: str,
        name: str,
    ) -> tuple[str, str] | None:
        """The statement with table `owner`, whose column `name` it reads and which has none,
        read as itself joined to the one table next to it (one key away, not read by the
        statement) that has it as a key column, under the same name; and what was done.
        `category.film_id` is then the film_id of film_category, the category's films: the
        1.5B wrote that query, told the join, seven times over. None when no such table, or
        more than one. Key columns only: `film.name` is far likelier a film's title misnamed
        than its language's name, and a key names what it links whatever it is called."""
        from sqlglot import exp, parse_one

        nearby = {
            other
            for key in self.joins
            if owner in (key.table, key.ref_table)
            and (other := _other_end(key, owner)) not in checked.tables
            and self._joinable(key)
            and self._is_key(other, name)
        }
        if len(nearby) != 1:
            return None
        (other,) = nearby
        route = join_route(self.joins, [owner], other, [owner, other])
        own_table = self.schema.table(owner)
        if route is None or own_table is None:
            return None
        kept = [c.name for c in own_table.columns if self._readable_column(owner, c.name)]
        new, on = join_steps(route, other, {owner: owner})[0]
        column = f"{sql_name(other)}.{sql_name(self._readable_column(other, name) or name)}"
        inner = (
            f"SELECT {', '.join(f'{sql_name(owner)}.{sql_name(c)}' for c in kept)}, {column} "
            f"FROM {sql_name(owner)} JOIN {new} ON {on}"
        )
        derived = parse_one(f"SELECT 1 FROM ({inner}) AS {sql_name(qualifier)}", dialect="sqlite")
        tree, nearest = reference.in_copy(checked.tree)
        select: exp.Select | None = nearest
        while select is not None:
            for table in select.find_all(exp.Table):
                if (
                    table.alias_or_name.casefold() == qualifier.casefold()
                    and table.find_ancestor(exp.Select) is select
                ):
                    table.replace(derived.find(exp.Subquery))
                    repaired = (
                        f"{name} is a column of {other}, not of {owner}: {qualifier} read as "
                        f"{sql_name(owner)} JOIN {new} ON {on}"
                    )
                    return tree.sql(dialect="sqlite"), repaired
            select = select.find_ancestor(exp.Select)
        return None

    def _tables_having(
        self, name: str, read: frozenset[str]
    ) -> list[tuple[str, str, list[ForeignKey] | None]]:
        """The tables other than `read` with a readable column `name` (as they spell it), the
        nearest first, each with the keys that join it to `read` (None: no readable route); at
        most `_JOIN_HINTS`, and none reached through another (genres.GenreId, through tracks)."""
        readable = set(self._tables.values())
        found = []
        for table in sorted(readable - read):
            if (column := self._readable_column(table, name)) is not None:
                route = join_route(self.joins, read, table, readable)
                joinable = route is not None and all(map(self._joinable, route))
                found.append((column, table, route if joinable else None))
        found.sort(key=lambda f: len(f[2]) if f[2] is not None else len(readable))
        kept: list[tuple[str, str, list[ForeignKey] | None]] = []
        for column, table, route in found:
            through = {t for key in route or () for t in (key.table, key.ref_table)}
            if len(kept) < _JOIN_HINTS and not through & {t for _, t, _ in kept}:
                kept.append((column, table, route))
        return kept

    def _failing_reference(self, tree: exp.Expr, qualifier: str, name: str) -> _Reference | None:
        """Where the statement reads the missing column `qualifier.name` that SQLite cannot
        resolve; None when no such reference is found. Its tables are those of its SELECT and
        of the SELECTs around it (a subquery may read its outer tables): the statement's would
        be wrong for `SELECT … FROM payment WHERE film_id IN (SELECT film_id FROM film_category
        …)`: film_category has film_id, payment does not."""
        from sqlglot import exp

        for column in tree.find_all(exp.Column):
            if (column.table.casefold(), column.name.casefold()) != (
                qualifier.casefold(),
                name.casefold(),
            ):
                continue
            nearest = select = column.find_ancestor(exp.Select)
            around: dict[str, str] = {}  # what the SELECTs call a table → its schema name
            own: dict[str, str] = {}
            while select is not None:
                for table in select.find_all(exp.Table):
                    real = self._tables.get(table.name.casefold())
                    if real and table.find_ancestor(exp.Select) is select:
                        around.setdefault(table.alias_or_name, real)
                        if select is nearest:
                            own.setdefault(real, table.alias_or_name)
                select = select.find_ancestor(exp.Select)
            named = [_called(around, qualifier)] if qualifier else around.values()
            if nearest is not None and not any(t and self._readable_column(t, name) for t in named):
                index = next(i for i, s in enumerate(tree.find_all(exp.Select)) if s is nearest)
                return _Reference(index, own, around)
        return None

    def _readable_column(self, table: str, name: str) -> str | None:
        """The schema's spelling of column `name` of `table`, if a statement may read it."""
        found = schema_table.column(name) if (schema_table := self.schema.table(table)) else None
        allowed = self._columns.get(table)
        if found is None or (allowed is not None and found.name.casefold() not in allowed):
            return None
        return found.name

    def _is_key(self, table: str, name: str) -> bool:
        """Whether `table` has a readable column `name` that a join key or its primary key
        is made of."""
        column = self._readable_column(table, name)
        if column is None:
            return False
        found = self.schema.table(table)
        return any(
            (key.table, key.column) == (table, column)
            or (key.ref_table, key.ref_column) == (table, column)
            for key in self.joins
        ) or bool(found and (c := found.column(column)) and c.primary_key)

    def _joinable(self, key: ForeignKey) -> bool:
        return bool(
            self._readable_column(key.table, key.column)
            and self._readable_column(key.ref_table, key.ref_column)
        )

    def prepares(self, sql: str) -> bool:
        """Whether `sql` would run here: the guard lets it, and SQLite compiles it against this
        database (every table, column and function it names exists) without running it."""
        try:
            self.check(sql)
            with self._fenced() as (connection, denied):
                connection.execute(f"EXPLAIN {sql}").close()
        except (ToolError, sqlite3.Error):
            return False
        return not denied

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
                return self._authorize_function(arg2, source in views, denied)
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
            # Bounds the memory of any one value SQLite builds (printf, replace, group_concat,
            # zeroblob …) or loads; and no database may be attached, whatever gets through.
            connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, self.policy.max_built_bytes)
            connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
            connection.create_function("instr", 2, instr, deterministic=True)
            connection.set_authorizer(authorize)
            yield connection, denied

    def _authorize_function(self, name: str | None, in_view: bool, denied: list[str]) -> int:
        """Functions on the allow-list; what an allowed view calls on its own, but never one
        of `NEVER_FUNCTIONS`."""
        folded = (name or "").casefold()
        if folded in NEVER_FUNCTIONS:
            denied.append(f"function {name} is not allowed")
            return sqlite3.SQLITE_DENY
        if in_view or folded in self._functions:
            return sqlite3.SQLITE_OK
        denied.append(f"function {name} is not on the allow-list of SQLite functions")
        return sqlite3.SQLITE_DENY

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

    def _allowed_functions(self) -> frozenset[str]:
        """Casefolded names of the functions a statement may call."""
        extra = {name.casefold() for name in self.policy.functions}
        if never := sorted(extra & NEVER_FUNCTIONS):
            msg = (
                f"the policy's functions name {', '.join(never)}, which no policy may allow: "
                f"they load code, touch files, log or hand out pointers"
            )
            raise UserError(msg)
        return SAFE_FUNCTIONS | extra

    def _table_list(self) -> str:
        return "the tables that may be read are " + ", ".join(sorted(self._tables.values()))

    def _column_names(self, tables: Iterable[str]) -> str:
        """The columns of `tables` that may be read, as the schema spells them."""
        listed = []
        for name in sorted(tables):
            table = self.schema.table(name)
            if table is None:
                continue
            allowed = self._columns.get(name)
            columns = [
                c.name for c in table.columns if allowed is None or c.name.casefold() in allowed
            ]
            listed.append(f"the columns of {name} are {', '.join(columns)}")
        return "; ".join(listed)

    def _column_list(self, tables: Sequence[str] | set[str]) -> str:
        return "; ".join(
            f"readable columns of {t}: {', '.join(sorted(self._columns[t]))}"
            for t in sorted(tables)
        )


def _parse_one(sql: str, max_depth: int) -> tuple[exp.Expr, list[Token]]:
    """The one statement of `sql`, and its tokens; refused if nested deeper than `max_depth`."""
    from sqlglot import exp
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import ParseError, TokenError

    if not sql.strip():
        msg = "the statement is empty"
        raise QueryRefused(msg)
    dialect = Dialect.get_or_raise("sqlite")
    try:
        tokens = dialect.tokenize(sql)
        check_nesting(tokens, max_depth)
        parsed = dialect.parser().parse(tokens, sql)
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
    return statements[0], tokens


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


def _kind(node: exp.Expr) -> str:
    """A statement's kind as a person says it: `an INSERT`, `a PRAGMA`, `a VACUUM`."""
    from sqlglot import exp

    if isinstance(node, exp.Command):
        word = str(node.this).split()[0].upper() if node.this else "COMMAND"
    else:
        word = node.key.upper()
    article = "an" if word[:1] in "AEIOU" else "a"
    return f"{article} {word} statement"


_JOIN_HINTS = 3
"""At most this many other tables named for a missing column ("name" is in most of them)."""
_JOINS_ADDED = 2
"""At most this many joins `join_missing` adds to one statement."""


def _aliases(tree: exp.Expr, tables: Mapping[str, str]) -> dict[str, str]:
    """The schema's name of each table `tree` reads → what the statement calls it."""
    from sqlglot import exp

    named: dict[str, str] = {}
    for table in tree.find_all(exp.Table):
        if real := tables.get(table.name.casefold()):
            named.setdefault(real, table.alias_or_name)
    return named


def _called(tables: Mapping[str, str], called: str) -> str | None:
    """The schema name of the table a query calls `called` in `tables` (what a query calls a
    table → its schema name), compared as SQLite does: case aside."""
    folded = called.casefold()
    return next((real for name, real in tables.items() if name.casefold() == folded), None)


def _distinct_rows(select: exp.Select) -> bool:
    """Whether `select` is a SELECT DISTINCT with no aggregate of its own: rows a join repeats
    change nothing in its result."""
    from sqlglot import exp

    return bool(select.args.get("distinct")) and not any(
        agg.find_ancestor(exp.Select) is select for agg in select.find_all(exp.AggFunc)
    )


def _rename_table(select: exp.Select, called: str, table: str) -> None:
    """Read the columns `select` names as `called`'s as `table`'s."""
    from sqlglot import exp

    folded = called.casefold()
    for column in select.find_all(exp.Column):
        if column.table.casefold() == folded and column.find_ancestor(exp.Select) is select:
            column.set("table", exp.to_identifier(table))


def _other_end(key: ForeignKey, table: str) -> str:
    return key.ref_table if key.table == table else key.table


@dataclass(frozen=True, slots=True)
class _Reference:
    """Where a statement reads a column SQLite cannot resolve: its SELECT, as the `index`-th
    of the statement's (`find_all` order), what that SELECT calls each of its own tables
    (schema name → name or alias), and the tables it can read, its own and those of the
    SELECTs around it (what they are called → schema name)."""

    index: int
    own: dict[str, str]
    around: dict[str, str]

    def table(self, called: str) -> str | None:
        """The schema name of the table the query calls `called` there (as SQLite compares
        names: case aside)."""
        return _called(self.around, called)

    def in_copy(self, tree: exp.Expr) -> tuple[exp.Expr, exp.Select]:
        """A copy of `tree` to mend, and the SELECT of the reference in it."""
        from sqlglot import exp

        copy = tree.copy()
        select = next(s for i, s in enumerate(copy.find_all(exp.Select)) if i == self.index)
        return copy, select


class _MissingColumn(ToolError):
    """ "no such column", with the statement mended and what was done
    (`GuardPolicy.join_missing`), if it can be mended safely."""

    def __init__(self, message: str, joined: tuple[str, str] | None) -> None:
        super().__init__(message)
        self.joined = joined


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
