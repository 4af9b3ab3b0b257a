"""The benchmarks still run. Their numbers are read by people, never asserted here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).parent.parent / "benchmarks"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    return done


def test_overhead_measurements_run() -> None:
    """Each measurement of benchmarks/overhead.py runs and reports what the table needs."""
    script = str(BENCHMARKS / "overhead.py")
    turn = json.loads(run(script, "--measure", "per_turn", "2").stdout)
    assert set(turn) == {
        "agentrt_1",
        "agentrt_4",
        "floor_1",
        "floor_4",
        "events_4",
        "events_per_turn",
    }
    # a turn: turn_started, model_response, 4 × (tool_call, tool_started, tool_finished), …
    assert turn["events_per_turn"] >= 14
    memory = json.loads(run(script, "--measure", "memory", "20").stdout)
    assert set(memory) == {"kb_per_run", "peak_mb"}
    rates = json.loads(run(script, "--measure", "throughput", "10").stdout)
    assert set(rates) == {"agentrt", "floor"}
    leak = json.loads(run(script, "--measure", "leak", "40").stdout)
    assert set(leak) == {"end_mb", "second_half_growth_kb", "heap_b_per_run"}


def test_models_benchmark_runs(small_model_path: Path) -> None:
    """benchmarks/models.py runs one round against a real server and prints its table."""
    out = run(str(BENCHMARKS / "models.py"), "--rounds", "1").stdout
    for path in ("raw httpx", "OpenAIModel", "agent turn", "LocalModel"):
        assert path in out


def test_planning_benchmark_runs() -> None:
    """benchmarks/planning.py runs its quick sizes through the real dag planner."""
    out = run(str(BENCHMARKS / "planning.py"), "--quick").stdout
    assert "level barrier" in out
    assert "│    25 │" in out
