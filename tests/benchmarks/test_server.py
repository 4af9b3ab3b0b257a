"""benchmarks/server.py still runs. Its numbers are read by people, never asserted here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "server.py"


def bench(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--runs", "5", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


LOAD = {
    "runs",
    "events",
    "seconds",
    "events_per_s",
    "runs_per_s",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
    "server_cpu_s",
    "client_cpu_s",
    "p99_over_p50",
    "server_cpu_ms_per_event",
}


def test_reports_its_fields() -> None:
    """A small run reports every field of the table for both loads and both servers, as JSON
    and as the table; the floor streams as many events as agentrt (it replays a run of it)."""
    result = json.loads(bench("--json"))
    assert set(result) == {"agentrt", "floor", "streams", "client", "loop", "http"}
    for app in ("agentrt", "floor"):
        assert set(result[app]["burst"]) == LOAD | {"serialise_us_per_event"}
        assert set(result[app]["steady"]) == LOAD
        assert result[app]["burst"]["runs"] == 5
        # Three runs a client, one of them measured: every event counted, a third timed.
        assert result[app]["steady"]["runs"] == 15
        assert result[app]["steady"]["events"] == 3 * result[app]["burst"]["events"]
    assert result["streams"] == 5
    assert result["agentrt"]["burst"]["events"] > 5 * 10
    assert result["floor"]["burst"]["events"] == result["agentrt"]["burst"]["events"]
    shown = bench()
    for row in (
        "all started at once: agentrt",
        "steadily open: agentrt",
        "floor",
        "CPU per event: agentrt / floor",
        "events/s",
        "creation → receipt p50",
        "creation → receipt p95",
        "creation → receipt p99",
        "server CPU per event",
        "of which its one serialisation",
    ):
        assert row in shown


def test_the_httpx_client() -> None:
    """`--client httpx` streams the same runs through httpx and httpx-sse."""
    result = json.loads(bench("--json", "--client", "httpx", "--loop", "asyncio", "--http", "h11"))
    assert (result["client"], result["loop"], result["http"]) == ("httpx", "asyncio", "h11")
    for app in ("agentrt", "floor"):
        assert result[app]["burst"]["events"] > 5 * 10
