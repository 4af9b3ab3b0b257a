"""benchmarks/faults_sql.py runs and reports its rows; the guard stops every fault it tries."""

from __future__ import annotations

from types import ModuleType

from tests.helpers import load_benchmark


def load() -> ModuleType:
    return load_benchmark("faults_sql")


def test_measure_reports_rows_of_the_agreed_shape() -> None:
    """A few attempts per kind: three rows with every field, and nothing got through."""
    rows = load().measure(limit=3)
    assert [row["attempts"] for row in rows] == [3, 3, 3]
    for row in rows:
        assert set(row) == {"area", "attempt", "attempts", "failures", "lost"}
        assert row["area"] == "sql guard"
        assert (row["failures"], row["lost"]) == (0, "nothing")
