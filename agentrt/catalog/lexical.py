"""Internal. Lexical tool retrieval: SQLite FTS5 BM25 over the same documents the dense index
embeds (`ToolMetadata.document`).

A dense vector keeps a query's gist and loses its words: the verb ("list" servers, not add
one), the key noun, a brand name inside a description. BM25 keeps exactly those. The table is
in memory (a 3,000-tool catalog indexes in tens of milliseconds, so it is rebuilt rather than
cached) and read only once built.

Two columns: the tool's name split into words (`send_email` → "send email", `getHTTPStatus`
→ "get http status"), then its whole document. `porter unicode61` stems both sides, so
"emails", "emailing" and "email" meet. A query becomes an OR of its quoted words: quoting makes
FTS5 read every word as a word (a user's `"`, `*`, `NEAR` or `-` never raise); OR lets BM25 rank
a tool holding most of the words first without requiring all of them.
"""

from __future__ import annotations

import math
import re
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["LexicalIndex", "LexicalResult", "name_words", "query_terms"]

_WORD = re.compile(r"\w+", re.UNICODE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

# BM25 column weights: a query word in the tool's name says more than one in its description.
_NAME_WEIGHT = 2.0
_TEXT_WEIGHT = 1.0
DF_CACHE = 65_536
"""Words whose document frequency is kept: queries bring new words (names, numbers, typos) for
as long as a server runs, so the cache forgets its oldest past this."""


def name_words(name: str) -> str:
    """A tool name as words: snake_case, kebab-case, dotted and camelCase split."""
    return " ".join(_CAMEL.sub(" ", part).lower() for part in re.split(r"[\W_]+", name) if part)


def query_terms(text: str) -> list[str]:
    """The words of `text`, lower-cased, in order, each once (`_` splits words, as in names)."""
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(text.replace("_", " "))))


@dataclass(frozen=True)
class LexicalResult:
    ranked: list[tuple[int, float]]
    """(document row, BM25 score, higher is better), best first."""
    coverage: float
    """The share of the query's information (IDF-weighted words) that the catalog knows at all:
    0 when none of its words is in any document, 1 when every one is."""


class LexicalIndex:
    """BM25 over a fixed list of tool documents, rows numbered as given."""

    def __init__(self, names: Sequence[str], documents: Sequence[str]) -> None:
        # Built in a worker thread, queried from the event loop's: one connection, never
        # written after this, used under a lock (a query takes tens of microseconds).
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._lock = threading.Lock()
        self._db.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(name, text, tokenize = 'porter unicode61')"
        )
        self._db.executemany(
            "INSERT INTO docs(rowid, name, text) VALUES (?, ?, ?)",
            [(i, name_words(n), d) for i, (n, d) in enumerate(zip(names, documents, strict=True))],
        )
        self._db.commit()
        self.size = len(names)
        self._df: dict[str, int] = {}

    def search(self, text: str, k: int) -> LexicalResult:
        """The best `k` documents for `text` by BM25, and how much of `text` the catalog knows."""
        terms = query_terms(text)
        if not terms or k <= 0 or not self.size:
            return LexicalResult([], 0.0)
        with self._lock:
            df = [self._document_frequency(t) for t in terms]
            # A word in more than half the documents ("the", "a") has an IDF FTS5 clamps to
            # nearly 0: it cannot change the order, but matching it would score most of the
            # catalog (milliseconds at 3,000 tools).
            telling = [t for t, d in zip(terms, df, strict=True) if 0 < d <= self.size / 2]
            rows = (
                self._db.execute(
                    f"SELECT rowid, -bm25(docs, {_NAME_WEIGHT}, {_TEXT_WEIGHT}) AS score "
                    "FROM docs WHERE docs MATCH ? ORDER BY score DESC LIMIT ?",
                    (" OR ".join(f'"{t}"' for t in telling), k),
                ).fetchall()
                if telling
                else []
            )
        return LexicalResult([(int(r), float(s)) for r, s in rows], self._coverage(df))

    def term_share(self, text: str, row: int) -> float:
        """The IDF-weighted share of `text`'s words that document `row` holds (0 to 1)."""
        terms = query_terms(text)
        with self._lock:
            df = [self._document_frequency(t) for t in terms]
            held = [
                d > 0
                and self._db.execute(
                    "SELECT 1 FROM docs WHERE docs MATCH ? AND rowid = ?", (f'"{t}"', row)
                ).fetchone()
                is not None
                for t, d in zip(terms, df, strict=True)
            ]
        weights = self._weights(df)
        total = sum(weights)
        return sum(w for w, h in zip(weights, held, strict=True) if h) / total if total else 0.0

    def _document_frequency(self, term: str) -> int:
        """How many documents hold `term` (stemmed as FTS5 stems it); cached, the index is fixed."""
        count = self._df.get(term)
        if count is None:
            (count,) = self._db.execute(
                "SELECT count(*) FROM docs WHERE docs MATCH ?", (f'"{term}"',)
            ).fetchone()
            if len(self._df) >= DF_CACHE:
                del self._df[next(iter(self._df))]  # the oldest: dicts keep insertion order
            self._df[term] = count
        return count

    def _weights(self, df: list[int]) -> list[float]:
        """Each word's IDF from its document frequency (an unknown word as a df of 1)."""
        return [math.log(1 + self.size / max(d, 1)) for d in df]

    def _coverage(self, df: list[int]) -> float:
        """IDF-weighted share of the query's words found in the catalog. A word no document
        holds weighs as much as the rarest word possible (IDF of a df of 1): it is exactly the
        word that says what the user wants, and the catalog does not have it."""
        weights = self._weights(df)
        total = sum(weights)
        known = sum(w for w, d in zip(weights, df, strict=True) if d)
        return known / total if total else 0.0
