"""benchmarks/overhead.py runs, and its floors report what agentrt reports.

Numbers are read by people, never asserted here: only the table's shape and the floor's events.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import BENCHMARKS, load_benchmark

# What differs between any two runs: ids, clocks, durations and the digests of this machine's
# workspace and tools, which the floor has no reason to compute.
VOLATILE = {"run_id", "t", "created", "started_at", "duration", "timings"}
VOLATILE_HEADER = {"workspace_fingerprint", "tools", "settings"}


def trajectory(directory: Path) -> list[dict[str, Any]]:
    (path,) = directory.rglob("*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("floor_once", ["instrumented_floor_once", "required_floor_once"])
def test_a_floor_writes_the_events_agentrt_writes(tmp_path: Path, floor_once: str) -> None:
    """Same workload, same trajectory: event for event the same type, keys and values."""
    workload = load_benchmark("workload")
    ours, floor = tmp_path / "agentrt", tmp_path / "floor"
    floor.mkdir()
    asyncio.run(workload.run_once(workload.make_agent(ours)))
    asyncio.run(getattr(workload, floor_once)(floor, workload.BenchModel(4)))
    expected, got = trajectory(ours), trajectory(floor)
    assert [e["type"] for e in got] == [e["type"] for e in expected]
    for want, have in zip(expected, got, strict=True):
        assert set(have) == set(want), want["type"]
        skip = VOLATILE | (VOLATILE_HEADER if want["type"] == "header" else set())
        assert {k: v for k, v in have.items() if k not in skip} == {
            k: v for k, v in want.items() if k not in skip
        }
    assert set(got[0]["settings"]) == set(expected[0]["settings"])
    assert set(got[-1]["timings"]) == set(expected[-1]["timings"])


def run(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_overhead_measurements_report_every_kind() -> None:
    """Each measurement runs alone and reports what the table needs, for each kind of run."""
    script = str(BENCHMARKS / "overhead.py")
    turn = json.loads(run(script, "--measure", "per_turn", "2"))
    kinds = ("agentrt", "instrumented", "required", "floor")
    runs = {f"{kind}_{tools}" for kind in kinds for tools in (1, 4)}
    assert set(turn) == runs | {"traced_4", "events_4", "events_per_turn", "tmpfs"}
    assert turn["tmpfs"] in (0.0, 1.0)  # where the trajectories went, which the table says
    # a turn: turn_started, model_response, 4 × (tool_call, tool_started, tool_finished), …
    assert turn["events_per_turn"] >= 14
    for kind in ("agentrt", "instrumented", "floor"):
        memory = json.loads(run(script, "--measure", f"memory:{kind}", "20"))
        assert set(memory) == {"kb_per_run", "peak_mb"}
        rates = json.loads(run(script, "--measure", f"throughput:{kind}", "10"))
        assert set(rates) == {"runs_per_s", "peak_mb"}
    leak = json.loads(run(script, "--measure", "leak", "40"))
    assert set(leak) == {"end_mb", "block_growth", "heap_b_per_run"}


def test_overhead_quick_prints_every_target_against_the_instrumented_floor() -> None:
    """`overhead.py --quick` prints the whole table: its columns, and a row per target."""
    out = run(str(BENCHMARKS / "overhead.py"), "--quick")
    header = next(line for line in out.splitlines() if "measure" in line)
    for column in ("agentrt", "instrumented floor", "ratio", "target", "met?", "bare floor"):
        assert column in header
    for measure in (
        "µs per turn ",
        "µs per tool call ",
        "µs per turn, a lean loop doing what is required",
        "µs per tool call, the same loop",
        "KB per concurrent run (100)",
        "runs/s at 1 concurrent",
        "runs/s at 300 concurrent (peak RSS MB)",
        "import agentrt (ms, median of 5 fresh processes)",
        "import agentrt and a code-first agent's first run (ms, median of 5)",
        "allocated blocks gained, runs 30→300",
        "heap bytes kept per run, the less of 2 × 300 more (tracemalloc)",
    ):
        (line,) = [line for line in out.splitlines() if measure in line]
        cells = line.strip()[1:-1].split("│")
        assert len(cells) == 8, line
    assert "Load average" in out
