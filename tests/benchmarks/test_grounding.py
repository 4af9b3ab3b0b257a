"""The grounding benchmark runs end to end on a slice of its questions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_grounding_benchmark_runs_on_a_slice() -> None:
    """Two questions per database: the databases are generated, the labels checked against
    them, and the table printed (its numbers are not asserted: a slice proves nothing)."""
    done = subprocess.run(
        [sys.executable, "benchmarks/grounding.py", "--limit", "2", "--busy", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={"COLUMNS": "160", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    for name in ("flights", "hospital", "library", "retail", "school", "all"):
        assert f"│ {name}" in done.stdout
    for heading in ("R(3,10,10)", "R(5,10,10)", "T(3,10,10)", "V(5,10,10)"):
        assert heading in done.stdout
    assert "ranking p50" in done.stdout
    # Timed again under load, in the same run.
    assert "p50, 2 busy" in done.stdout
