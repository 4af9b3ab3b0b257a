"""benchmarks/profile_turn.py profiles real runs and prints its two tables."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import BENCHMARKS


def test_profile_turn_prints_the_top_functions_and_the_parts() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "profile_turn.py"), "--runs", "2", "--top", "5"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "top 5 functions by own time" in done.stdout
    assert "own time by part of the work" in done.stdout
    # agentrt's own code and pydantic are always in a turn's profile
    assert "run loop (agentrt/run.py)" in done.stdout
    assert "pydantic validation / serialisation" in done.stdout
    assert "20 turns profiled" in done.stdout
