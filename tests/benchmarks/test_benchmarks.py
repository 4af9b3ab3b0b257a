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


def test_prompt_cache_benchmark_runs(small_model_path: Path) -> None:
    """benchmarks/prompt_cache.py runs two sessions' first turns and a third on the real 0.5B,
    without and with the cache, and prints its table."""
    out = run(str(BENCHMARKS / "prompt_cache.py"), "--turns", "3").stdout
    assert "same answer" in out
    assert "│ 3–3  │" in out


def test_planning_benchmark_runs() -> None:
    """benchmarks/planning.py runs its quick sizes through the real dag planner."""
    out = run(str(BENCHMARKS / "planning.py"), "--quick").stdout
    assert "level barrier" in out
    assert "│    25 │" in out


PEERS_ORDER = (
    "bare floor",
    "instrumented floor",
    "agentrt",
    "LangGraph",
    "PydanticAI",
    "OpenAI Agents SDK",
)
PEERS = set(PEERS_ORDER)


@pytest.fixture(scope="module")
def peers_quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    """What `benchmarks/peers.py --quick` printed, and the results it wrote as JSON."""
    results = tmp_path_factory.mktemp("peers") / "peers.json"
    out = run(str(BENCHMARKS / "peers.py"), "--quick", "--json", str(results)).stdout
    return out, json.loads(results.read_text())


def test_peers_benchmark_runs_the_same_work_on_every_framework(
    peers_quick: tuple[str, dict[str, Any]],
) -> None:
    """benchmarks/peers.py --quick measures every framework (the dev extra installs them all)
    and both floors, in one run: every run of each made 11 model calls and 40 tool calls in
    both workloads (10 at 1 call a turn); agentrt alone also ran the crowd, as many at once."""
    out, results = peers_quick
    assert "Cost relative to agentrt / to the instrumented floor / to the bare floor" in out
    assert set(results) == PEERS
    for name, result in results.items():
        assert result is not None, f"{name} is not installed"
        rates = result["throughput"]
        assert set(rates) == {"1", "10"}
        crowd = [result["crowd"]] if name == "agentrt" else []
        assert ("crowd" in result) == (name == "agentrt")
        for measured in (result["turn"], result["latency"], *rates.values(), *crowd):
            calls = (measured["model_calls_per_run"], measured["tool_calls_per_run"])
            assert calls == (11, 40), name
        turn = result["turn"]
        assert (turn["model_calls_per_run_1"], turn["tool_calls_per_run_1"]) == (11, 10), name
        assert turn["us_per_turn"] > 0
        assert turn["us_per_turn_1"] > 0
        assert "us_per_tool_call" in turn  # a difference of two timings: near 0 at the floors
        assert result["latency"]["ms_per_run"] > 0
        assert all(rate["runs_per_s"] > 0 for rate in [*rates.values(), *crowd])
        assert all(rate["peak_mb"] > 0 for rate in [*rates.values(), *crowd])
        assert result["import_ms"] > 0


def test_peers_markdown_has_every_measure_and_both_floors(
    peers_quick: tuple[str, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    """`--markdown` prints the two tables the README shows: a column per framework and floor,
    a row per measure of issue 22's point 4, the crowd row agentrt's alone (a dash elsewhere,
    no ratios), and each ratio against agentrt, the instrumented floor and the bare floor."""
    peers = load_benchmark("peers")
    for title, header, rows in peers.tables(peers_quick[1], peers.QUICK):
        peers.print_markdown(title, header, rows)
    values, ratios = capsys.readouterr().out.split("Cost relative to")
    lines = {line.split(" | ")[0].removeprefix("| "): line for line in values.splitlines()}
    header = next(line for line in values.splitlines() if line.startswith("| measure"))
    assert [cell.split(" ")[0] for cell in header.strip("| ").split(" | ")[1:3]] == [
        "bare",
        "instrumented",
    ]
    for measure in (
        "A: µs per turn",
        "A: µs per tool call (4 calls a turn against 1, over 3)",
        "A: runs/s, 1 at once",
        "A: runs/s, 10 at once",
        "A: KB per concurrent run, at 10",
        "import, ms (median of 1)",
    ):
        assert measure in lines
        assert measure in ratios
    crowd = lines["A: runs/s, 20 at once"].strip("| ").split(" | ")[1:]
    assert [cell == "—" for cell in crowd] == [k != "agentrt" for k in PEERS_ORDER]
    assert "20 at once" not in ratios
    ratio_rows = [line for line in ratios.splitlines() if line.startswith("| A: µs per turn")]
    assert all(cell.count(" / ") == 2 for cell in ratio_rows[0].strip("| ").split(" | ")[1:])


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
