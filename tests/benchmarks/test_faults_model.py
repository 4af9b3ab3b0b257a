"""benchmarks/faults_model.py runs on a small size, and every defence holds."""

from __future__ import annotations

from tests.benchmarks.test_benchmarks import load_benchmark


def test_faults_model_measures() -> None:
    """Each row has the table's fields; no attempt got past its defence, nothing was lost."""
    rows = load_benchmark("faults_model").measure(1)
    assert [r["area"] for r in rows] == ["model faults"] * len(rows)
    assert all(set(r) == {"area", "attempt", "attempts", "failures", "lost"} for r in rows)
    assert all(r["attempts"] > 0 for r in rows)
    assert [(r["failures"], r["lost"]) for r in rows] == [(0, "nothing")] * len(rows)
