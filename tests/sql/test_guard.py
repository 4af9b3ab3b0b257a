"""The guarded SQL executor, against a real SQLite file."""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentrt.exceptions import QueryRefused, QueryTimeout, ToolError, UserError
from agentrt.sql.guard import (
    CheckedStatement,
    GuardPolicy,
    SqlGuard,
)

from .shop import digest

pytest.importorskip("sqlglot", reason="needs the db extra")


class TestReads:
    @pytest.mark.parametrize(
        "sql",
        [
            "SELECT name FROM stores",
            "select s.name, count(*) from sales join employees e on e.id = sales.employee_id "
            "join stores s on s.id = e.store_id group by s.name",
            "WITH top AS (SELECT employee_id, sum(quantity) AS n FROM sales GROUP BY 1) "
            "SELECT * FROM top ORDER BY n DESC LIMIT 1",
            "SELECT name FROM stores UNION SELECT name FROM products",
            "SELECT (SELECT max(price) FROM products) AS top, name FROM stores",
            "SELECT * FROM store_staff",
            "-- the cities\nSELECT city /* trimmed below */ FROM stores;",
            "SELECT name FROM main.stores",
        ],
    )
    def test_a_read_runs(self, shared_shop: Path, sql: str) -> None:
        """Joins, CTEs, set operations, subqueries, views and comments are all reads."""
        result = SqlGuard(shared_shop).execute(sql)
        assert result.rows
        assert not result.truncated

    def test_result_has_columns_and_rows(self, shared_shop: Path) -> None:
        result = SqlGuard(shared_shop).execute("SELECT id, name FROM stores ORDER BY id")
        assert result.columns == ["id", "name"]
        assert result.rows == [(1, "Northgate"), (2, "Riverside"), (3, "Old Town")]

    def test_the_row_limit_cuts_and_says_so(self, shared_shop: Path) -> None:
        guard = SqlGuard(shared_shop, GuardPolicy(max_rows=10))
        result = guard.execute("SELECT id FROM sales ORDER BY id")
        assert [r[0] for r in result.rows] == list(range(1, 11))
        assert result.truncated
        exact = guard.execute("SELECT id FROM sales WHERE id <= 10")
        assert len(exact.rows) == 10
        assert not exact.truncated

    def test_a_runaway_statement_is_stopped_at_the_timeout(self, shared_shop: Path) -> None:
        """An endless recursive CTE is interrupted by the progress handler."""
        guard = SqlGuard(shared_shop, GuardPolicy(timeout=0.2))
        endless = (
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
        )
        with pytest.raises(QueryTimeout, match=r"ran longer than 0.2 s and was stopped"):
            guard.execute(endless)

    def test_sqlite_errors_reach_the_model_as_tool_errors(self, shared_shop: Path) -> None:
        with pytest.raises(ToolError, match=r"SQLite error: no such column: colour"):
            SqlGuard(shared_shop).execute("SELECT colour FROM products")

    async def test_aexecute_runs_in_a_worker_thread(self, shared_shop: Path) -> None:
        result = await SqlGuard(shared_shop).aexecute("SELECT count(*) FROM sales")
        assert result.rows == [(240,)]


REFUSALS = [
    ("INSERT INTO stores VALUES (9, 'X', 'Y')", r"only reading statements .*an INSERT"),
    ("UPDATE employees SET salary = 0", r"only reading statements .*an UPDATE"),
    ("DELETE FROM sales", r"only reading statements .*a DELETE"),
    ("DROP TABLE sales", r"only reading statements .*a DROP"),
    ("CREATE TABLE t (x)", r"only reading statements .*a CREATE"),
    ("ALTER TABLE stores ADD COLUMN x", r"only reading statements"),
    ("PRAGMA journal_mode = WAL", r"only reading statements .*a PRAGMA"),
    ("ATTACH DATABASE 'other.db' AS other", r"only reading statements .*an ATTACH"),
    ("VACUUM", r"only reading statements"),
    ("SELECT 1; DELETE FROM sales", r"2 statements \(SELECT, DELETE\): send exactly one"),
    ("SELECT 1; SELECT 2", r"2 statements"),
    ("", r"the statement is empty"),
    ("-- nothing here\n;", r"no statement \(only comments or semicolons\)"),
    ("SELECT FROM WHERE (", r"cannot be parsed as SQLite SQL"),
    ("SELECT * FROM customers", r"table 'customers' does not exist: the tables that may be"),
    ("SELECT * FROM other.stores", r"names another database schema"),
    ("SELECT * FROM pragma_table_info('stores')", r"is a table-valued function"),
    ("SELECT load_extension('evil')", r"function load_extension reaches outside"),
]


class TestRefusals:
    @pytest.mark.parametrize(("sql", "reason"), REFUSALS)
    def test_refused_with_the_reason(self, shop: Path, sql: str, reason: str) -> None:
        """Nothing but one reading statement runs, and the refusal says why."""
        before = digest(shop)
        with pytest.raises(QueryRefused, match=reason):
            SqlGuard(shop).execute(sql)
        assert digest(shop) == before

    def test_a_table_off_the_allow_list(self, shared_shop: Path) -> None:
        guard = SqlGuard(shared_shop, GuardPolicy(tables=["sales", "products"]))
        assert guard.execute("SELECT count(*) FROM sales JOIN products ON products.id = product_id")
        with pytest.raises(
            QueryRefused,
            match=r"table 'employees' is not on the allow-list: the tables that may be read "
            r"are products, sales",
        ):
            guard.execute("SELECT name FROM employees")

    def test_a_column_off_the_allow_list(self, shared_shop: Path) -> None:
        """With a column allow-list, the other columns cannot be read, qualified or not, nor
        through SELECT *; the allowed ones can."""
        policy = GuardPolicy(columns={"employees": ["id", "name", "store_id"]})
        guard = SqlGuard(shared_shop, policy)
        assert guard.execute("SELECT e.name FROM employees AS e WHERE e.store_id = 1").rows
        for sql in (
            "SELECT salary FROM employees",
            "SELECT e.name FROM employees e ORDER BY e.salary",
            "SELECT name FROM stores WHERE id IN (SELECT store_id FROM employees "
            "WHERE salary > 3000)",
        ):
            with pytest.raises(QueryRefused, match=r"column employees.salary may not be read"):
                guard.execute(sql)
        with pytest.raises(QueryRefused, match=r"SELECT \* would read every column of employees"):
            guard.execute("SELECT * FROM employees")

    def test_sqlite_enforces_the_allow_lists_too(self, shared_shop: Path) -> None:
        """The second fence: whatever reaches SQLite, its authorizer refuses forbidden reads,
        writes and PRAGMAs itself (here driven directly, past the sqlglot checks)."""
        guard = SqlGuard(shared_shop, GuardPolicy(columns={"employees": ["id", "name"]}))
        for sql, refused in (
            ("SELECT salary FROM employees", "column employees.salary may not be read"),
            ("PRAGMA user_version = 3", "action PRAGMA is not a read"),
            ("SELECT load_extension('x')", "function load_extension is not allowed"),
        ):
            with (
                guard._fenced() as (connection, denied),
                pytest.raises(sqlite3.DatabaseError, match=r"not authorized|prohibited"),
            ):
                connection.execute(sql)
            assert refused in denied

    def test_a_view_reads_what_it_needs(self, shared_shop: Path) -> None:
        """An allowed view may read the tables behind it, even ones not on the allow-list."""
        guard = SqlGuard(shared_shop, GuardPolicy(tables=["store_staff"]))
        assert len(guard.execute("SELECT * FROM store_staff").rows) == 4
        with pytest.raises(QueryRefused, match=r"table 'stores' is not on the allow-list"):
            guard.execute("SELECT * FROM stores")

    def test_a_bad_allow_list_is_a_usage_error(self, shared_shop: Path) -> None:
        with pytest.raises(UserError, match=r"names table 'clients', which shop.sqlite does not"):
            SqlGuard(shared_shop, GuardPolicy(tables=["clients"]))
        with pytest.raises(UserError, match=r"names employees.wage, which does not exist"):
            SqlGuard(shared_shop, GuardPolicy(columns={"employees": ["wage"]}))
        with pytest.raises(UserError, match=r"no SQLite database at"):
            SqlGuard(shared_shop.parent / "missing.sqlite")


class TestWrites:
    def test_writes_are_off_by_default(self, shop: Path) -> None:
        """The default policy refuses a write before it runs; the file is untouched."""
        before = digest(shop)
        with pytest.raises(QueryRefused, match=r"only reading statements \(SELECT\) may run"):
            SqlGuard(shop).execute("UPDATE employees SET salary = 0")
        assert digest(shop) == before

    def test_allow_writes_changes_rows_of_allowed_tables(self, shop: Path) -> None:
        """An explicit `allow_writes` opens the file read-write: the change is committed."""
        guard = SqlGuard(shop, GuardPolicy(allow_writes=True))
        result = guard.execute("UPDATE employees SET salary = salary + 100 WHERE store_id = 1")
        assert (result.changed, result.rows) == (2, [])
        assert guard.execute("DELETE FROM sales WHERE id > 230").changed == 10
        assert guard.execute("SELECT count(*) FROM sales").changed is None
        with sqlite3.connect(shop) as db:
            salaries = db.execute("SELECT salary FROM employees WHERE store_id = 1").fetchall()
            (count,) = db.execute("SELECT count(*) FROM sales").fetchone()
        assert (sorted(salaries), count) == ([(2000.0,), (2200.0,)], 230)

    @pytest.mark.parametrize(
        ("sql", "reason"),
        [
            ("DROP TABLE sales", r"only SELECT, INSERT, UPDATE and DELETE .* a DROP statement"),
            ("PRAGMA journal_mode = DELETE", r"this is a PRAGMA statement"),
            ("ATTACH 'x.db' AS x", r"this is an ATTACH statement"),
            ("DELETE FROM sales; DROP TABLE sales", r"2 statements \(DELETE, DROP\)"),
            ("BEGIN", r"this is a TRANSACTION statement"),
        ],
    )
    def test_allow_writes_still_refuses_everything_but_rows(
        self, shop: Path, sql: str, reason: str
    ) -> None:
        before = digest(shop)
        with pytest.raises(QueryRefused, match=reason):
            SqlGuard(shop, GuardPolicy(allow_writes=True)).execute(sql)
        assert digest(shop) == before

    def test_writes_keep_to_the_allow_lists(self, shop: Path) -> None:
        """Tables off the list, and columns off a column list, are not written, by the
        checks or by SQLite's authorizer (a trigger's writes included)."""
        guard = SqlGuard(
            shop,
            GuardPolicy(
                allow_writes=True,
                tables=["employees", "stores"],
                columns={"employees": ["id", "name", "title"]},
            ),
        )
        with sqlite3.connect(shop) as db:
            db.execute(
                "CREATE TRIGGER audit AFTER UPDATE ON stores "
                "BEGIN DELETE FROM sales WHERE id = 1; END"
            )
        before = digest(shop)
        with pytest.raises(QueryRefused, match=r"table 'sales' is not on the allow-list"):
            guard.execute("DELETE FROM sales")
        with pytest.raises(QueryRefused, match=r"column employees.salary may not be read"):
            guard.execute("UPDATE employees SET salary = 0")
        with pytest.raises(QueryRefused, match=r"rows of employees may not be written"):
            guard.execute("DELETE FROM employees WHERE id = 4")
        with pytest.raises(QueryRefused, match=r"table sales may not be written"):
            guard.execute("UPDATE stores SET city = 'Lyon' WHERE id = 1")
        assert digest(shop) == before
        assert guard.execute("UPDATE employees SET title = 'Lead' WHERE id = 1").changed == 1


class TestCustomConstraints:
    def test_a_constraint_refuses_with_its_reason(self, shared_shop: Path) -> None:
        """A user check sees the parsed statement and the tables it reads."""
        from sqlglot import exp

        def needs_a_date_filter(statement: CheckedStatement) -> str | None:
            if "sales" not in statement.tables:
                return None
            where = statement.tree.find(exp.Where)
            if where is None or "sold_on" not in where.sql():
                return "queries of sales must filter on sold_on"
            return None

        guard = SqlGuard(shared_shop, constraints=[needs_a_date_filter])
        assert guard.execute("SELECT count(*) FROM stores").rows == [(3,)]
        assert guard.execute("SELECT count(*) FROM sales WHERE sold_on >= '2024-06-01'").rows
        with pytest.raises(
            QueryRefused,
            match=r"refused by the constraint needs_a_date_filter: queries of sales must filter",
        ):
            guard.execute("SELECT count(*) FROM sales")

    def test_constraints_run_after_the_built_in_checks(self, shared_shop: Path) -> None:
        seen: list[str] = []

        def record(statement: CheckedStatement) -> None:
            seen.append(statement.sql)

        guard = SqlGuard(shared_shop, constraints=[record])
        with pytest.raises(QueryRefused, match="only reading statements"):
            guard.execute("DELETE FROM sales")
        guard.execute("SELECT 1")
        assert seen == ["SELECT 1"]


# --- fuzzing: nothing the guard is given may change the database -----------------------------

WRITES = [
    "INSERT INTO sales (quantity) VALUES (1)",
    "REPLACE INTO stores VALUES (1, 'X', 'Y')",
    "INSERT INTO stores SELECT * FROM stores",
    "UPDATE employees SET salary = salary * 2",
    "DELETE FROM sales WHERE id > 0",
    "DROP TABLE IF EXISTS sales",
    "DROP VIEW store_staff",
    "CREATE TABLE x AS SELECT * FROM sales",
    "CREATE INDEX i ON sales(quantity)",
    "CREATE TRIGGER t AFTER INSERT ON sales BEGIN DELETE FROM sales; END",
    "ALTER TABLE stores RENAME TO shops",
    "VACUUM",
    "REINDEX",
    "ANALYZE",
    "BEGIN; DELETE FROM sales; COMMIT",
    "PRAGMA user_version = 7",
    "PRAGMA journal_mode = WAL",
    "PRAGMA writable_schema = ON",
    "PRAGMA query_only = OFF",
    # ATTACH creates a missing file: point it at the database's folder, where it would be seen.
    "ATTACH DATABASE '{folder}/fuzz.db' AS fuzz",
    "ATTACH 'file:{folder}/other?mode=rwc' AS other",
    "DETACH DATABASE main",
    "WITH d AS (SELECT 1) DELETE FROM sales",
    "WITH d AS (SELECT 1) INSERT INTO sales (quantity) SELECT 1 FROM d",
    "UPDATE sales SET quantity = 0 RETURNING *",
]
READS = [
    "SELECT 1",
    "SELECT name FROM stores",
    "SELECT count(*) FROM sales",
    "WITH a AS (SELECT 1 AS x) SELECT x FROM a",
]
COMMENTS = [
    "",
    " /* x */ ",
    "\n-- note\n",
    "/* ; DROP TABLE sales; */",
    " -- ; DELETE FROM sales\n",
]


def _variant(draw: st.DrawFn) -> str:
    """A write, PRAGMA or ATTACH, dressed: stacked with reads, wrapped in comments, re-cased."""
    write = draw(st.sampled_from(WRITES))
    if draw(st.booleans()):
        write = "".join(c.upper() if draw(st.booleans()) else c.lower() for c in write)
    before = draw(st.sampled_from(["", *(r + ";" for r in READS)]))
    after = draw(st.sampled_from(["", ";", *(";" + r for r in READS)]))
    comment = draw(st.sampled_from(COMMENTS))
    return f"{comment}{before}{comment}{write}{comment}{after}"


writes = st.composite(_variant)()
junk = st.lists(
    st.sampled_from(
        [*WRITES, *READS, *COMMENTS, ";", "(", ")", "'", '"', "`", "[", "--", "/*", "*/", " ", "\n"]
    ),
    max_size=8,
).map("".join) | st.text(max_size=60)


class TestFuzz:
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(sql=writes)
    def test_writes_are_refused_however_they_are_dressed(self, shop_folder: Path, sql: str) -> None:
        """Every statement that writes, sets a PRAGMA or attaches is refused, alone or stacked,
        commented or re-cased; the file is byte-identical and nothing is created beside it."""
        shop, before, files = (
            shop_folder,
            digest(shop_folder),
            sorted(os.listdir(shop_folder.parent)),
        )
        with pytest.raises(QueryRefused):
            SqlGuard(shop).execute(_in_folder(sql, shop.parent))
        assert digest(shop) == before
        assert sorted(os.listdir(shop.parent)) == files

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(sql=junk)
    def test_nothing_at_all_changes_the_database(self, shop_folder: Path, sql: str) -> None:
        """Arbitrary text either runs as a read or fails as a tool error: never anything else,
        and never a change to the database."""
        shop, before, files = (
            shop_folder,
            digest(shop_folder),
            sorted(os.listdir(shop_folder.parent)),
        )
        with contextlib.suppress(ToolError):
            SqlGuard(shop, GuardPolicy(timeout=1.0)).execute(_in_folder(sql, shop.parent))
        assert digest(shop) == before
        assert sorted(os.listdir(shop.parent)) == files


def _in_folder(sql: str, folder: Path) -> str:
    return re.sub(r"\{folder\}", str(folder), sql, flags=re.IGNORECASE)


@pytest.fixture(scope="module")
def shop_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One database for every fuzzed example (hypothesis runs them within one test call), in a
    folder of its own so that a file created beside it would be seen."""
    from .shop import make_shop

    return make_shop(tmp_path_factory.mktemp("fuzz") / "shop.sqlite")
