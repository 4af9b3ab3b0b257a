"""benchmarks/faults.py gathers every area's rows into one table."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers import load_benchmark


def load() -> ModuleType:
    return load_benchmark("faults")


def test_every_area_has_a_measure() -> None:
    """The four areas the table promises are found, and each offers `measure()`."""
    faults = load()
    areas = {path.stem.removeprefix("faults_"): path for path in faults.areas()}
    assert set(areas) == {"model", "server", "shell", "sql"}
    for path in areas.values():
        assert callable(faults.load(path).measure)


def test_a_row_without_its_fields_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An area whose rows lack a column fails the run, naming the file and the fields."""
    faults = load()
    area = tmp_path / "faults_broken.py"
    area.write_text("def measure():\n    return [{'area': 'x', 'attempt': 'y'}]\n")
    monkeypatch.setattr(faults, "areas", lambda: [area])
    with pytest.raises(
        ValueError, match=r"faults_broken\.py: a row lacks attempts, failures, lost"
    ):
        faults.measure_all()
