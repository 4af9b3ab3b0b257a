"""The independent grounding set (benchmarks/data/grounding_samples/) holds what it promises:
the databases build the same from the seed, every gold SQL runs on them, the labels are the
ones sqlglot computes from the SQL, the split is the sha1 rule's, and each schema has the
composite keys, undeclared joins, numbers stored as text and long tails its README names."""

from __future__ import annotations

import importlib.util
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.helpers import ROOT

HERE = ROOT / "benchmarks" / "data" / "grounding_samples"
DATABASES = ("sakila", "chinook", "erp")


def _load_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("grounding_samples_build", HERE / "build.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses look their module up in sys.modules while the class is being made.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


build = _load_build()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three databases, built by the script as its README says to run it."""
    out = tmp_path_factory.mktemp("grounding_samples")
    done = subprocess.run(
        [sys.executable, str(HERE / "build.py"), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return out


def _connect(path: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(path)
    try:
        yield connection
    finally:
        connection.close()


@pytest.fixture(params=DATABASES)
def database(
    request: pytest.FixtureRequest, built: Path
) -> Iterator[tuple[str, sqlite3.Connection]]:
    name: str = request.param
    for connection in _connect(built / f"{name}.db"):
        yield name, connection


def _questions(name: str, part: str = "questions") -> list[dict[str, Any]]:
    questions: list[dict[str, Any]] = build.load(name, part)
    return questions


class TestBuild:
    def test_the_same_seed_gives_the_same_database(self, built: Path, tmp_path: Path) -> None:
        """A second build writes the same rows, table for table."""
        for name in DATABASES:
            again = build.build(name, tmp_path)
            for first in _connect(built / f"{name}.db"):
                for second in _connect(again):
                    assert list(first.iterdump()) == list(second.iterdump()), name

    def test_bad_arguments_print_the_usage(self) -> None:
        """An unknown flag exits non-zero with the usage, and builds nothing."""
        done = subprocess.run(
            [sys.executable, str(HERE / "build.py"), "--what"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 1
        assert "python build.py OUTDIR" in done.stderr


class TestQuestions:
    def test_there_are_about_seventy_distinct_questions(self) -> None:
        """About seventy per database, none asked twice."""
        for name in DATABASES:
            texts = [q["q"] for q in _questions(name)]
            assert 65 <= len(texts) <= 80, name
            assert len(set(texts)) == len(texts), name

    def test_every_gold_sql_runs(self, database: tuple[str, sqlite3.Connection]) -> None:
        """Each gold query executes on the built database without error."""
        name, connection = database
        for question in _questions(name):
            try:
                connection.execute(question["sql"]).fetchall()
            except sqlite3.Error as error:
                pytest.fail(f"{name}: {question['q']!r}: {error}")

    def test_labels_are_the_ones_computed_from_the_sql(self) -> None:
        """tables, columns and values equal what `build.py --label` derives with sqlglot."""
        for name in DATABASES:
            tables = build.schema(name)
            for question in _questions(name):
                stored = {k: question[k] for k in ("tables", "columns", "values")}
                assert stored == build.label(question["sql"], tables), question["q"]

    def test_every_value_occurs_in_its_column(
        self, database: tuple[str, sqlite3.Connection]
    ) -> None:
        """A value label names a value the database holds, so an index can find it."""
        name, connection = database
        for question in _questions(name):
            for value in question["values"]:
                where, text = value.split("=", 1)
                table, column = where.split(".")
                query = f'SELECT 1 FROM "{table}" WHERE "{column}" = ? LIMIT 1'
                assert connection.execute(query, (text,)).fetchone(), (name, value)

    def test_the_labels_cover_what_the_set_is_for(self) -> None:
        """Across the set: values, composite-key tables and undeclared joins are asked for."""
        everything = [q for name in DATABASES for q in _questions(name)]
        tables = {t for q in everything for t in q["tables"]}
        assert {"film_actor", "playlist_track", "job_history", "order_items"} <= tables
        columns = {c for q in everything for c in q["columns"]}
        assert {"rental.staff_id", "invoice_items.TrackId", "order_items.product_id"} <= columns
        assert sum(bool(q["values"]) for q in everything) >= 150


class TestSplit:
    def test_the_halves_are_disjoint_and_cover_every_question(self) -> None:
        """Per database, tuning and held-out share nothing and together are the questions."""
        for name in DATABASES:
            tuning = [q["q"] for q in _questions(name, "tuning")]
            heldout = [q["q"] for q in _questions(name, "heldout")]
            assert tuning, name
            assert heldout, name
            assert not set(tuning) & set(heldout), name
            assert sorted(tuning + heldout) == sorted(q["q"] for q in _questions(name)), name

    def test_the_split_is_the_sha1_rule(self) -> None:
        """Recomputing the split from the questions gives the stored halves, entry for entry."""
        for name in DATABASES:
            tuning, heldout = build.split(_questions(name))
            assert tuning == _questions(name, "tuning"), name
            assert heldout == _questions(name, "heldout"), name


def _columns(connection: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    tables = [
        t for (t,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    ]
    return {t: connection.execute(f'PRAGMA table_info("{t}")').fetchall() for t in tables}


def _undeclared_joins(connection: sqlite3.Connection) -> list[str]:
    """Columns named as another table's single-column key, without REFERENCES, whose every
    value is one of that key's values."""
    info = _columns(connection)
    keys = {}
    for table, columns in info.items():
        pk = [c[1] for c in columns if c[5]]
        if len(pk) == 1:
            keys[pk[0]] = table
    found = []
    for table, columns in info.items():
        declared = {fk[3] for fk in connection.execute(f'PRAGMA foreign_key_list("{table}")')}
        for column in (c[1] for c in columns):
            parent = keys.get(column)
            if parent in (None, table) or column in declared:
                continue
            orphans = connection.execute(
                f'SELECT COUNT(*) FROM "{table}" WHERE "{column}" NOT IN '
                f'(SELECT "{column}" FROM "{parent}")'
            ).fetchone()[0]
            if orphans == 0:
                found.append(f"{table}.{column}")
    return found


class TestSchemas:
    def test_each_has_a_composite_primary_key(
        self, database: tuple[str, sqlite3.Connection]
    ) -> None:
        name, connection = database
        composite = [t for t, cs in _columns(connection).items() if sum(c[5] > 0 for c in cs) > 1]
        assert composite, name

    def test_each_has_an_undeclared_join(self, database: tuple[str, sqlite3.Connection]) -> None:
        name, connection = database
        expected = {
            "sakila": {"inventory.store_id", "rental.staff_id", "payment.rental_id"},
            "chinook": {"tracks.MediaTypeId", "invoice_items.TrackId"},
            "erp": {
                "locations.country_id",
                "inventories.warehouse_id",
                "order_items.product_id",
                "shipments.shipper_id",
            },
        }[name]
        assert expected <= set(_undeclared_joins(connection))

    def test_each_stores_numbers_as_text(self, database: tuple[str, sqlite3.Connection]) -> None:
        """A TEXT column whose every value is digits."""
        name, connection = database
        numeric_text = [
            f"{t}.{c[1]}"
            for t, cs in _columns(connection).items()
            for c in cs
            if c[2].upper() == "TEXT"
            and connection.execute(
                f"SELECT COUNT(*) > 0 AND SUM(\"{c[1]}\" GLOB '*[^0-9]*') = 0 "
                f'FROM "{t}" WHERE "{c[1]}" IS NOT NULL'
            ).fetchone()[0]
        ]
        assert numeric_text, name

    def test_each_has_a_long_tail_column(self, database: tuple[str, sqlite3.Connection]) -> None:
        """A text column with more distinct values than a 200-per-column index could hold,
        by far."""
        name, connection = database
        widest = max(
            connection.execute(f'SELECT COUNT(DISTINCT "{c[1]}") FROM "{t}"').fetchone()[0]
            for t, cs in _columns(connection).items()
            for c in cs
            if c[2].upper() == "TEXT"
        )
        assert widest > 1000, name

    def test_each_shares_column_names_across_tables(
        self, database: tuple[str, sqlite3.Connection]
    ) -> None:
        """Some column name (name, last_update, an *_id) appears in three tables or more."""
        name, connection = database
        counts: dict[str, int] = {}
        for columns in _columns(connection).values():
            for c in columns:
                counts[c[1]] = counts.get(c[1], 0) + 1
        assert max(counts.values()) >= 3, name

    def test_one_has_twenty_tables_or_more(self, built: Path) -> None:
        for connection in _connect(built / "erp.db"):
            assert len(_columns(connection)) >= 20
