"""The benchmarks still run. Their numbers are read by people, never asserted here."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import BENCHMARKS, load_benchmark


def run(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    return done


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


PEERS = {"asyncio floor", "agentrt", "LangGraph", "PydanticAI", "OpenAI Agents SDK"}


@pytest.fixture(scope="module")
def peers_quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    """What `benchmarks/peers.py --quick` printed, and the results it wrote as JSON."""
    results = tmp_path_factory.mktemp("peers") / "peers.json"
    out = run(str(BENCHMARKS / "peers.py"), "--quick", "--json", str(results)).stdout
    return out, json.loads(results.read_text())


def test_peers_benchmark_runs_the_same_work_on_every_framework(
    peers_quick: tuple[str, dict[str, Any]],
) -> None:
    """benchmarks/peers.py --quick measures every framework (the dev extra installs them all),
    and every run of each made 11 model calls and 40 tool calls, in both workloads."""
    out, results = peers_quick
    assert "Cost relative to agentrt" in out
    assert set(results) == PEERS
    for name, result in results.items():
        assert result is not None, f"{name} is not installed"
        rates = result["throughput"]
        assert set(rates) == {"1", "10"}
        for measured in (result["turn"], result["latency"], *rates.values()):
            calls = (measured["model_calls_per_run"], measured["tool_calls_per_run"])
            assert calls == (11, 40), name
        assert result["turn"]["us_per_turn"] > 0
        assert result["latency"]["ms_per_run"] > 0
        assert all(rate["runs_per_s"] > 0 for rate in rates.values())
        assert result["import_ms"] > 0


def test_peers_table_shows_a_framework_not_installed(
    peers_quick: tuple[str, dict[str, Any]],
) -> None:
    """A framework that is not installed is found so, and its column says so, with no ratios."""
    peers = load_benchmark("peers")
    absent = dataclasses.replace(peers.FRAMEWORKS[-1], module="agentrt_no_such_framework")
    assert not peers.installed(absent)
    assert all(peers.installed(fw) for fw in peers.FRAMEWORKS)
    results = {**peers_quick[1], "PydanticAI": None}
    (_, header, values), (_, _, ratios) = peers.tables(results, peers.QUICK)
    column = header.index("PydanticAI")
    assert {row[column] for row in values} == {"not installed"}
    assert {row[column] for row in ratios} == {"-"}
