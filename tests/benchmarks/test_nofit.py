"""benchmarks/nofit.py runs, and its regression is the textbook one. Its numbers are read by
people, never asserted here."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from tests.helpers import BENCHMARKS, load_benchmark


def test_the_regression_recovers_known_weights() -> None:
    """Labels drawn from a known logistic model: Newton's method finds its weights."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(20_000, 2))
    truth = np.array([-0.5, 2.0, -1.0])  # intercept first
    p = 1 / (1 + np.exp(-(truth[0] + x @ truth[1:])))
    y = (rng.random(len(p)) < p).astype(float)
    weights = load_benchmark("nofit").logistic(x, y)
    assert np.abs(weights - truth).max() < 0.1


def test_one_split_prints_the_table() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "nofit.py"), "--seeds", "1"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for row in ("top-1 cosine (the bare", "agentrt's fit", "regression on cosine", "1 splits"):
        assert row in done.stdout, row
