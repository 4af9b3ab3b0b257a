"""The distinct values of a database, matched with a question's words: in SQLite, with FTS5.

`ValueIndex.build` copies every distinct text value (`agentrt.sql.database.all_values`: numbers
stored as text included, within a budget per database) into a SQLite file of its own, twice
searchable:

- word for word: each value under its key, the Porter stems of its words (`agentrt.sql._text`),
  looked up for every run of consecutive words of the question ("Isaac Newman's" finds
  'Isaac Newman', "yoga mats" finds 'Yoga Mat');
- by FTS5 (the porter tokenizer), for values that hold some of the question's words but are
  not said whole ("Kabul" finds 'Kabul Province').

No cap per column: a value in the long tail of a large column is found as surely as a frequent
one. Built once beside the schema index's cache (`values.sqlite`), then opened read-only.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from agentrt.sql._text import stems

__all__ = ["ValueHit", "ValueIndex"]

ValueHit = tuple[str, str, str]
"""`(table, column, value)`: a value as stored (trimmed), and where."""

_SCHEMA = """
CREATE TABLE value (id INTEGER PRIMARY KEY, tbl TEXT, col TEXT, value TEXT, key TEXT);
CREATE INDEX value_key ON value (key);
CREATE VIRTUAL TABLE value_text USING fts5 (
    value, content = 'value', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
"""


class ValueIndex:
    """The values of one database, looked up by the stems of their words. Build it with
    `build` or `open` one built before; safe to use from several threads."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection
        self._lock = threading.Lock()
        """One connection, one query at a time: `aground` calls come from worker threads."""
        words = "length(key) - length(replace(key, ' ', '')) + 1"
        self.longest = int(
            connection.execute(f"SELECT coalesce(max({words}), 1) FROM value").fetchone()[0]
        )
        """The most words a value's key has: the longest run of the question worth looking up."""

    @classmethod
    def build(cls, values: Iterable[ValueHit], target: Path | None) -> ValueIndex:
        """Index `values` into the file `target` (replaced when it exists), or in memory."""
        if target is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(".partial")
            partial.unlink(missing_ok=True)
            connection = sqlite3.connect(partial)
        else:
            connection = sqlite3.connect(":memory:", check_same_thread=False)
        connection.executescript(_SCHEMA)
        connection.executemany(
            "INSERT INTO value (tbl, col, value, key) VALUES (?, ?, ?, ?)",
            ((t, c, v, " ".join(stems(v))) for t, c, v in values),
        )
        connection.execute("INSERT INTO value_text (value_text) VALUES ('rebuild')")
        connection.commit()
        if target is None:
            return cls(connection)
        connection.close()
        partial.replace(target)
        return cls.open(target)

    @classmethod
    def open(cls, path: Path) -> ValueIndex:
        """The index built before at `path`, read-only."""
        uri = f"{path.resolve().as_uri()}?mode=ro"
        return cls(sqlite3.connect(uri, uri=True, check_same_thread=False))

    def __len__(self) -> int:
        with self._lock:
            return int(self._connection.execute("SELECT count(*) FROM value").fetchone()[0])

    def literal(self, keys: Sequence[str], limit: int = 500) -> list[tuple[ValueHit, str]]:
        """The values whose key is one of `keys` (stems joined by spaces), each with its key."""
        if not keys:
            return []
        marks = ", ".join("?" * len(keys))
        with self._lock:
            rows = self._connection.execute(
                f"SELECT tbl, col, value, key FROM value WHERE key IN ({marks}) LIMIT ?",
                (*keys, limit),
            ).fetchall()
        return [((t, c, v), k) for t, c, v, k in rows]

    def holding(self, text: str) -> list[ValueHit]:
        """The values whose words are those of `text` (as stems): where a value is stored."""
        return [hit for hit, _ in self.literal([" ".join(stems(text))])]

    def search(self, words: Sequence[str], limit: int) -> list[tuple[ValueHit, str]]:
        """The `limit` values best matching any of `words` by FTS5's BM25, each with its key."""
        if not words:
            return []
        query = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        with self._lock:
            rows = self._connection.execute(
                "SELECT v.tbl, v.col, v.value, v.key FROM value_text JOIN value AS v "
                "ON v.id = value_text.rowid WHERE value_text MATCH ? ORDER BY rank LIMIT ?",
                (query, limit),
            ).fetchall()
        return [((t, c, v), k) for t, c, v, k in rows]

    def close(self) -> None:
        with self._lock:
            self._connection.close()
