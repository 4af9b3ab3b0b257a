"""benchmarks/sessions.py runs at its quick size against its own PostgreSQL server; its numbers
are read by people, never asserted here."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import BENCHMARKS


def test_the_sessions_benchmark_prints_its_table() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "sessions.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split(" | ")[:2] for line in done.stdout.splitlines()[2:]]
    assert rows == [
        [f"| {store}{suffix}", what]
        for store in ("memory", "SQLite", "PostgreSQL")
        for suffix, what in (
            ("", "1"),
            ("", "50"),
            (", agent runs", "loop block per run"),
            (", agent runs", "loop block inside store calls"),
            (", load of 2,000 messages", "ms p50 / loop block max"),
            (", garbage collector", "pauses, left out above"),
        )
    ]
