"""The grounding benchmark runs end to end on a slice of its questions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import load_benchmark

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
    assert "The most any grounding can score here" in done.stdout


def test_a_question_fits_a_budget_only_when_all_its_gold_does() -> None:
    question = load_benchmark("grounding").Question(
        "Which films has DEBORAH KING rented?",
        tables=["customer", "rental", "inventory", "film"],
        columns=[f"c{i}" for i in range(8)],
        values=["customer.first_name=DEBORAH"],
    )
    assert not question.fits((3, 10, 10))  # four tables
    assert question.fits((5, 10, 10))
    assert not question.fits((5, 7, 10))  # eight columns
    assert not question.fits((5, 10, 0))  # one value
