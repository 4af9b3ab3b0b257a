"""Finding, opening and describing a SQLite database."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agentrt.exceptions import UserError
from agentrt.sql.database import connect_readonly, database_path, read_schema, read_values

from .shop import digest


class TestDatabasePath:
    def test_a_path_and_the_urls_name_the_same_file(
        self, shared_shop: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A path, sqlite:////absolute, and sqlite:///relative (to the working folder)."""
        monkeypatch.chdir(shared_shop.parent.parent)
        relative = f"{shared_shop.parent.name}/{shared_shop.name}"
        assert database_path(shared_shop) == shared_shop
        assert database_path(str(shared_shop)) == shared_shop
        assert database_path(f"sqlite:///{shared_shop}") == shared_shop  # four slashes
        assert database_path(f"sqlite:///{relative}") == shared_shop
        assert database_path(f"sqlite+pysqlite:///{relative}") == shared_shop

    @pytest.mark.parametrize(
        ("database", "reason"),
        [
            ("postgresql://db.example/shop", r"is not a SQLite URL: only sqlite:///path"),
            ("sqlite://host/shop.sqlite", r"a SQLite URL has no host"),
            ("sqlite://", r"is an in-memory database"),
            ("sqlite:///:memory:", r"is an in-memory database"),
            ("sqlite:///no/such/file.sqlite", r"no SQLite database at .*no/such/file.sqlite"),
            ("/no/such/file.sqlite", r"no SQLite database at /no/such/file.sqlite"),
        ],
    )
    def test_bad_input_says_what_is_wrong(self, database: str, reason: str) -> None:
        with pytest.raises(UserError, match=reason):
            database_path(database)


class TestReadOnly:
    def test_the_connection_cannot_write(self, shop: Path) -> None:
        before = digest(shop)
        with connect_readonly(shop) as connection, pytest.raises(sqlite3.OperationalError):
            connection.execute("DELETE FROM sales")
        with connect_readonly(shop) as connection, pytest.raises(sqlite3.OperationalError):
            connection.execute("CREATE TEMP TABLE scratch (x)")
        assert digest(shop) == before


class TestSchema:
    def test_tables_columns_keys_and_views(self, shared_shop: Path) -> None:
        schema = read_schema(shared_shop)
        assert [t.name for t in schema.tables] == [
            "employees",
            "products",
            "sales",
            "store_staff",
            "stores",
        ]
        stores = schema.table("STORES")
        assert stores is not None
        assert [(c.name, c.type, c.primary_key, c.not_null) for c in stores.columns] == [
            ("id", "INTEGER", True, False),
            ("name", "TEXT", False, True),
            ("city", "TEXT", False, False),
        ]
        view = schema.table("store_staff")
        assert view is not None
        assert view.view
        keys = {(k.table, k.column, k.ref_table, k.ref_column) for k in schema.foreign_keys}
        assert keys == {
            ("employees", "store_id", "stores", "id"),
            ("sales", "employee_id", "employees", "id"),
            # `REFERENCES products` without a column: the primary key is meant.
            ("sales", "product_id", "products", "id"),
        }

    def test_the_fingerprint_follows_the_schema_not_the_rows(self, shop: Path) -> None:
        first = read_schema(shop).fingerprint
        with sqlite3.connect(shop) as connection:
            connection.execute("INSERT INTO stores VALUES (9, 'Lakeside', 'Turin')")
        connection.close()
        assert read_schema(shop).fingerprint == first
        with sqlite3.connect(shop) as connection:
            connection.execute("ALTER TABLE stores ADD COLUMN region TEXT")
        connection.close()
        assert read_schema(shop).fingerprint != first

    def test_values_are_textual_trimmed_distinct_and_bounded(self, shared_shop: Path) -> None:
        """Text only (no numbers, no dates), trimmed, the most frequent first, at most N."""
        schema = read_schema(shared_shop)
        values = read_values(shared_shop, schema, per_column=2)
        assert values[("stores", "city")] == ["Leeds", "Lyon"]
        assert all(len(v) <= 2 for v in values.values())
        everything = read_values(shared_shop, schema, per_column=100)
        assert "Porto" in everything[("stores", "city")]  # stored as "  Porto "
        assert ("sales", "sold_on") not in everything  # dates are not names
        assert ("sales", "quantity") not in everything
        assert ("store_staff", "store") not in everything  # views repeat their tables
