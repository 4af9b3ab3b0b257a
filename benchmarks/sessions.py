"""Session store: turn-commit latency, and how long the event loop is blocked by a run.

    .venv/bin/python benchmarks/sessions.py            # the whole table (about a minute)
    .venv/bin/python benchmarks/sessions.py --quick    # fewer turns, for a smoke check
    .venv/bin/python benchmarks/sessions.py --turns 20 --runs 30

For SQLite (a file in a temporary folder) and PostgreSQL (a server this script starts with
tests/postgres.py's helper, fsync off as in the tests): `append` latency with 1 and with 50
writers at once in one process, each on a session of its own, each turn 4 messages with a
tool call and its result (about 600 bytes of JSON). Then agent runs (a scripted model, one
tool call, the turn appended and the run recorded) while a probe task measures the longest
stretch the loop went without coming back to it: the longest block per run, p50 and max over
the runs, and the longest part of a block that fell inside a store call (what the store
itself held the loop for; the rest is the run's own work). Absolute times on a shared 2-core
machine move by tens of percent between runs.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from agentrt import Agent, AgentSettings, Message, ScriptedModel, Turn, open_store  # noqa: E402
from agentrt.events import NativeToolCall  # noqa: E402
from tests.postgres import postgres_server  # noqa: E402

WRITERS = (1, 50)


def turn(writer: int, j: int) -> Turn:
    return Turn(
        run_id=f"w{writer}-{j}",
        messages=[
            Message(role="user", content=f"What were the sales in region {j}, writer {writer}?"),
            Message(
                role="assistant",
                content="",
                tool_calls=(
                    NativeToolCall(id="c1", name="sql_query", arguments='{"sql": "SELECT 1"}'),
                ),
            ),
            Message(role="tool", content="[[1, 2, 3]] " * 20, tool_call_id="c1", name="sql_query"),
            Message(role="assistant", content="The sales were 1, 2 and 3 thousand."),
        ],
    )


async def commit_latencies(url: str, writers: int, turns: int) -> list[float]:
    """Seconds per `append`, `writers` coroutines at once, each `turns` turns."""
    store = open_store(url)
    await store.open()
    times: list[float] = []

    async def write(w: int) -> None:
        for j in range(turns):
            start = time.perf_counter()
            await store.append(f"bench-{writers}-{w}", turn(w, j), j)
            times.append(time.perf_counter() - start)

    async with asyncio.TaskGroup() as group:
        for w in range(writers):
            group.create_task(write(w))
    await store.close()
    return times


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def probe(gaps: list[tuple[float, float]]) -> None:
    """Comes back to the loop as often as it can; each stretch it waited is kept in `gaps`.

    Between two, it lets go of the GIL (`time.sleep(0)`): a probe that only spun on the loop
    would keep it always busy and starve a store's worker thread of the GIL (a SQLite load of
    2,000 messages took 10 s under such a probe, 20 ms without one)."""
    while True:
        start = time.perf_counter()
        await asyncio.sleep(0)
        gaps.append((start, time.perf_counter()))
        time.sleep(0)  # noqa: ASYNC251 - lets go of the GIL; it waits for nothing


class TimedStore:
    """A store whose calls' intervals are kept, to tell the loop's blocks inside them apart."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.calls: list[tuple[float, float]] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.store, name)

        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                self.calls.append((start, time.perf_counter()))

        return timed


PAUSES: list[tuple[float, float]] = []
"""The garbage collector's pauses (start, end): the process's, not the store's, so they are
left out of the blocks measured and reported on their own."""


def _collecting(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        PAUSES.append((time.perf_counter(), math.inf))
    else:
        PAUSES[-1] = (PAUSES[-1][0], time.perf_counter())


def without_gc(start: float, end: float) -> float:
    """How long the loop was held from `start` to `end` (s), the collector's pauses left out."""
    paused = sum(max(0.0, min(end, p1) - max(start, p0)) for p0, p1 in PAUSES)
    return end - start - paused


def inside(gaps: list[tuple[float, float]], calls: list[tuple[float, float]]) -> float:
    """The longest part of a loop block that fell inside a store call (s)."""
    return max(
        (
            without_gc(max(g0, c0), min(g1, c1))
            for g0, g1 in gaps
            for c0, c1 in calls
            if g0 < c1 and c0 < g1
        ),
        default=0.0,
    )


async def loop_blocks(url: str, runs: int) -> tuple[list[float], list[float]]:
    """Per agent run, the longest stretch (s) the loop went without running the probe, and
    the longest part of one inside the store's calls (the rest is the run's own work)."""
    call = '<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>'
    agent = Agent(
        ScriptedModel([call, "5."] * (runs + 1)),
        tools=[add],
        settings=AgentSettings(session_store=url, trajectory_dir=None),
    )
    timed = TimedStore(agent.sessions)
    agent.sessions = timed  # type: ignore[assignment]
    gaps: list[tuple[float, float]] = []
    blocks, in_store = [], []
    async with agent:
        await agent.run("warm up", session_id="warm")
        prober = asyncio.create_task(probe(gaps))
        for i in range(runs):
            await asyncio.sleep(0)
            gaps.clear()
            timed.calls.clear()
            result = await agent.run("2 + 3?", session_id=f"s{i % 4}")
            assert result.status == "ok", result.error
            blocks.append(max(without_gc(start, end) for start, end in gaps))
            in_store.append(inside(gaps, timed.calls))
        prober.cancel()
    return blocks, in_store


async def long_loads(url: str, turns: int = 500, loads: int = 10) -> tuple[list[float], float]:
    """Seconds per `load` of a session of `turns` 4-message turns, and the longest the loop
    went without running a probe meanwhile (after one load, which warms the process)."""
    store = open_store(url)
    await store.open()
    for j in range(turns):
        await store.append("long", turn(0, j), j)
    await store.load("long")
    gaps: list[tuple[float, float]] = []
    prober = asyncio.create_task(probe(gaps))
    await asyncio.sleep(0)
    times = []
    for _ in range(loads):
        start = time.perf_counter()
        await store.load("long")
        times.append(time.perf_counter() - start)
        await asyncio.sleep(0)  # the probe's last stretch ends before it is read
    prober.cancel()
    await store.close()
    return times, max(without_gc(start, end) for start, end in gaps)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) >= 2 else values[0]


async def measure(name: str, url: str, turns: int, runs: int) -> list[str]:
    PAUSES.clear()
    rows = []
    for writers in WRITERS:
        times = await commit_latencies(url, writers, turns)
        rows.append(
            f"| {name} | {writers} | {len(times)} | {ms(statistics.median(times))} | "
            f"{ms(p99(times))} |"
        )
    blocks, in_store = await loop_blocks(url, runs)
    rows.append(
        f"| {name}, agent runs | loop block per run | {len(blocks)} | "
        f"{ms(statistics.median(blocks))} | max {ms(max(blocks))} |"
    )
    rows.append(
        f"| {name}, agent runs | loop block inside store calls | {len(in_store)} | "
        f"{ms(statistics.median(in_store))} | max {ms(max(in_store))} |"
    )
    times, longest = await long_loads(url)
    rows.append(
        f"| {name}, load of 2,000 messages | ms p50 / loop block max | {len(times)} | "
        f"{ms(statistics.median(times))} | max {ms(longest)} |"
    )
    pauses = [end - start for start, end in PAUSES]
    rows.append(
        f"| {name}, garbage collector | pauses, left out above | {len(pauses)} | "
        f"{ms(statistics.median(pauses))} | max {ms(max(pauses))} |"
    )
    return rows


@contextmanager
def backends() -> Iterator[list[tuple[str, str]]]:
    with tempfile.TemporaryDirectory() as folder, postgres_server() as server:
        yield [
            ("memory", "memory:"),
            ("SQLite", f"sqlite:///{Path(folder) / 'sessions.sqlite'}"),
            ("PostgreSQL", server.create_database("bench")),
        ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="10 turns a writer, 10 runs")
    parser.add_argument("--turns", type=int, default=40, help="turns per writer")
    parser.add_argument("--runs", type=int, default=100, help="agent runs per store")
    args = parser.parse_args()
    turns, runs = (10, 10) if args.quick else (args.turns, args.runs)
    print("| store | writers | turns | ms p50 | ms p99 |")
    print("|---|---|---|---|---|")
    gc.callbacks.append(_collecting)
    with backends() as stores:
        for name, url in stores:
            for row in asyncio.run(measure(name, url, turns, runs)):
                print(row, flush=True)


if __name__ == "__main__":
    main()
