"""The index of a database's values: SQLite, looked up by stems and by FTS5."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agentrt.sql.values import ValueIndex

VALUES = [
    ("city", "name", "Kabul"),
    ("city", "name", "Mexico City"),
    ("country", "name", "United States of America"),
    ("employee", "role", "Stock Clerks"),
]


class TestValueIndex:
    def test_built_to_a_file_then_opened_read_only(self, tmp_path: Path) -> None:
        target = tmp_path / "values.sqlite"
        built = ValueIndex.build(VALUES, target)
        assert len(built) == 4
        assert built.longest == 4
        built.close()
        opened = ValueIndex.open(target)
        assert opened.literal(["kabul"]) == [(("city", "name", "Kabul"), "kabul")]
        assert not list(target.parent.glob("*.partial"))
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            opened._connection.execute("DELETE FROM value")

    def test_keys_are_the_porter_stems_of_the_words(self) -> None:
        index = ValueIndex.build(VALUES, None)
        hits = index.literal(["stock clerk", "mexico citi"])
        assert {hit for hit, _ in hits} == {
            ("employee", "role", "Stock Clerks"),
            ("city", "name", "Mexico City"),
        }
        assert index.literal([]) == []

    def test_fts5_finds_values_holding_some_of_the_words(self) -> None:
        index = ValueIndex.build(VALUES, None)
        found = [hit for hit, _ in index.search(["america", "cities"], limit=5)]
        assert set(found) == {
            ("country", "name", "United States of America"),
            ("city", "name", "Mexico City"),
        }
        assert index.search(['say "what'], limit=5) == []
        assert index.search([], limit=5) == []
