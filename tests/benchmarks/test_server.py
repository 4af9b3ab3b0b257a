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
    """A small run reports every field of the table for both loads, as JSON and as the table."""
    result = json.loads(bench("--json"))
    assert set(result) == {"burst", "steady", "streams", "client", "loop", "http"}
    assert set(result["burst"]) == LOAD | {"serialise_us_per_event"}
    assert set(result["steady"]) == LOAD
    assert result["streams"] == 5
    assert result["burst"]["runs"] == 5
    assert result["burst"]["events"] > 5 * 10
    # Three runs a client, one of them measured: every event counted, a third timed.
    assert result["steady"]["runs"] == 15
    assert result["steady"]["events"] == 3 * result["burst"]["events"]
    shown = bench()
    for row in (
        "all started at once",
        "steadily open",
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
    assert result["burst"]["events"] > 5 * 10
