"""The multi-hop family's one tool: a full-text search over its paragraphs.

The paragraphs are in `documents.db` beside `tools/` (an SQLite FTS5 table `docs(title,
text)`, porter-stemmed), which `benchmarks/agents_multihop.py` builds when it writes this
workspace. A query is read as words, any of which may match, ranked by BM25.
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from pathlib import Path

from agentrt import tool

DATABASE = Path(__file__).resolve().parents[1] / "documents.db"
TOP = 3
_STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "that",
        "the",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "with",
    }
)


@tool
def search(query: str) -> list[dict[str, str]]:
    """Search the encyclopedia for paragraphs about a name or a topic; returns the best three,
    each with its title and text.

    Args:
        query: A few words, e.g. the name of a person, a company, a town or a river.
    """
    words = [w for w in re.findall(r"\w+", query.lower()) if w not in _STOPWORDS]
    if not words:
        return []
    # Each word quoted: FTS5 reads a bare word like AND or NEAR as an operator.
    match = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
    with closing(sqlite3.connect(f"file:{DATABASE}?mode=ro", uri=True)) as db:
        rows = db.execute(
            "SELECT title, text FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?",
            (match, TOP),
        ).fetchall()
    return [{"title": title, "text": text} for title, text in rows]
