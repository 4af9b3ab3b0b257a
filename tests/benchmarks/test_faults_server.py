"""benchmarks/faults_server.py runs, on a small size, and reports no fault got through."""

from __future__ import annotations

from types import ModuleType

import pytest

from tests.helpers import load_benchmark


@pytest.fixture(scope="module")
def faults() -> ModuleType:
    return load_benchmark("faults_server")


def test_rows(faults: ModuleType) -> None:
    rows = faults.measure(4 << 20)
    assert rows
    for row in rows:
        assert set(row) == {"area", "attempt", "attempts", "failures", "lost"}
        assert row["area"] == "server"
        assert row["attempts"] > 0
        assert (row["failures"], row["lost"].split(" ")[0]) == (0, "nothing"), row
