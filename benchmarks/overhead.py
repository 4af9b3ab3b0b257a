"""Per-turn overhead, throughput and memory of agentrt against a bare-asyncio floor.

    .venv/bin/python benchmarks/overhead.py            # the whole table (about a minute)
    .venv/bin/python benchmarks/overhead.py --quick    # fewer runs, for a smoke check

Workload (see workload.py): a zero-latency model, 10 turns × 4 parallel no-op tools, events
built and the trajectory written. Each measurement runs in a fresh process so that memory
figures are not polluted by the others. Compare ratios from one run of this script: absolute
times on a shared 2-core machine move by tens of percent from one minute to the next.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
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
    """µs per turn, best of 5 rounds; agentrt, traced agentrt (`traced`) and floor rounds
    alternate, so that all see the same moments of a noisy machine. Also the cost of only
    building and serialising a run's events (pydantic models, as `RunContext.emit` and the
    trajectory writer do), per turn: a lower bound for any run loop that reports through
    these events."""
    from workload import TURNS, floor_once, make_agent, run_once

    best: dict[str, float] = {}

    def keep(name: str, seconds: float, n: int) -> None:
        best[name] = min(best.get(name, math.inf), seconds / (n * TURNS) * 1e6)

    with tempfile.TemporaryDirectory() as tmp:
        agents = {tools: make_agent(Path(tmp), tools_per_turn=tools) for tools in (1, 4)}
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


async def throughput(concurrency: int, total: int) -> dict[str, float]:
    from workload import floor_once, make_agent, run_once

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        agent = make_agent(Path(tmp))
        for _ in range(10):
            await run_once(agent)
        rounds = max(1, total // concurrency)
        t0 = time.perf_counter()
        for _ in range(rounds):
            await asyncio.gather(*(run_once(agent) for _ in range(concurrency)))
        out["agentrt"] = rounds * concurrency / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for _ in range(rounds):
        await asyncio.gather(*(floor_once() for _ in range(concurrency)))
    out["floor"] = rounds * concurrency / (time.perf_counter() - t0)
    return out


async def memory_at(concurrency: int) -> dict[str, float]:
    from workload import make_agent, run_once

    with tempfile.TemporaryDirectory() as tmp:
        agent = make_agent(Path(tmp))
        for _ in range(20):
            await run_once(agent)
        gc.collect()
        base = rss_kb()
        peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        await asyncio.gather(*(run_once(agent) for _ in range(concurrency)))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"kb_per_run": (peak - max(base, peak_before)) / concurrency, "peak_mb": peak / 1024}


async def leak(runs: int) -> dict[str, float]:
    """RSS after `runs` sequential runs, RSS growth over the second half, and what the Python
    heap keeps per run (tracemalloc, over up to 2,000 further runs): the last is the leak test;
    RSS moves in allocator arenas."""
    from workload import make_agent, run_once

    with tempfile.TemporaryDirectory() as tmp:
        agent = make_agent(Path(tmp))
        for _ in range(runs // 2):
            await run_once(agent)
        gc.collect()
        half = rss_kb()
        for _ in range(runs - runs // 2):
            await run_once(agent)
        gc.collect()
        end = rss_kb()
        traced = min(runs, 2000)
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(traced):
            await run_once(agent)
        gc.collect()
        kept = (tracemalloc.get_traced_memory()[0] - before) / traced
        tracemalloc.stop()
    return {"end_mb": end / 1024, "second_half_growth_kb": end - half, "heap_b_per_run": kept}


def import_time() -> dict[str, float]:
    code = "import time; t = time.perf_counter(); import agentrt; print(time.perf_counter() - t)"
    times = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(5)
    ]
    return {"median_ms": statistics.median(times) * 1000, "min_ms": min(times) * 1000}


def measure(name: str, arg: int) -> dict[str, float]:
    if name == "per_turn":
        return asyncio.run(per_turn(arg))
    if name == "throughput":
        return asyncio.run(throughput(arg, max(arg, 300)))
    if name == "memory":
        return asyncio.run(memory_at(arg))
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer runs: a smoke check, not numbers"
    )
    parser.add_argument("--measure", nargs=2, metavar=("NAME", "ARG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], int(args.measure[1]))))
        return

    from rich.console import Console
    from rich.table import Table

    runs = 20 if args.quick else 100
    sequential = 1000 if args.quick else 10_000
    turn = in_subprocess("per_turn", runs)
    rates = {c: in_subprocess("throughput", c) for c in (1, 100, 1000)}
    mem = in_subprocess("memory", 1000)
    grow = in_subprocess("leak", sequential)
    imp = import_time()

    per_call = (turn["agentrt_4"] - turn["agentrt_1"]) / 3
    floor_call = (turn["floor_4"] - turn["floor_1"]) / 3
    table = Table(title="agentrt overhead: zero-latency model, 10 turns × 4 parallel no-op tools")
    for col in ("measure", "agentrt", "floor (bare asyncio)", "ratio", "target"):
        table.add_column(col, justify="right" if col != "measure" else "left")
    table.add_row(
        "µs per turn",
        f"{turn['agentrt_4']:.0f}",
        f"{turn['floor_4']:.1f}",
        f"{turn['agentrt_4'] / turn['floor_4']:.1f}×",
        "≤ 3× floor",
    )
    table.add_row(
        f"  of which the {turn['events_per_turn']:.0f} events alone",
        f"{turn['events_4']:.0f}",
        "",
        f"{turn['events_4'] / turn['floor_4']:.1f}×",
        "",
    )
    table.add_row(
        "µs per turn, traced (OpenTelemetry SDK)",
        f"{turn['traced_4']:.0f}",
        "",
        f"{(turn['traced_4'] / turn['agentrt_4'] - 1) * 100:+.0f}% vs untraced",
        "",
    )
    table.add_row(
        "µs per tool call",
        f"{per_call:.0f}",
        f"{floor_call:.1f}",
        f"{per_call / floor_call:.1f}×" if floor_call > 0 else "-",
        "",
    )
    for c, r in rates.items():
        table.add_row(
            f"runs/s at {c} concurrent",
            f"{r['agentrt']:.0f}",
            f"{r['floor']:.0f}",
            f"{r['floor'] / r['agentrt']:.1f}× slower",
            "",
        )
    table.add_row("KB per concurrent run (1000)", f"{mem['kb_per_run']:.1f}", "", "", "≤ 50 KB")
    table.add_row("import agentrt (ms, median of 5)", f"{imp['median_ms']:.0f}", "", "", "≤ 300 ms")
    table.add_row(f"RSS after {sequential:,} runs (MB)", f"{grow['end_mb']:.1f}", "", "", "")
    table.add_row(
        f"RSS growth, runs {sequential // 2:,}→{sequential:,} (KB)",
        f"{grow['second_half_growth_kb']:.0f}",
        "",
        "",
        "no growth",
    )
    table.add_row(
        "Python heap kept per run (B)", f"{grow['heap_b_per_run']:.1f}", "", "", "0 (no leak)"
    )
    Console().print(table)
    Console().print(
        "[dim]Each turn: one model call (parse 4 calls, validate, 4 tool tasks, ~15 events built "
        "and written to the trajectory). Floor: asyncio.gather over 4 no-op coroutines, dict "
        "messages appended to a list.[/]"
    )


if __name__ == "__main__":
    main()
