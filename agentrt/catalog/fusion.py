"""Internal. How the dense and lexical rankings of one query become one, how a request for
several things is split, and how sure retrieval is that any tool fits.

The rules here were chosen by `benchmarks/retrieval.py` over several query styles (natural
requests, short commands, multi-intent requests, requests no tool serves), not tuned to one:

- **Fusion.** Each ranking's scores are min-max normalised over its own candidates; the dense
  one counts fully, the lexical one by its `coverage`, the share of the query's information
  (IDF-weighted words) that the catalog's vocabulary knows. A request in the catalog's own
  words leans on BM25 (it keeps the verb, the key noun, the brand); a paraphrase whose words no
  tool uses leans on the embedding, and BM25's chance matches on its filler words weigh little.
  Reciprocal-rank fusion and a fixed 50/50 blend both lost to it on every style.
- **Multi-intent.** A query is split into clauses; each clause, and the whole query, retrieves,
  and the rankings are merged round-robin by rank (clauses first), so a minor request keeps
  its best tool instead of losing it to the main request's third and fourth.
- **Fit.** The mean of the best tool's cosine similarity and the IDF-weighted share of the
  query's words its document holds: it separates requests some tool serves from those none
  does better than the cosine alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["fit", "fuse", "round_robin", "split_intents"]

# Clause boundaries of a request for several things: ";", "then", "and then", "also", "plus",
# ", and", and sentence ends. "and" alone is not one: "sales and margin per region" is one
# request.
_CLAUSE = re.compile(
    r";|(?<=[.!?])\s+|,\s*and\b|\b(?:and\s+)?then\b|\balso\b|\bplus\b", re.IGNORECASE
)
_WORD = re.compile(r"\w")


def split_intents(text: str) -> list[str]:
    """The clauses of `text` (stripped, at least one word each), then `text` itself; just
    `[text]` when it has one clause."""
    parts = [p.strip(" ,.") for p in _CLAUSE.split(text)]
    parts = list(dict.fromkeys(p for p in parts if _WORD.search(p)))
    if len(parts) <= 1:
        return [text]
    return [*parts, text]


def _normalised(ranked: Sequence[tuple[int, float]]) -> dict[int, float]:
    """Scores min-max scaled to [0, 1] over the ranking's own candidates."""
    if not ranked:
        return {}
    high, low = ranked[0][1], ranked[-1][1]
    span = high - low
    return {row: (score - low) / span if span > 0 else 1.0 for row, score in ranked}


def fuse(
    dense: Sequence[tuple[int, float]], lexical: Sequence[tuple[int, float]], coverage: float
) -> list[tuple[int, float]]:
    """One ranking from a dense and a lexical one (rows with scores, best first): normalised
    dense score + `coverage` × normalised BM25 score, over 1 + `coverage` to stay within
    [0, 1]. Best first."""
    d, lex = _normalised(dense), _normalised(lexical)
    weight = 1.0 + coverage
    fused = {
        row: (d.get(row, 0.0) + coverage * lex.get(row, 0.0)) / weight
        for row in d.keys() | lex.keys()
    }
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


def round_robin(rankings: Sequence[Sequence[tuple[int, float]]]) -> list[tuple[int, float]]:
    """The rankings merged by rank: every ranking's first, then every one's second, …; a row
    already taken is skipped. Each row keeps the score of its first appearance."""
    merged: dict[int, float] = {}
    for rank in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking):
                row, score = ranking[rank]
                merged.setdefault(row, score)
    return list(merged.items())


def fit(cosine: float, term_share: float) -> float:
    """How sure retrieval is that some tool serves the query, in [0, 1]: the mean of the best
    tool's cosine similarity (clipped at 0) and the share of the query's words it holds."""
    return (min(max(cosine, 0.0), 1.0) + min(max(term_share, 0.0), 1.0)) / 2
