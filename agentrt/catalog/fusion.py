"""Internal. How the dense and lexical rankings of one query become one, how a request for
several things is split, and how sure retrieval is that any tool fits.

The rules here were chosen by `benchmarks/retrieval.py` over several query styles (natural
requests, short commands, multi-intent requests, requests no tool serves), not tuned to one:

- **Fusion.** Each ranking's scores are min-max normalised over its own candidates; the dense
  one counts fully, the lexical one by its `coverage`, the share of the query's information
  (IDF-weighted words) that the catalog's vocabulary knows, times how sure BM25 is against how
  sure the embedding is (the ratio of their top-1 z-scores, at most 1). A request in the
  catalog's own words leans on BM25 (it keeps the verb, the key noun, the brand); a paraphrase
  whose words no tool uses leans on the embedding, and so does a request whose words BM25
  finds everywhere ("find all emails" among a dozen `email_*` tools). Against coverage alone,
  the ratio raised the smallest lead over the better single ranker across styles from −2.2 to
  0 points (docstring short commands; natural requests +2.3 → +4.7) for −0.7 on the labelled
  natural queries. Neither reciprocal-rank fusion nor a fixed 50/50 blend beat it on any style
  (all@5).
- **Multi-intent.** A query is split into clauses; each clause, and the whole query, retrieves,
  and the rankings are merged round-robin by rank (clauses first), so a minor request keeps
  its best tool instead of losing it to the main request's third and fourth.
- **Fit.** The whole query's best dense cosine, scaled by half plus half the IDF-weighted
  share of the query's words that tool's document holds. On the labelled set with half its
  domains removed it tells served queries from unserved ones better than the cosine alone
  (AUROC 0.785 against 0.761); on the docstring set's tuning half the two are level (0.974
  against 0.978: the cosine alone is near perfect there).
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Sequence
from typing import TypeVar

__all__ = ["confidence", "fit", "fuse", "round_robin", "split_intents"]

# Clause boundaries of a request for several things: ";", "then", "and then", "also", "plus",
# ", and", and sentence ends. "and" alone is not one: "sales and margin per region" is one
# request.
_CLAUSE = re.compile(
    r";|(?<=[.!?])\s+|,\s*and\b|\b(?:and\s+)?then\b|\balso\b|\bplus\b", re.IGNORECASE
)
_WORD = re.compile(r"\w")

K = TypeVar("K", bound=Hashable)
"""What a ranking ranks: a row of the index (or, in the benchmark, a tool's name)."""


def split_intents(text: str) -> list[str]:
    """The clauses of `text` (stripped, at least one word each), then `text` itself; just
    `[text]` when it has one clause."""
    parts = [p.strip(" ,.") for p in _CLAUSE.split(text)]
    parts = list(dict.fromkeys(p for p in parts if _WORD.search(p)))
    if len(parts) <= 1:
        return [text]
    return [*parts, text]


def _normalised(ranked: Sequence[tuple[K, float]]) -> dict[K, float]:
    """Scores min-max scaled to [0, 1] over the ranking's own candidates."""
    if not ranked:
        return {}
    high, low = ranked[0][1], ranked[-1][1]
    span = high - low
    return {row: (score - low) / span if span > 0 else 1.0 for row, score in ranked}


def confidence(ranked: Sequence[tuple[K, float]]) -> float:
    """How far a ranking's best stands above its other candidates: the top score's z-score
    over the list."""
    # Plain float arithmetic: `statistics.pstdev` computes exactly, in fractions, and took a
    # tenth of a query's ranking time.
    scores = [score for _, score in ranked]
    mean = sum(scores) / len(scores)
    spread = math.sqrt(sum((x - mean) ** 2 for x in scores) / len(scores))
    return (scores[0] - mean) / spread if spread > 0 else 0.0


def fuse(
    dense: Sequence[tuple[K, float]], lexical: Sequence[tuple[K, float]], coverage: float
) -> list[tuple[K, float]]:
    """One ranking from a dense and a lexical one (keys with scores, best first): normalised
    dense score + w × normalised BM25 score, over 1 + w to stay within [0, 1]. Best first.

    w is the query's lexical `coverage`, lowered when BM25's best stands out less from its
    candidates than the embedding's best does from its own (the ratio of their z-scores): a
    lexical ranking that is sure of nothing gives way to a dense one that is sure. A lexical
    ranking of fewer than 3 candidates has no spread to judge and keeps `coverage`.
    """
    weight = coverage
    if len(lexical) >= 3 and len(dense) >= 3:
        dense_sure = confidence(dense)
        if dense_sure > 0:
            weight *= min(1.0, max(0.0, confidence(lexical)) / dense_sure)
    d, lex = _normalised(dense), _normalised(lexical)
    fused = {
        key: (d.get(key, 0.0) + weight * lex.get(key, 0.0)) / (1.0 + weight)
        for key in d.keys() | lex.keys()
    }
    # Ties keep the dense order (then the lexical one): deterministic whatever the keys.
    order: dict[K, int] = {}
    for key in [*d, *lex]:
        order.setdefault(key, len(order))
    return sorted(fused.items(), key=lambda item: (-item[1], order[item[0]]))


def round_robin(rankings: Sequence[Sequence[tuple[K, float]]]) -> list[tuple[K, float]]:
    """The rankings merged by rank: every ranking's first, then every one's second, …; a row
    already taken is skipped. Each row keeps the score of its first appearance."""
    merged: dict[K, float] = {}
    for rank in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking):
                row, score = ranking[rank]
                merged.setdefault(row, score)
    return list(merged.items())


def fit(cosine: float, term_share: float) -> float:
    """How sure retrieval is that some tool serves the query, in [0, 1]: the best tool's cosine
    similarity (clipped to [0, 1]), scaled by half plus half the share of the query's words its
    metadata holds. A paraphrase keeps at least half its cosine; a query whose key words no
    tool has loses up to half."""
    share = min(max(term_share, 0.0), 1.0)
    return min(max(cosine, 0.0), 1.0) * (0.5 + 0.5 * share)
