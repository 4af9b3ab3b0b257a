"""benchmarks/faults_sql.py runs and reports its rows; the guard stops every fault it tries."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("sqlglot", reason="needs the db extra")

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "faults_sql.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("faults_sql", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["faults_sql"] = module
    spec.loader.exec_module(module)
    return module


def test_measure_reports_rows_of_the_agreed_shape() -> None:
    """A few attempts per kind: three rows with every field, and nothing got through."""
    rows = load().measure(limit=3)
    assert [row["attempts"] for row in rows] == [3, 3, 3]
    for row in rows:
        assert set(row) == {"area", "attempt", "attempts", "failures", "lost"}
        assert row["area"] == "sql guard"
        assert (row["failures"], row["lost"]) == (0, "nothing")
