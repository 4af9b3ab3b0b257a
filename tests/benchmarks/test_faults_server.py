"""benchmarks/faults_server.py runs, on a small size, and reports no fault got through."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("fastapi", reason="needs the server extra")
pytest.importorskip("uvicorn", reason="needs the server extra")

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def faults() -> ModuleType:
    spec = importlib.util.spec_from_file_location("faults_server", BENCHMARKS / "faults_server.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_rows(faults: ModuleType) -> None:
    rows = faults.measure(4 << 20)
    assert rows
    for row in rows:
        assert set(row) == {"area", "attempt", "attempts", "failures", "lost"}
        assert row["area"] == "server"
        assert row["attempts"] > 0
        assert (row["failures"], row["lost"].split(" ")[0]) == (0, "nothing"), row
