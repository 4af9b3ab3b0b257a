"""agentrt's overhead against floors: the instrumented one (the targets), the required one and
the bare one.

    .venv/bin/python benchmarks/overhead.py            # the whole table (about 4 minutes)
    .venv/bin/python benchmarks/overhead.py --quick    # small sizes, for a smoke check

Workload (see workload.py): a zero-latency model, 10 turns × 4 parallel no-op tools, events
built and the trajectory written. The instrumented floor does the same work in plain asyncio,
reporting the same events as dicts appended as JSON lines to a file per run: what the work
costs without a framework. Every target is a ratio against it. The required floor is that
loop doing, as leanly as it can, what any runtime must (validated events written through,
checked arguments, a timeout and a concurrency limit per call, a reader in another task): how
much of a target the requirements take. The bare floor builds no events at all. Each
measurement runs in a fresh process so that memory figures are not polluted by the others.
Compare ratios from one run of this script: absolute times on a shared 2-core machine move by
tens of percent from one minute to the next.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


# ── measurements, each run in its own process ────────────────────────────────────────────


def traced() -> Any:
    """`Agent(instrument=…)` to an OpenTelemetry SDK provider whose batch processor hands the
    spans to an exporter that drops them: what tracing costs a run, the network left out."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from agentrt.otel import InstrumentationSettings

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    return InstrumentationSettings(tracer_provider=provider)


async def per_turn(runs: int) -> dict[str, float]:
    """µs per turn, best of 5 rounds; agentrt, traced agentrt (`traced`), the instrumented
    floor, the required floor (`required_floor_once`) and the bare floor alternate, so that all
    see the same moments of a noisy machine.
    Also the cost of only building and serialising a run's events (pydantic models, as
    `RunContext.emit` and the trajectory writer do), per turn."""
    from workload import (
        SHM,
        TURNS,
        BenchModel,
        floor_once,
        instrumented_floor_once,
        make_agent,
        required_floor_once,
        run_once,
        scratch,
    )

    best: dict[str, float] = {}

    def keep(name: str, seconds: float, n: int) -> None:
        best[name] = min(best.get(name, math.inf), seconds / (n * TURNS) * 1e6)

    with scratch() as tmp:
        best["tmpfs"] = float(Path(tmp).parent == SHM)
        agents = {tools: make_agent(Path(tmp), tools_per_turn=tools) for tools in (1, 4)}
        models = {tools: BenchModel(tools) for tools in (1, 4)}
        traced_agent = make_agent(Path(tmp), instrument=traced())
        for agent in [*agents.values(), traced_agent]:
            for _ in range(20):
                await run_once(agent)
        for _ in range(5):
            for tools, agent in agents.items():
                t0 = time.perf_counter()
                for _ in range(runs):
                    await run_once(agent)
                keep(f"agentrt_{tools}", time.perf_counter() - t0, runs)
                t0 = time.perf_counter()
                for _ in range(runs * 2):
                    await instrumented_floor_once(Path(tmp), models[tools])
                keep(f"instrumented_{tools}", time.perf_counter() - t0, runs * 2)
                t0 = time.perf_counter()
                for _ in range(runs * 2):
                    await required_floor_once(Path(tmp), models[tools])
                keep(f"required_{tools}", time.perf_counter() - t0, runs * 2)
                t0 = time.perf_counter()
                for _ in range(runs * 10):
                    await floor_once(tools)
                keep(f"floor_{tools}", time.perf_counter() - t0, runs * 10)
            t0 = time.perf_counter()
            for _ in range(runs):
                await run_once(traced_agent)
            keep("traced_4", time.perf_counter() - t0, runs)
        events = [e async for e in agents[4].run("bench", strategy="bench")]
        fields = [(type(e), {k: getattr(e, k) for k in type(e).model_fields}) for e in events]
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(runs):
                for cls, values in fields:
                    event = cls(**values)
                    event.__pydantic_serializer__.to_json(event)
            keep("events_4", time.perf_counter() - t0, runs)
        best["events_per_turn"] = len(events) / TURNS
    return best


KINDS = ("agentrt", "instrumented", "floor")


def one_run(kind: str, tmp: Path) -> Callable[[], Awaitable[None]]:
    """A run of the workload by `kind`: agentrt, the instrumented floor or the bare floor."""
    from workload import BenchModel, floor_once, instrumented_floor_once, make_agent, run_once

    if kind == "agentrt":
        agent = make_agent(tmp)
        return lambda: run_once(agent)
    if kind == "instrumented":
        model = BenchModel(4)
        return lambda: instrumented_floor_once(tmp, model)
    if kind == "floor":
        return floor_once
    raise ValueError(f"unknown kind {kind!r}: one of {KINDS}")


async def throughput(kind: str, concurrency: int) -> dict[str, float]:
    """Runs/s with `concurrency` runs at once (at least 300 runs in all), and the process's
    peak RSS: one kind per process, so that the peak is its own."""
    with tempfile.TemporaryDirectory() as tmp:
        run = one_run(kind, Path(tmp))
        for _ in range(10):
            await run()
        rounds = max(1, 300 // concurrency)
        t0 = time.perf_counter()
        for _ in range(rounds):
            await asyncio.gather(*(run() for _ in range(concurrency)))
        rate = rounds * concurrency / (time.perf_counter() - t0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"runs_per_s": rate, "peak_mb": peak / 1024}


async def memory_at(kind: str, concurrency: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        run = one_run(kind, Path(tmp))
        for _ in range(20):
            await run()
        gc.collect()
        base = rss_kb()
        peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        await asyncio.gather(*(run() for _ in range(concurrency)))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"kb_per_run": (peak - max(base, peak_before)) / concurrency, "peak_mb": peak / 1024}


async def leak(runs: int) -> dict[str, float]:
    """Heap growth over `runs` sequential runs, from the end of the first tenth (caches and
    interned strings filled) to the last: the memory blocks Python's allocator holds
    (`sys.getallocatedblocks`, free to count, so all the runs go at full speed), and the
    bytes kept per run over up to 1,000 more under tracemalloc (which would triple the time
    of all of them), the smaller of two such windows. RSS at the end besides: it moves in
    allocator arenas, not a leak test."""
    from workload import make_agent, run_once

    with tempfile.TemporaryDirectory() as tmp:
        agent = make_agent(Path(tmp))
        for _ in range(runs // 10):
            await run_once(agent)
        gc.collect()
        settled = sys.getallocatedblocks()
        for _ in range(runs - runs // 10):
            await run_once(agent)
        gc.collect()
        blocks = sys.getallocatedblocks() - settled
        traced = min(runs, 1000)
        tracemalloc.start()
        # Counted twice, over two windows of `traced` runs, and the smaller taken: a leak grows
        # in both, while a table allocated before tracing and rebuilt inside a window counts
        # whole in that one (CPython 3.11's table of interned strings, which pathlib fills
        # with every path's parts: +961 KB in one window, then 0). The first runs under
        # tracing remake what lives between runs (the loop's handles, ~1 KB).
        for _ in range(traced // 10):
            await run_once(agent)
        kept = float("inf")
        for _ in range(2):
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(traced):
                await run_once(agent)
            gc.collect()
            kept = min(kept, (tracemalloc.get_traced_memory()[0] - before) / traced)
        tracemalloc.stop()
    return {"end_mb": rss_kb() / 1024, "block_growth": blocks, "heap_b_per_run": kept}


FIRST_RUN = """
import asyncio, tempfile
from agentrt import Agent, AgentSettings, ScriptedModel

def percent(rate: float, of: float) -> float:
    "`rate` percent of `of`."
    return rate / 100 * of

async def first_run() -> None:
    model = ScriptedModel([
        '<tool_call>{"name": "percent", "arguments": {"rate": 17.5, "of": 2340}}</tool_call>',
        "409.5",
    ])
    with tempfile.TemporaryDirectory() as tmp:
        agent = Agent(model, tools=[percent], settings=AgentSettings(trajectory_dir=tmp))
        assert (await agent.run("What is 17.5% of 2340?")).answer == "409.5"

asyncio.run(first_run())
"""
"""A code-first agent's first run (one tool call, then the answer) after `import agentrt`:
what the import leaves for first use (schemas built, prompts rendered) is counted there."""


def import_time() -> dict[str, float]:
    """`import agentrt` in a fresh interpreter, 5 times: best and median, in ms; and the median
    of the import followed by a code-first agent's first run (`FIRST_RUN`).

    As from an installed package, the bytecode is cached: an untimed first import writes it,
    to a temporary `PYTHONPYCACHEPREFIX` so that the checkout stays clean, and whatever
    `PYTHONDONTWRITEBYTECODE` says (with it every timed import compiled ~100 modules)."""
    timed = (
        "import time\nt = time.perf_counter()\nimport agentrt\n{}\nprint(time.perf_counter() - t)"
    )
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache

        def seconds(code: str) -> float:
            done = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
            )
            return float(done.stdout)

        seconds(timed.format(FIRST_RUN))
        times = [seconds(timed.format("")) for _ in range(5)]
        first = [seconds(timed.format(FIRST_RUN)) for _ in range(5)]
    return {
        "median_ms": statistics.median(times) * 1000,
        "best_ms": min(times) * 1000,
        "first_run_ms": statistics.median(first) * 1000,
    }


def measure(name: str, arg: int) -> dict[str, float]:
    """One measurement; `throughput` and `memory` take the kind after a colon."""
    name, _, kind = name.partition(":")
    if name == "per_turn":
        return asyncio.run(per_turn(arg))
    if name == "throughput":
        return asyncio.run(throughput(kind, arg))
    if name == "memory":
        return asyncio.run(memory_at(kind, arg))
    if name == "leak":
        return asyncio.run(leak(arg))
    raise ValueError(name)


def in_subprocess(name: str, arg: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--measure", name, str(arg)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"measurement {name} {arg} failed:\n{done.stderr}")
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def ratio(value: float, floor: float) -> str:
    return f"{value / floor:.2f}×" if floor > 0 else "-"


def verdict(value: float, limit: float) -> str:
    """'met' or by how much `value` misses `limit` (both lower-is-better)."""
    if value <= limit:
        return f"met ({value / limit:.2f} of limit)"
    return f"missed by {value / limit:.2f}×"


Row = tuple[str, str, str, str, str, str, str, str]


def collect(quick: bool) -> dict[str, Any]:
    """Every measurement, each in its own process, sized for `--quick` or the default table."""
    crowd = 300 if quick else 10_000
    sizes = {
        "crowd": crowd,
        "sequential": 300 if quick else 10_000,
        "memory": 100 if quick else 1000,
    }
    return {
        "sizes": sizes,
        "turn": in_subprocess("per_turn", 3 if quick else 50),
        "rates": {
            c: {k: in_subprocess(f"throughput:{k}", c) for k in KINDS}
            for c in ((1, 10, 100) if quick else (1, 100, 1000)) + (crowd,)
        },
        "mem": {k: in_subprocess(f"memory:{k}", sizes["memory"]) for k in KINDS},
        "leak": in_subprocess("leak", sizes["sequential"]),
        "import": import_time(),
    }


def rows(m: dict[str, Any]) -> list[Row]:
    turn, mem, sizes = m["turn"], m["mem"], m["sizes"]
    call = {k: (turn[f"{k}_4"] - turn[f"{k}_1"]) / 3 for k in (*KINDS, "required")}
    out: list[Row] = [
        row("µs per turn", turn["agentrt_4"], turn["instrumented_4"], turn["floor_4"], 2.0),
        row("µs per tool call", call["agentrt"], call["instrumented"], call["floor"], 2.0),
        (
            f"  µs per turn, its {turn['events_per_turn']:.0f} events alone (pydantic)",
            f"{turn['events_4']:.0f}",
            f"{turn['instrumented_4']:.1f}",
            ratio(turn["events_4"], turn["instrumented_4"]),
            "",
            "",
            "",
            "",
        ),
        required_row(
            "  µs per turn, a lean loop doing what is required",
            turn["required_4"],
            turn["instrumented_4"],
            turn["agentrt_4"],
        ),
        required_row(
            "  µs per tool call, the same loop",
            call["required"],
            call["instrumented"],
            call["agentrt"],
        ),
        (
            "  µs per turn, traced (OpenTelemetry SDK)",
            f"{turn['traced_4']:.0f}",
            "",
            f"{(turn['traced_4'] / turn['agentrt_4'] - 1) * 100:+.0f}% vs untraced",
            "",
            "",
            "",
            "",
        ),
        row(
            f"KB per concurrent run ({sizes['memory']:,})",
            mem["agentrt"]["kb_per_run"],
            mem["instrumented"]["kb_per_run"],
            mem["floor"]["kb_per_run"],
            1.2,
        ),
    ]
    for c, r in m["rates"].items():
        out.append(rate_row(c, r, c == sizes["crowd"]))
    out.append(
        (
            "import agentrt (ms, median of 5 fresh processes)",
            f"{m['import']['median_ms']:.0f} (best {m['import']['best_ms']:.0f})",
            "",
            "",
            "≤ 150 ms",
            verdict(m["import"]["median_ms"], 150),
            "",
            "",
        )
    )
    out.append(
        (
            "  import agentrt and a code-first agent's first run (ms, median of 5)",
            f"{m['import']['first_run_ms']:.0f}",
            "",
            "",
            "",
            "",
            "",
            "",
        )
    )
    grow = m["leak"]
    out.append(
        (
            f"allocated blocks gained, runs {sizes['sequential'] // 10:,}→{sizes['sequential']:,}",
            f"{grow['block_growth']:.0f}",
            "",
            "",
            "none",
            leak_verdict(grow["block_growth"] / (sizes["sequential"] * 0.9), "blocks"),
            "",
            "",
        )
    )
    out.append(
        (
            f"  heap bytes kept per run, the less of 2 × {min(sizes['sequential'], 1000):,} more "
            "(tracemalloc)",
            f"{grow['heap_b_per_run']:.1f}",
            "",
            "",
            "0",
            leak_verdict(grow["heap_b_per_run"], "B"),
            "",
            "",
        )
    )
    return out


def required_row(name: str, required: float, instrumented: float, agentrt: float) -> Row:
    """The required floor beside the instrumented one: how much of the target the work any
    runtime must do takes, and how much agentrt adds to it."""
    return (
        name,
        f"{required:.1f}",
        f"{instrumented:.1f}",
        ratio(required, instrumented),
        "",
        "",
        "",
        f"agentrt {agentrt / required:.2f}× it",
    )


def leak_verdict(per_run: float, unit: str) -> str:
    """A run that leaks keeps at least an object, one block of 16 bytes or more: under 1/100
    of that per run is the noise of caches settling (asyncio's set of tasks resized), not a
    leak."""
    least = 16 if unit == "B" else 1
    verdict = "met" if per_run < least / 100 else "missed"
    return f"{verdict} ({per_run:.3f} {unit}/run)"


def row(name: str, agentrt: float, instrumented: float, bare: float, limit: float) -> Row:
    """A lower-is-better measure with a target of `limit` × the instrumented floor."""
    return (
        name,
        f"{agentrt:.1f}",
        f"{instrumented:.1f}",
        ratio(agentrt, instrumented),
        f"≤ {limit:g}×",
        verdict(agentrt / instrumented, limit) if instrumented > 0 else "-",
        f"{bare:.1f}",
        ratio(agentrt, bare),
    )


def rate_row(concurrency: int, r: dict[str, dict[str, float]], crowd: bool) -> Row:
    """Runs/s at `concurrency`; the crowd row (10,000 at once) also says each peak RSS."""
    name = f"runs/s at {concurrency:,} concurrent"
    cells = {k: f"{r[k]['runs_per_s']:.0f}" for k in KINDS}
    if crowd:
        name += " (peak RSS MB)"
        cells = {k: f"{cells[k]} ({r[k]['peak_mb']:.0f})" for k in KINDS}
    slower = r["instrumented"]["runs_per_s"] / r["agentrt"]["runs_per_s"]
    bare = r["floor"]["runs_per_s"] / r["agentrt"]["runs_per_s"]
    done = "all completed" if crowd else ""
    return (
        name,
        cells["agentrt"],
        cells["instrumented"],
        f"{slower:.2f}× slower",
        "completes" if crowd else "",
        done,
        cells["floor"],
        f"{bare:.1f}× slower",
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes: a smoke check, not numbers"
    )
    parser.add_argument("--measure", nargs=2, metavar=("NAME", "ARG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], int(args.measure[1]))))
        return

    from rich.console import Console
    from rich.table import Table

    load = os.getloadavg()
    measured = collect(args.quick)
    table = Table(title="agentrt overhead: zero-latency model, 10 turns × 4 parallel no-op tools")
    for col in COLUMNS:
        table.add_column(col, justify="left" if col == "measure" else "right")
    for cells in rows(measured):
        table.add_row(*cells)
    console = Console(width=200)
    console.print(table)
    console.print(
        f"[dim]Load average before/after: {load[0]:.2f} / {os.getloadavg()[0]:.2f}. "
        f"Per turn and per call: trajectories on "
        f"{'tmpfs' if measured['turn']['tmpfs'] else 'the temporary folder (no tmpfs with room)'}. "
        "Instrumented floor: a plain asyncio loop building the same events as dicts and "
        "appending each to the run's JSON-lines file (json.dumps). Required floor: that loop "
        "with agentrt's validated events, written through at each model answer and tool start "
        "and end, arguments checked, each call under a timeout and a concurrency limit, the "
        "events read in another task (workload.required_floor_once). Bare floor: "
        "asyncio.gather over 4 no-op coroutines, dict messages appended to a list.[/]"
    )


COLUMNS = (
    "measure",
    "agentrt",
    "instrumented floor",
    "ratio",
    "target",
    "met?",
    "bare floor",
    "vs bare",
)


if __name__ == "__main__":
    main()
