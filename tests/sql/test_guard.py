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
from agentrt.sql._fence import WATCHDOG_THREAD
from agentrt.sql.database import infer_joins, read_schema
from agentrt.sql.guard import (
    CheckedStatement,
    GuardPolicy,
    SqlGuard,
)

from .shop import digest


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

    def test_a_missing_column_comes_with_the_columns_there_are(self, shared_shop: Path) -> None:
        """Told only "no such column", the 1.5B wrote the same query until its budget ran out;
        a column allow-list keeps the others unnamed."""
        with sqlite3.connect(shared_shop) as connection:
            staff = [r[1] for r in connection.execute("PRAGMA table_info(employees)")]
        guard = SqlGuard(shared_shop)
        with pytest.raises(ToolError) as info:
            guard.execute("SELECT e.wage FROM employees e JOIN stores s ON s.id = e.store_id")
        assert str(info.value).startswith("SQLite error: no such column: e.wage; ")
        assert f"the columns of employees are {', '.join(staff)}" in str(info.value)
        assert "the columns of stores are id, name" in str(info.value)
        narrow = SqlGuard(shared_shop, GuardPolicy(columns={"employees": ["id", "name"]}))
        with pytest.raises(ToolError, match=r"; the columns of employees are id, name$"):
            narrow.execute("SELECT wage FROM employees")

    def test_a_column_of_another_table_comes_with_the_join_to_it(self, shared_shop: Path) -> None:
        """Told the columns of countries, the 1.5B sent `SELECT region_name FROM countries`
        again: the column was one of a table it had not joined. The join is written as the query
        names its tables, and it runs."""
        guard = SqlGuard(shared_shop)
        with pytest.raises(ToolError) as info:
            guard.execute("SELECT city FROM employees")
        assert str(info.value).endswith(
            "; city is a column of stores, which the query does not read: "
            "JOIN stores ON stores.id = employees.store_id, then read stores.city"
        )
        with pytest.raises(ToolError) as info:
            guard.execute("SELECT s.city, count(*) FROM sales s GROUP BY 1")
        join = (
            "JOIN employees ON employees.id = s.employee_id "
            "JOIN stores ON stores.id = employees.store_id"
        )
        assert f"which the query does not read: {join}, then read stores.city" in str(info.value)
        result = guard.execute(f"SELECT stores.city, count(*) FROM sales s {join} GROUP BY 1")
        assert sorted(result.rows) == [("  Porto ", 60), ("Leeds", 60), ("Lyon", 120)]

    def test_a_column_named_as_the_wrong_tables_points_to_the_one_read_that_has_it(
        self, shared_shop: Path
    ) -> None:
        """`T1.name` of film for `T2.name` of language: the 1.5B was pointed only at category,
        which it did not read, three joins away."""
        with pytest.raises(ToolError) as info:
            SqlGuard(shared_shop, GuardPolicy(join_missing=True)).execute(
                "SELECT e.city FROM employees e JOIN stores s ON s.id = e.store_id"
            )
        assert str(info.value) == (
            "SQLite error: no such column: e.city; the columns of employees are id, name, "
            "title, salary, store_id; the columns of stores are id, name, city; "
            "city is a column of stores, which the query reads as s: read s.city"
        )

    def test_the_join_named_is_from_the_select_that_misses_the_column(
        self, shared_shop: Path
    ) -> None:
        """The subquery reads stores, which has city; the outer SELECT, over sales, does not."""
        with pytest.raises(ToolError) as info:
            SqlGuard(shared_shop).execute(
                "SELECT count(*) FROM sales s WHERE city IN (SELECT city FROM stores)"
            )
        assert str(info.value).startswith(
            "SQLite error: no such column: city; the columns of sales are id, employee_id, "
        )
        assert str(info.value).endswith(
            "JOIN employees ON employees.id = s.employee_id "
            "JOIN stores ON stores.id = employees.store_id, then read stores.city"
        )

    def test_no_join_is_named_through_a_column_that_may_not_be_read(
        self, shared_shop: Path
    ) -> None:
        guard = SqlGuard(shared_shop, GuardPolicy(columns={"employees": ["id", "name"]}))
        with pytest.raises(ToolError) as info:
            guard.execute("SELECT city FROM sales")
        assert str(info.value).endswith("; city is a column of stores")  # not via store_id
        hidden = SqlGuard(shared_shop, GuardPolicy(columns={"stores": ["id", "name"]}))
        with pytest.raises(ToolError) as info:
            hidden.execute("SELECT city FROM employees")
        assert "stores" not in str(info.value)

    def test_the_join_named_is_the_nearest_the_declared_or_given_keys_make(
        self, tmp_path: Path
    ) -> None:
        """Of two keys to language, the one named like its column; genres.GenreId is not named
        past tracks.GenreId; an inferred join is named only when the guard is given it."""
        path = tmp_path / "films.sqlite"
        with sqlite3.connect(path) as connection:
            connection.executescript(
                """
                CREATE TABLE language (language_id INTEGER PRIMARY KEY, name TEXT);
                CREATE TABLE genre (GenreId INTEGER PRIMARY KEY, label TEXT);
                CREATE TABLE film (
                    film_id INTEGER PRIMARY KEY, title TEXT,
                    original_language_id INTEGER REFERENCES language(language_id),
                    language_id INTEGER REFERENCES language(language_id),
                    GenreId INTEGER REFERENCES genre(GenreId)
                );
                CREATE TABLE review (id INTEGER PRIMARY KEY, film_id INTEGER, stars INTEGER);
                INSERT INTO language VALUES (1, 'English');
                INSERT INTO genre VALUES (1, 'Drama');
                INSERT INTO film VALUES (1, 'Heat', NULL, 1, 1);
                INSERT INTO review VALUES (1, 1, 5);
                """
            )
        connection.close()
        guard = SqlGuard(path)
        with pytest.raises(ToolError) as info:
            guard.execute("SELECT f.title, name FROM film f")
        assert "JOIN language ON language.language_id = f.language_id, then" in str(info.value)
        with pytest.raises(ToolError) as info:
            guard.execute("SELECT stars, GenreId FROM review")
        assert str(info.value).endswith(  # no declared key joins review
            "; GenreId is a column of film; GenreId is a column of genre"
        )
        with pytest.raises(ToolError) as info:
            guard.execute("SELECT title, stars FROM film")
        assert str(info.value).endswith("; stars is a column of review")
        schema = read_schema(path)
        inferred = SqlGuard(path, joins=[*schema.foreign_keys, *infer_joins(path, schema)])
        with pytest.raises(ToolError) as info:
            inferred.execute("SELECT title, stars FROM film")
        assert str(info.value).endswith(
            "JOIN review ON review.film_id = film.film_id, then read review.stars"
        )
        with pytest.raises(ToolError) as info:
            inferred.execute("SELECT r.stars, GenreId FROM review r")
        message = str(info.value)
        assert "GenreId is a column of film, which the query does not read: " in message
        assert "genre" not in message.replace("GenreId", "")  # reached through film

    def test_join_missing_runs_a_statement_with_the_one_safe_join_added(
        self, shared_shop: Path
    ) -> None:
        """Told the join, the 1.5B sent its query unchanged six times; with `join_missing`
        the guard adds it. The statement that ran and what was added are in the result."""
        guard = SqlGuard(shared_shop, GuardPolicy(join_missing=True))
        result = guard.execute("SELECT s.id, city FROM sales s WHERE s.id <= 3 ORDER BY s.id")
        assert result.rows == [(1, "  Porto "), (2, "Leeds"), (3, "Lyon")]
        join = (
            "JOIN employees ON employees.id = s.employee_id "
            "JOIN stores ON stores.id = employees.store_id"
        )
        assert result.repaired == (
            f"city is a column of stores, which the query did not read: {join} added"
        )
        assert join in result.sql
        summary = result.summary()
        assert (summary["sql"], summary["repaired"]) == (result.sql, result.repaired)
        qualified = guard.execute("SELECT stores.city FROM employees WHERE employees.id = 1")
        assert qualified.rows == [("Lyon",)]
        # the statement's own bare columns are named first: joined, `name` would be ambiguous
        named = guard.execute("SELECT name, city FROM employees WHERE id = 2")
        assert named.rows == [("Bruno Silva", "  Porto ")]
        assert "repaired" not in guard.execute("SELECT city FROM stores").summary()
        with pytest.raises(ToolError, match=r"then read stores\.city$"):
            SqlGuard(shared_shop).execute("SELECT city FROM sales")  # off by default

    def test_join_missing_adds_a_join_per_column_then_shows_the_next_mistake(
        self, shared_shop: Path
    ) -> None:
        """Told only about the join the guard would add anyway, the 1.5B never saw the other
        column it had wrong (eight turns); the statement as joined says it, joins named."""
        guard = SqlGuard(shared_shop, GuardPolicy(join_missing=True))
        result = guard.execute("SELECT category, city, count(*) FROM sales GROUP BY 1, 2")
        assert len(result.rows) == 9
        assert result.repaired is not None
        assert [part.split(",")[0] for part in result.repaired.split("; ")] == [
            "category is a column of products",
            "city is a column of stores",
        ]
        with pytest.raises(ToolError) as info:
            guard.execute("SELECT city, colour FROM employees")
        message = str(info.value)
        assert message.startswith("SQLite error: no such column: colour; the columns of ")
        assert message.endswith(
            "(the guard had added: city is a column of stores, which the query did not read: "
            "JOIN stores ON stores.id = employees.store_id added)"
        )

    def test_join_missing_joins_inside_the_subquery_that_reads_the_column(
        self, shared_shop: Path
    ) -> None:
        """The 1.5B sent `… IN (SELECT customer_id FROM customers WHERE country_name = …)` six
        times, told the join each time; the join goes into the subquery's own FROM."""
        guard = SqlGuard(shared_shop, GuardPolicy(join_missing=True))
        sql = (
            "SELECT count(*) FROM sales WHERE employee_id IN "
            "(SELECT id FROM employees WHERE city = 'Lyon')"
        )
        result = guard.execute(sql)
        # Lyon's store (1) has employees 1 and 4: the sales of i % 4 + 1 in (1, 4), half of 240
        assert result.rows == [(120,)]
        assert result.repaired == (
            "city is a column of stores, which the query did not read: "
            "JOIN stores ON stores.id = employees.store_id added"
        )

    def test_join_missing_leaves_a_write_as_written(self, shop: Path) -> None:
        guard = SqlGuard(shop, GuardPolicy(join_missing=True, allow_writes=True))
        before = digest(shop)
        with pytest.raises(ToolError, match=r"then read stores\.city$"):
            guard.execute(
                "DELETE FROM sales WHERE employee_id IN "
                "(SELECT id FROM employees WHERE city = 'Lyon')"
            )
        assert digest(shop) == before

    def test_join_missing_joins_a_table_named_with_its_column_whose_rows_it_asks_for(
        self, shared_shop: Path
    ) -> None:
        """`AVG(payment.amount) … FROM customer`: the rows of the table named are the point,
        even though they repeat the customer's (a bare `quantity` stays unjoined: below)."""
        guard = SqlGuard(shared_shop, GuardPolicy(join_missing=True))
        result = guard.execute("SELECT sum(sales.quantity) FROM products WHERE name = 'Yoga Mat'")
        expected = guard.execute("SELECT sum(quantity) FROM sales WHERE product_id = 2")
        assert result.rows == expected.rows != [(None,)]
        assert result.repaired is not None
        assert result.repaired.endswith("JOIN sales ON sales.product_id = products.id added")
        # products has a name too, but the column names its table
        named = guard.execute(
            "SELECT sum(quantity) FROM sales WHERE employees.name = 'Alice Martin'"
        )
        alice = guard.execute("SELECT sum(quantity) FROM sales WHERE employee_id = 1")
        assert named.rows == alice.rows != [(None,)]

    @pytest.mark.parametrize(
        ("sql", "expected", "read_as"),
        [
            (
                "SELECT p.name, count(DISTINCT p.employee_id) FROM products p GROUP BY p.name",
                "SELECT p.name, count(DISTINCT s.employee_id) FROM products p JOIN sales s "
                "ON s.product_id = p.id GROUP BY p.name",
                "employee_id is a column of sales, not of products: p read as "
                "products JOIN sales ON sales.product_id = products.id",
            ),
            (
                "SELECT s.store_id, count(*) FROM sales s GROUP BY s.store_id",
                "SELECT e.store_id, count(*) FROM sales s JOIN employees e "
                "ON e.id = s.employee_id GROUP BY e.store_id",
                "store_id is a column of employees, not of sales: s read as "
                "sales JOIN employees ON employees.id = sales.employee_id",
            ),
        ],
    )
    def test_join_missing_reads_a_table_with_its_neighbours_column_under_its_name(
        self, shared_shop: Path, sql: str, expected: str, read_as: str
    ) -> None:
        """`category.film_id`, `T2.CustomerId` of invoice_items: the 1.5B named a key column
        as a table's that has none, the one table next to it that has it named in the error,
        seven turns running. Either way round (a product's sales, a sale's employee)."""
        guard = SqlGuard(shared_shop, GuardPolicy(join_missing=True))
        result = guard.execute(sql)
        assert sorted(result.rows) == sorted(guard.execute(expected).rows)
        assert len(result.rows) == 3
        assert result.repaired == read_as
        assert result.sql.casefold().startswith(sql.split(" FROM ")[0].casefold())

    def test_join_missing_joins_a_table_an_undefined_alias_names_for_a_distinct_list(
        self, shared_shop: Path
    ) -> None:
        """`SELECT DISTINCT e.first_name … WHERE p.model_year = '2025'`, p defined nowhere: the
        1.5B sent it six times, told the three joins each time. A SELECT DISTINCT that counts
        nothing has each row once however often a join repeats it."""
        guard = SqlGuard(shared_shop, GuardPolicy(join_missing=True))
        result = guard.execute(
            "SELECT DISTINCT e.name FROM employees e "
            "WHERE e.title = 'Cashier' AND p.category = 'Sports'"
        )
        assert sorted(result.rows) == [("Alice Martin",), ("Chloe Novak",)]
        assert result.repaired == (
            "category is a column of products, which the query did not read: "
            "JOIN sales ON sales.employee_id = e.id JOIN products ON products.id = "
            "sales.product_id added, and p, which it does not define, read as products"
        )

    @pytest.mark.parametrize(
        ("sql", "why"),
        [
            ("SELECT name, quantity FROM products", "a product's sales: rows repeated"),
            (
                "SELECT e.name FROM employees e WHERE p.category = 'Sports'",
                "not DISTINCT: each employee once per sale",
            ),
            (
                "SELECT DISTINCT count(*) FROM employees e WHERE p.category = 'Sports'",
                "a count of repeated rows",
            ),
            ("SELECT s.product_id FROM stores s", "no table next to stores has it"),
            ("SELECT e.city FROM employees e", "not a key: a column misnamed as likely"),
            (
                "SELECT id FROM sales WHERE product_id IN (SELECT id FROM products WHERE city)",
                "the join would start at the outer SELECT's sales",
            ),
        ],
    )
    def test_join_missing_leaves_what_it_cannot_join_safely_as_written(
        self, shared_shop: Path, sql: str, why: str
    ) -> None:
        guard = SqlGuard(shared_shop, GuardPolicy(join_missing=True))
        with pytest.raises(ToolError, match=r"^SQLite error: no such column: ") as info:
            guard.execute(sql)
        assert "is a column of" in str(info.value), why

    def test_prepares_says_whether_a_statement_would_run_without_running_it(
        self, shared_shop: Path
    ) -> None:
        guard = SqlGuard(shared_shop, GuardPolicy(timeout=0.2))
        endless = (
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
        )
        assert guard.prepares(endless)  # compiled, never run: no timeout
        assert not guard.prepares("SELECT colour FROM products")
        assert not guard.prepares("SELECT * FROM suppliers")
        assert not guard.prepares("DELETE FROM sales")

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


# --- issue 21: implicit columns, time, memory, bytes, size, depth, functions ------------------

RESTRICTED = GuardPolicy(columns={"employees": ["id", "name", "store_id"]})


class TestImplicitColumns:
    @pytest.mark.parametrize(
        ("sql", "reason"),
        [
            (
                "SELECT name FROM employees NATURAL JOIN (SELECT 2100.0 AS salary)",
                r"NATURAL JOIN compares every column its two sides share, and this statement "
                r"reads employees",
            ),
            (
                "SELECT name FROM employees NATURAL LEFT JOIN (SELECT 2100.0 AS salary)",
                r"NATURAL JOIN compares",
            ),
            (
                "SELECT c.salary FROM employees JOIN (SELECT 2100.0 AS salary UNION "
                "SELECT 4200.0) AS c USING (salary)",
                r"JOIN … USING \(salary\) compares column employees.salary, which may not be "
                r"read",
            ),
            (
                "SELECT name FROM (SELECT * FROM employees)",
                r"SELECT \* would read every column of employees",
            ),
        ],
    )
    def test_a_join_that_compares_a_forbidden_column_is_refused(
        self, shared_shop: Path, sql: str, reason: str
    ) -> None:
        """NATURAL, USING and * compare or read columns no expression names: refused."""
        with pytest.raises(QueryRefused, match=reason):
            SqlGuard(shared_shop, RESTRICTED).execute(sql)

    def test_using_an_allowed_column_runs(self, shared_shop: Path) -> None:
        result = SqlGuard(shared_shop, RESTRICTED).execute(
            "SELECT name, s.city FROM employees JOIN (SELECT id AS store_id, city FROM stores) "
            "AS s USING (store_id) ORDER BY employees.id"
        )
        assert result.rows[0] == ("Alice Martin", "Lyon")

    def test_a_write_cannot_copy_a_forbidden_column(self, shop: Path) -> None:
        """With writes allowed, neither a join nor RETURNING * carries a forbidden value into
        an allowed column or back to the model; the file is untouched."""
        policy = GuardPolicy(allow_writes=True, columns={"employees": ["id", "name", "title"]})
        guard, before = SqlGuard(shop, policy), digest(shop)
        for sql, reason in (
            (
                "UPDATE employees SET title = (SELECT 'hit' FROM employees AS e NATURAL JOIN "
                "(SELECT 2100.0 AS salary) WHERE e.id = employees.id)",
                r"NATURAL JOIN compares",
            ),
            ("UPDATE employees SET title = 'x' RETURNING *", r"SELECT \* would read every"),
        ):
            with pytest.raises(QueryRefused, match=reason):
                guard.execute(sql)
        assert digest(shop) == before


SLOW_STEPS = (
    # Few SQLite steps (the progress handler, every 1,000, never runs), each a long one.
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40) "
    "SELECT count(length(hex(randomblob(8000000)))) FROM n"
)


class TestResourceBounds:
    def test_the_timeout_binds_within_long_steps(self, shared_shop: Path) -> None:
        """A watchdog interrupts from outside: a statement of few, long steps is stopped."""
        guard = SqlGuard(shared_shop, GuardPolicy(timeout=0.1))
        with pytest.raises(QueryTimeout, match=r"ran longer than 0.1 s and was stopped"):
            guard.execute(SLOW_STEPS)

    def test_the_watchdog_leaves_no_thread(self, shared_shop: Path) -> None:
        """Its own timer threads, by name: other tests' threads in this process are not its."""
        import threading

        guard = SqlGuard(shared_shop)
        for _ in range(20):
            guard.execute("SELECT 1")
        assert not [t for t in threading.enumerate() if t.name == WATCHDOG_THREAD]

    def test_a_value_sqlite_builds_is_bounded(self, shared_shop: Path) -> None:
        """SQLITE_LIMIT_LENGTH stops a value past max_built_bytes, whichever function builds it."""
        guard = SqlGuard(shared_shop, GuardPolicy(max_built_bytes=1_000_000))
        for sql in (
            "SELECT length(zeroblob(2000000))",
            "SELECT length(group_concat(hex(randomblob(1000)))) FROM sales, products",
        ):
            with pytest.raises(ToolError, match=r"longer than 1,000,000 bytes .*max_built_bytes"):
                guard.execute(sql)
        assert guard.execute("SELECT length(zeroblob(900000))").rows == [(900000,)]

    @pytest.mark.parametrize(
        ("sql", "reason"),
        [
            ("SELECT printf('%.*c', 1000000000, 'x')", r"printf\(\) with `\*` widths"),
            ("SELECT length(printf('%.1000000000c', 'x'))", r"asks for 1,000,000,000 characters"),
            ("SELECT format('%*d', 1000000000, 1)", r"format\(\) with `\*` widths"),
            ("SELECT printf(name, 1) FROM stores", r"printf\(\) needs a literal format"),
        ],
    )
    def test_a_format_that_loops_unbounded_is_refused(
        self, shared_shop: Path, sql: str, reason: str
    ) -> None:
        """printf loops once per unit of precision in one step: its format must bound it."""
        with pytest.raises(QueryRefused, match=reason):
            SqlGuard(shared_shop).execute(sql)
        assert SqlGuard(shared_shop).execute("SELECT printf('%.2f', 3.14159)").rows == [("3.14",)]

    def test_instr_runs_in_linear_time(self, shared_shop: Path) -> None:
        """SQLite's instr is quadratic in one step; the guard's is not, and answers alike."""
        guard = SqlGuard(shared_shop, GuardPolicy(timeout=0.5))
        text = "replace(hex(zeroblob({})), '0', 'a')"
        worst = f"SELECT instr({text.format(300_000)}, {text.format(150_000)} || 'b')"
        assert guard.execute(worst).rows == [(0,)]
        assert guard.execute(
            "SELECT instr('hello', 'll'), instr('héllo', 'l'), instr(x'0102', x'02'), "
            "instr(NULL, 'a'), instr(12345, 34), instr('abc', 'z')"
        ).rows == [(3, 3, 2, None, 3, 0)]


class TestResultBytes:
    @pytest.fixture
    def blobs(self, tmp_path: Path) -> Path:
        path = tmp_path / "blobs.sqlite"
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE files (id INTEGER PRIMARY KEY, body BLOB, title TEXT)")
            db.executemany(
                "INSERT INTO files (body, title) VALUES (?, ?)",
                [(bytes(200_000), "é" * 50_000) for _ in range(30)],
            )
        db.close()
        return path

    def test_values_and_results_are_cut_in_bytes(self, blobs: Path) -> None:
        """Each value is cut at max_value_bytes, rows stop at max_result_bytes, and the note
        says both."""
        policy = GuardPolicy(max_value_bytes=1_000, max_result_bytes=10_000)
        result = SqlGuard(blobs, policy).execute("SELECT id, body, title FROM files")
        assert len(result.rows) == 4
        assert result.truncated
        assert {len(r[1]) for r in result.rows} == {1_000}
        assert {len(r[2].encode()) for r in result.rows} == {1_000}
        assert result.note is not None
        assert "value(s) longer than max_value_bytes=1,000 bytes were cut" in result.note
        assert "rows stop at 4: the next would take the result past max_result_bytes" in (
            result.note
        )
        assert result.summary()["note"] == result.note

    def test_a_small_result_has_no_note(self, shared_shop: Path) -> None:
        result = SqlGuard(shared_shop).execute("SELECT name FROM stores")
        assert (result.note, result.truncated) == (None, False)


class TestTextBounds:
    @pytest.mark.parametrize(
        ("sql", "reason"),
        [
            ("SELECT " + "(" * 60 + "1" + ")" * 60, r"nested 60 levels deep .*max_depth"),
            ("SELECT " + "(SELECT " * 60 + "1" + ")" * 60, r"nested 60 levels deep"),
            ("SELECT " + "NOT " * 200 + "1", r"nested 200 levels deep"),
            ("SELECT " + "- " * 500 + "1", r"nested 500 levels deep"),
            (
                "SELECT 1 WHERE 1 IN (" + ", ".join(map(str, range(120_000))) + ")",
                r"848,910 characters long, more than the 20,000 the guard reads",
            ),
        ],
    )
    def test_too_deep_or_too_long_is_refused_before_parsing(
        self, shared_shop: Path, sql: str, reason: str
    ) -> None:
        """No RecursionError, no long parse: a refusal that says which limit."""
        with pytest.raises(QueryRefused, match=reason):
            SqlGuard(shared_shop).execute(sql)

    def test_nesting_within_the_limit_runs(self, shared_shop: Path) -> None:
        sql = "SELECT " + "(" * 20 + "1" + ")" * 20
        assert SqlGuard(shared_shop).execute(sql).rows == [(1,)]


class TestFunctions:
    @pytest.mark.parametrize(
        ("sql", "reason"),
        [
            ("SELECT fts3_tokenizer('simple')", r"function fts3_tokenizer reaches outside"),
            ("SELECT rtreenode(2, x'00')", r"function rtreenode may not be called: it is not on"),
            ("SELECT sqlite_compileoption_get(0)", r"sqlite_compileoption_get may not be called"),
        ],
    )
    def test_a_function_off_the_allow_list_is_refused(
        self, shared_shop: Path, sql: str, reason: str
    ) -> None:
        with pytest.raises(QueryRefused, match=reason):
            SqlGuard(shared_shop).execute(sql)

    def test_sqlite_enforces_the_function_list_too(self, shared_shop: Path) -> None:
        """The authorizer sees every function SQLite resolves, by SQLite's own name."""
        guard = SqlGuard(shared_shop)
        for sql, refused in (
            ("SELECT fts3_tokenizer('simple')", "function fts3_tokenizer is not allowed"),
            ("SELECT rtreedepth(x'00')", "function rtreedepth is not on the allow-list"),
        ):
            with (
                guard._fenced() as (connection, denied),
                pytest.raises(sqlite3.DatabaseError, match=r"not authorized|prohibited"),
            ):
                connection.execute(sql)
            assert any(d.startswith(refused) for d in denied)

    def test_the_policy_adds_functions_but_never_dangerous_ones(self, shared_shop: Path) -> None:
        policy = GuardPolicy(functions=["sqlite_compileoption_used"])
        assert (
            SqlGuard(shared_shop, policy)
            .execute("SELECT sqlite_compileoption_used('THREADSAFE')")
            .rows
        )
        ok = SqlGuard(shared_shop).execute(
            "SELECT upper(name), round(avg(price), 1), json_object('n', count(*)), "
            "'{\"a\": 1}' ->> '$.a', strftime('%Y', '2024-05-01') FROM products"
        )
        assert ok.rows
        with pytest.raises(UserError, match=r"functions name fts3_tokenizer, which no policy"):
            SqlGuard(shared_shop, GuardPolicy(functions=["FTS3_tokenizer"]))
