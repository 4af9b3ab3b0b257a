"""Can what tool retrieval knows tell "no tool fits" better than the best tool's cosine?

    .venv/bin/python benchmarks/nofit.py              # the labelled and docstring sets (~30 s)
    .venv/bin/python benchmarks/nofit.py --seeds 2    # fewer labelled splits
    .venv/bin/python benchmarks/nofit.py --heldout --public WHEEL   # final numbers only

For every query, the signals retrieval has without asking a model: the dense ranking's top-1
cosine, its margin over the mean of the first 50 and over the tenth, the IDF-weighted share of
the query's words the top tool's document holds, the share the catalog knows at all (BM25's
coverage) and how far BM25's best stands out (its z-score). Two sets of queries some tool serves
and some none does, both tuning data (`retrieval.py`): the labelled set over its catalog without
half its domains (each seed removes another half), and the docstring set's tuning half with its
unservable queries. A logistic regression on each group of signals is fitted on one set and
scored (AUROC) on the other, both ways, beside the bare cosine and agentrt's `fit`: a signal
that beats the cosine only on the set it was fitted on has learnt that set, not no-fit.
`--heldout` (the docstring set's held-out half) and `--public` (the public set, `bfcl.py`; its
irrelevance questions are the unservable ones, though a tool of the pooled catalog may serve
some) score each regression fitted on both tuning sets: final numbers, never to choose by.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from agentrt.catalog.fusion import confidence, fit
from agentrt.catalog.index import ToolIndex
from agentrt.logs import configure_logging
from agentrt.vectors.embedder import Embedder, load_embedder

sys.path.insert(0, str(Path(__file__).parent))
import retrieval  # benchmarks/retrieval.py: the sets and their loaders

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

SIGNALS = ("cosine", "margin over mean", "margin over 10th", "term share", "coverage", "BM25 z")
GROUPS = (
    ("cosine", "term share"),
    ("cosine", "coverage"),
    ("cosine", "term share", "coverage"),
    ("cosine", "margin over mean"),
    ("cosine", "margin over 10th"),
    ("cosine", "margin over mean", "term share", "coverage", "BM25 z"),
    SIGNALS,
)
DEPTH = 50


@dataclass
class Signals:
    """Per query: whether a tool serves it, agentrt's fit, and every signal of `SIGNALS`."""

    served: list[bool]
    fit: list[float]
    values: list[list[float]]


def signals(index: ToolIndex, queries: list[retrieval.Styled], embedder: Embedder) -> Signals:
    vectors = embedder.encode([embedder.query_instruction + q.text for q in queries])
    out = Signals([], [], [])
    for query, vector in zip(queries, vectors, strict=True):
        dense = index.search(vector, DEPTH)
        cosines = [score for _, score in dense]
        lexical = index.lexical.search(query.text, DEPTH)
        top = index.names.index(dense[0][0])
        share = index.lexical.term_share(query.text, top)
        out.served.append(bool(query.intents))
        out.fit.append(fit(cosines[0], share))
        out.values.append(
            [
                cosines[0],
                cosines[0] - sum(cosines) / len(cosines),
                cosines[0] - cosines[min(9, len(cosines) - 1)],
                share,
                lexical.coverage,
                confidence(lexical.ranked) if len(lexical.ranked) >= 3 else 0.0,
            ]
        )
    return out


def logistic(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Weights (intercept first) of a logistic regression, by Newton's method with a small
    ridge penalty: a few features and a few thousand rows need nothing more."""
    import numpy as np

    x = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(x.shape[1])
    ridge = 1e-3 * np.eye(x.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-x @ w))
        step = np.linalg.solve(
            x.T @ (x * (p * (1 - p))[:, None]) + ridge, x.T @ (y - p) - ridge @ w
        )
        w += step
        if np.abs(step).max() < 1e-9:
            break
    return w


def transfer(train: Signals, test: Signals, group: tuple[str, ...]) -> float:
    """AUROC on `test` of the regression on `group` fitted on `train` (features standardised
    with `train`'s mean and spread)."""
    import numpy as np

    cols = [SIGNALS.index(s) for s in group]
    a, b = np.array(train.values)[:, cols], np.array(test.values)[:, cols]
    mean, spread = a.mean(axis=0), a.std(axis=0) + 1e-12
    w = logistic((a - mean) / spread, np.array(train.served, dtype=float))
    scores = ((b - mean) / spread) @ w[1:]
    return _auroc(test.served, scores.tolist())


def _auroc(served: list[bool], scores: list[float]) -> float:
    return retrieval.auroc(
        [s for s, ok in zip(scores, served, strict=True) if ok],
        [s for s, ok in zip(scores, served, strict=True) if not ok],
    )


def _joined(parts: list[Signals]) -> Signals:
    return Signals(
        [s for p in parts for s in p.served],
        [f for p in parts for f in p.fit],
        [v for p in parts for v in p.values],
    )


def final_sets(heldout: bool, public: Path | None, embedder: Embedder) -> dict[str, Signals]:
    """The sets scored only for final numbers, by name."""
    sets = {}
    if heldout:
        tools, queries = retrieval.load_docstrings(retrieval.DOCSTRINGS, heldout=True)
        index = ToolIndex.build(retrieval.bare_registry(tools), embedder, cache=None)
        sets["docstring held-out"] = signals(index, queries, embedder)
    if public is not None:
        tools, queries = retrieval.load_public(public)
        index = ToolIndex.build(retrieval.bare_registry(tools), embedder, cache=None)
        sets["public"] = signals(index, queries, embedder)
    return sets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=8, help="labelled splits (domains removed)")
    parser.add_argument(
        "--heldout", action="store_true", help="also the docstring set's held-out half"
    )
    parser.add_argument("--public", type=Path, metavar="WHEEL", help="also the public set")
    args = parser.parse_args()
    configure_logging(logging.WARNING, json=False)
    console = Console() if Console().is_terminal else Console(width=110)
    embedder = load_embedder()
    labelled = retrieval.load_labelled()
    with tempfile.TemporaryDirectory() as shared, console.status("the labelled splits"):
        splits = []
        for seed in range(1, args.seeds + 1):
            registry, queries = retrieval.held_out_domains(labelled, seed)
            index = ToolIndex.build(registry, embedder, cache=Path(shared))
            splits.append(signals(index, queries, embedder))
    lab = _joined(splits)
    with console.status("the docstring set's tuning half"):
        tools, queries = retrieval.load_docstrings(retrieval.DOCSTRINGS, heldout=False)
        index = ToolIndex.build(retrieval.bare_registry(tools), embedder, cache=None)
        doc = signals(index, queries, embedder)
    with console.status("the final sets"):
        final = final_sets(args.heldout, args.public, embedder)
    tuning = _joined([lab, doc])

    table = Table(
        title=f"no-fit AUROC: labelled set ({args.seeds} splits, {sum(lab.served)} served + "
        f"{len(lab.served) - sum(lab.served)} not) and docstring tuning half "
        f"({sum(doc.served)} + {len(doc.served) - sum(doc.served)})"
    )
    columns = ["on labelled", "on docstring", *(f"on {name}" for name in final)]
    for col in ("signal", *columns, "beats the cosine on every set"):
        table.add_column(col, justify="left" if col == "signal" else "right")
    sets = [lab, doc, *final.values()]
    cosine = [_auroc(s.served, [v[0] for v in s.values]) for s in sets]
    table.add_row("top-1 cosine (the bare threshold)", *(f"{a:.3f}" for a in cosine), "")
    ours = [_auroc(s.served, s.fit) for s in sets]
    table.add_row("agentrt's fit", *(f"{a:.3f}" for a in ours), _verdict(ours, cosine))
    for group in GROUPS:
        scores = [
            transfer(doc, lab, group),
            transfer(lab, doc, group),
            *(transfer(tuning, s, group) for s in final.values()),
        ]
        label = "regression on " + " + ".join(group)
        table.add_row(label, *(f"{a:.3f}" for a in scores), _verdict(scores, cosine))
    console.print(table)
    console.print(
        "Each regression is fitted on the other tuning set (labelled ↔ docstring); for a final "
        "set, on both."
    )


def _verdict(scores: list[float], cosine: list[float]) -> str:
    return "yes" if all(s > c for s, c in zip(scores, cosine, strict=True)) else "no"


if __name__ == "__main__":
    main()
