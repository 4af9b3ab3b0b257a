"""agentrt side by side with two floors, LangGraph, PydanticAI and the OpenAI Agents SDK, on
one workload.

    .venv/bin/python benchmarks/peers.py               # the whole table (over ten minutes)
    .venv/bin/python benchmarks/peers.py --quick       # a smoke check: fewer runs, not numbers
    .venv/bin/python benchmarks/peers.py --markdown    # the tables as Markdown (for README.md)
    .venv/bin/python benchmarks/peers.py --json FILE   # also write every result as JSON

The peers come with the `bench` extra (`pip install -e '.[bench]'`); one not installed is
reported as such. Workloads (see peer_adapters/): A, a zero-latency scripted model, 10 turns
× 4 parallel no-op tool calls, then a final answer (and the same with 1 call a turn, so that
a tool call's cost is the difference over 3 calls); B, the same with each tool sleeping
100 ms, which takes about 1,000 ms a run if a framework runs a turn's 4 calls concurrently
and 4,000 ms if it runs them one by one. Two floors do the same work without a framework:
the bare floor in bare asyncio, building nothing; the instrumented floor (workload.py's, as
benchmarks/overhead.py runs it) also building agentrt's events as dicts and appending each as
a JSON line to a file per run. agentrt alone also runs 10,000 at once. Each measurement runs
in a fresh process, so that no framework's imports or memory pollute another's, and each kind
is taken of every framework in turn (µs per turn in three passes, the best kept). Compare
ratios from one run of this script: absolute times on a shared 2-core machine move by tens of
percent from one minute to the next.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import importlib.metadata
import importlib.util
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from peer_adapters import COUNTS, TOOLS_PER_TURN, TURNS, Run  # noqa: E402  (found above)

TOOL_MS = 100
"""How long each tool of workload B sleeps."""

Result = dict[str, Any]
"""One framework's measurements, as the JSON output has them."""


@dataclass(frozen=True)
class Framework:
    label: str
    adapter: str
    """Its module in peer_adapters/."""
    module: str | None
    """The package it needs; None for the floor, which needs nothing."""
    distribution: str | None
    """Whose version the table names."""
    imports: str
    """What the import time times: the modules the adapter imports from the framework."""


FRAMEWORKS = (
    Framework("bare floor", "asyncio_floor", None, None, "import asyncio"),
    Framework(
        "instrumented floor",
        "instrumented_floor",
        None,
        None,
        "import asyncio, datetime, json, time, uuid",
    ),
    Framework("agentrt", "agentrt_react", "agentrt", "agentrt", "import agentrt"),
    Framework(
        "LangGraph",
        "langgraph_toolnode",
        "langgraph",
        "langgraph",
        "import langchain_core.callbacks, langchain_core.language_models, "
        "langchain_core.messages, langchain_core.outputs, langchain_core.runnables, "
        "langchain_core.tools, langchain_core.utils.function_calling, langgraph.graph, "
        "langgraph.prebuilt",
    ),
    Framework(
        "PydanticAI",
        "pydantic_ai_function_model",
        "pydantic_ai",
        "pydantic-ai-slim",
        "import pydantic_ai, pydantic_ai.messages, pydantic_ai.models.function, pydantic_ai.usage",
    ),
    Framework(
        "OpenAI Agents SDK",
        "openai_agents_runner",
        "agents",
        "openai-agents",
        "import agents, openai.types.responses",
    ),
)
FLOOR, INSTRUMENTED, AGENTRT = (fw.label for fw in FRAMEWORKS[:3])

# Tracing exporters of the peers would reach for the network if the caller's environment
# turned them on; the OpenAI Agents SDK's is turned off in its adapter.
QUIET_ENV = {"LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false"}


@dataclass(frozen=True)
class Plan:
    """How long each measurement runs."""

    round_s: float
    """Seconds of sequential runs in one timed round of workload A."""
    rounds: int
    """Rounds of workload A in one process; the best one counts."""
    passes: int
    """Fresh processes for those rounds, taken of all the frameworks in turn; the best counts,
    so that a burst of load from elsewhere on a shared machine spoils no framework's figure."""
    latency_runs: int
    """Sequential runs of workload B."""
    concurrency: tuple[int, ...]
    """Concurrent runs for runs/s; the last also gives the memory per run."""
    crowd: int
    """Concurrent runs of agentrt alone, never skipped: that so many complete in one process."""
    throughput_s: float
    """Seconds of rounds at each concurrency (at least one round)."""
    max_round_s: float
    """A concurrency whose one round would take longer (estimated) is skipped."""
    imports: int
    """Fresh processes timing the imports; the median counts."""


FULL = Plan(
    round_s=1.0,
    rounds=5,
    passes=3,
    latency_runs=3,
    concurrency=(1, 100, 1000),
    crowd=10_000,
    throughput_s=3.0,
    max_round_s=90.0,
    imports=5,
)
QUICK = Plan(
    round_s=0.1,
    rounds=2,
    passes=1,
    latency_runs=1,
    concurrency=(1, 10),
    crowd=20,
    throughput_s=0.0,
    max_round_s=90.0,
    imports=1,
)


# ── measurements, each run in its own process ────────────────────────────────────────────


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def calls_per_run(before: tuple[int, int], runs: int) -> dict[str, float]:
    """Model and tool calls per run since `before`, as counted by the model and the tools."""
    return {
        "model_calls_per_run": (COUNTS.model_calls - before[0]) / runs,
        "tool_calls_per_run": (COUNTS.tool_calls - before[1]) / runs,
    }


def counts_now() -> tuple[int, int]:
    return COUNTS.model_calls, COUNTS.tool_calls


Build = Callable[[int, int], Run]
"""An adapter's `build(tool_ms, per_turn)`."""


async def per_turn(build: Build, plan: Plan) -> dict[str, float]:
    """Workload A: µs per turn at 4 tool calls a turn and at 1, each the best of `plan.rounds`
    rounds of sequential runs, the two alternating so that both see the same moments of a
    shared machine; a tool call costs the difference over the 3 calls more."""
    runs = {n: build(0, n) for n in (TOOLS_PER_TURN, 1)}
    # The warm-up also sizes a round: about `round_s` seconds of runs, however slow a framework.
    warm, t0 = 0, time.perf_counter()
    while warm < 3 or time.perf_counter() - t0 < plan.round_s:
        await runs[TOOLS_PER_TURN]()
        await runs[1]()
        warm += 1
    per_round = max(3, round(plan.round_s / ((time.perf_counter() - t0) / warm)))
    best = dict.fromkeys(runs, math.inf)
    calls = {n: {"model": 0, "tool": 0} for n in runs}
    for _ in range(plan.rounds):
        for n, run in runs.items():
            before, t0 = counts_now(), time.perf_counter()
            for _ in range(per_round):
                await run()
            best[n] = min(best[n], (time.perf_counter() - t0) / (per_round * TURNS))
            calls[n]["model"] += COUNTS.model_calls - before[0]
            calls[n]["tool"] += COUNTS.tool_calls - before[1]
    done = plan.rounds * per_round
    return {
        "us_per_turn": best[TOOLS_PER_TURN] * 1e6,
        "us_per_turn_1": best[1] * 1e6,
        "us_per_tool_call": (best[TOOLS_PER_TURN] - best[1]) / (TOOLS_PER_TURN - 1) * 1e6,
        **{
            f"{kind}_calls_per_run{'' if n == TOOLS_PER_TURN else f'_{n}'}": made / done
            for n, counted in calls.items()
            for kind, made in counted.items()
        },
    }


async def tool_latency(build: Build, plan: Plan) -> dict[str, float]:
    """Workload B: ms per run, the mean of sequential runs."""
    run = build(TOOL_MS, TOOLS_PER_TURN)
    await run()
    before, t0 = counts_now(), time.perf_counter()
    for _ in range(plan.latency_runs):
        await run()
    ms = (time.perf_counter() - t0) / plan.latency_runs * 1000
    return {"ms_per_run": ms, **calls_per_run(before, plan.latency_runs)}


async def throughput(build: Build, plan: Plan, concurrency: int) -> dict[str, float]:
    """Workload A: runs/s with `concurrency` runs at once, the peak RSS they add per run, and
    the process's peak RSS."""
    run = build(0, TOOLS_PER_TURN)
    for _ in range(3):
        await run()
    gc.collect()
    base = rss_kb()
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    before, rounds, t0 = counts_now(), 0, time.perf_counter()
    while rounds == 0 or time.perf_counter() - t0 < plan.throughput_s:
        await asyncio.gather(*(run() for _ in range(concurrency)))
        rounds += 1
    elapsed = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "runs_per_s": rounds * concurrency / elapsed,
        "kb_per_run": (peak - max(base, peak_before)) / concurrency,
        "peak_mb": peak / 1024,
        **calls_per_run(before, rounds * concurrency),
    }


def measure(kind: str, adapter: str, plan: Plan, arg: int) -> dict[str, float]:
    build = importlib.import_module(f"peer_adapters.{adapter}").build
    if kind == "turn":
        return asyncio.run(per_turn(build, plan))
    if kind == "latency":
        return asyncio.run(tool_latency(build, plan))
    if kind == "throughput":
        return asyncio.run(throughput(build, plan, arg))
    msg = f"no measurement {kind!r} (known: turn, latency, throughput)"
    raise ValueError(msg)


# ── the parent: one subprocess per measurement ───────────────────────────────────────────


def in_subprocess(kind: str, fw: Framework, quick: bool, arg: int = 0) -> dict[str, float]:
    command = [sys.executable, __file__, "--measure", kind, fw.adapter, str(arg)]
    done = subprocess.run(
        [*command, *(["--quick"] if quick else [])],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **QUIET_ENV},
    )
    if done.returncode != 0:
        msg = f"{fw.label}: measurement {kind} {arg} failed:\n{done.stderr}"
        raise RuntimeError(msg)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def import_s(fw: Framework) -> float:
    """Seconds the framework's imports take in a fresh process."""
    code = f"import time; t = time.perf_counter(); {fw.imports}; print(time.perf_counter() - t)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **QUIET_ENV},
    )
    return float(done.stdout)


def installed(fw: Framework) -> bool:
    return fw.module is None or importlib.util.find_spec(fw.module) is not None


def version(fw: Framework) -> str:
    if fw.distribution is None:
        return f"Python {sys.version_info.major}.{sys.version_info.minor}"
    try:
        return importlib.metadata.version(fw.distribution)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def measure_all(plan: Plan, quick: bool) -> dict[str, Result | None]:
    """Every measurement of every installed framework; None for one not installed. Each kind
    of measurement is taken of all the frameworks in turn, before the next kind, so that the
    load of a shared machine, which drifts over minutes, falls on all of them alike."""
    present = [fw for fw in FRAMEWORKS if installed(fw)]
    out: dict[str, Result] = {
        fw.label: {"version": version(fw), "throughput": {}} for fw in present
    }

    def each(what: str) -> list[tuple[Framework, Result]]:
        print(f"measuring {what} …", file=sys.stderr, flush=True)
        return [(fw, out[fw.label]) for fw in present]

    for n in range(plan.passes):
        for fw, result in each(f"µs per turn, pass {n + 1} of {plan.passes}"):
            turn, best = in_subprocess("turn", fw, quick), result.get("turn")
            if best is None or turn["us_per_turn"] < best["us_per_turn"]:
                result["turn"] = turn
    for fw, result in each("tool latency"):
        result["latency"] = in_subprocess("latency", fw, quick)
    previous = None
    for c in plan.concurrency:
        for fw, result in each(f"{c} runs at once"):
            rates = result["throughput"]
            # A point whose one round would take too long at the rate of the point before is
            # skipped, and the estimate kept to be shown.
            rate = rates[previous].get("runs_per_s", 0.0) if previous else math.inf
            estimate = c / rate if rate > 0 else math.inf
            if estimate > plan.max_round_s:
                rates[str(c)] = {"skipped_estimate_s": estimate}
            else:
                rates[str(c)] = in_subprocess("throughput", fw, quick, c)
        previous = str(c)
    # agentrt alone at the crowd size, whatever the estimate: that it completes is the point.
    for fw in present:
        if fw.label == AGENTRT:
            print(
                f"measuring {fw.label}, {plan.crowd:,} runs at once …", file=sys.stderr, flush=True
            )
            out[fw.label]["crowd"] = in_subprocess("throughput", fw, quick, plan.crowd)
    imports: dict[str, list[float]] = {fw.label: [] for fw in present}
    for n in range(plan.imports):
        for fw, _ in each(f"imports, {n + 1} of {plan.imports}"):
            imports[fw.label].append(import_s(fw))
    for label, times in imports.items():
        out[label]["import_ms"] = statistics.median(times) * 1000
    return {fw.label: out.get(fw.label) for fw in FRAMEWORKS}


# ── the tables ───────────────────────────────────────────────────────────────────────────

Table = tuple[str, list[str], list[list[str]]]
"""A title, the header, the rows."""


@dataclass(frozen=True)
class Row:
    label: str
    value: Callable[[Result], float | None]
    """None where the measurement was skipped."""
    shown: str
    """The format of a value."""
    higher_is_better: bool = False
    only: str | None = None
    """The one framework measured so (the others show a dash, and the row has no ratios)."""


def largest_measured(result: Result) -> tuple[str, dict[str, float]]:
    """The highest concurrency that was measured, and its numbers."""
    measured = [(c, m) for c, m in result["throughput"].items() if "runs_per_s" in m]
    return max(measured, key=lambda item: int(item[0]))


def rows_for(plan: Plan) -> list[Row]:
    def runs_per_s(c: int) -> Callable[[Result], float | None]:
        return lambda r: r["throughput"][str(c)].get("runs_per_s")

    rows = [
        Row("A: µs per turn", lambda r: r["turn"]["us_per_turn"], "{:,.0f}"),
        Row(
            f"A: µs per tool call (4 calls a turn against 1, over {TOOLS_PER_TURN - 1})",
            lambda r: r["turn"]["us_per_tool_call"],
            "{:,.1f}",
        ),
        Row(
            f"B: ms per run (4 × {TOOL_MS} ms tools)",
            lambda r: r["latency"]["ms_per_run"],
            "{:,.0f}",
        ),
    ]
    rows += [
        Row(f"A: runs/s, {c:,} at once", runs_per_s(c), "{:,.1f}", higher_is_better=True)
        for c in plan.concurrency
    ]
    rows += [
        Row(
            f"A: runs/s, {plan.crowd:,} at once",
            lambda r: r["crowd"]["runs_per_s"],
            "{:,.1f}",
            higher_is_better=True,
            only=AGENTRT,
        ),
        Row(
            f"A: peak RSS, MB, {plan.crowd:,} at once",
            lambda r: r["crowd"]["peak_mb"],
            "{:,.0f}",
            only=AGENTRT,
        ),
        Row(
            f"A: KB per concurrent run, at {plan.concurrency[-1]:,}",
            lambda r: largest_measured(r)[1]["kb_per_run"],
            "{:,.0f}",
        ),
        Row(f"import, ms (median of {plan.imports})", lambda r: r["import_ms"], "{:,.0f}"),
    ]
    return rows


def cell(row: Row, label: str, result: Result, plan: Plan) -> str:
    if row.only is not None and label != row.only:
        return "—"
    value = row.value(result)
    if value is None:
        return "skipped"
    shown = row.shown.format(value)
    top, _ = largest_measured(result)
    if row.label.startswith("A: KB") and top != str(plan.concurrency[-1]):
        shown += f" (at {int(top):,})"
    return shown


def calls_cell(result: Result) -> str:
    """What the model and the tools counted per run: A's timed runs, then B's."""
    a, b = result["turn"], result["latency"]
    return (
        f"{a['model_calls_per_run']:g} + {a['tool_calls_per_run']:g}"
        f" / {b['model_calls_per_run']:g} + {b['tool_calls_per_run']:g}"
    )


def ratio(row: Row, result: Result, reference: Result | None) -> str:
    """How much costlier than the reference: above 1 is worse, whichever way the measure runs."""
    if reference is None:
        return "-"
    mine, theirs = row.value(result), row.value(reference)
    if mine is None or theirs is None or mine <= 0 or theirs <= 0:
        return "-"
    cost = theirs / mine if row.higher_is_better else mine / theirs
    return f"{cost:,.1f}×" if cost >= 1 else f"{cost:.2f}×"


def skipped_note(results: dict[str, Result | None], plan: Plan) -> str:
    notes = [
        f"{label} at {int(c):,} at once (one round would take about "
        f"{m['skipped_estimate_s']:.0f} s)"
        for label, r in results.items()
        if r
        for c, m in r["throughput"].items()
        if "skipped_estimate_s" in m
    ]
    if not notes:
        return ""
    return (
        f"Skipped, as longer than {plan.max_round_s:.0f} s at the rate measured at the "
        f"concurrency before: {'; '.join(notes)}. KB per concurrent run is then taken at "
        "the highest concurrency measured."
    )


REFERENCES = (AGENTRT, INSTRUMENTED, FLOOR)
"""What the ratios are taken against, in the order a ratio cell shows them."""


def tables(results: dict[str, Result | None], plan: Plan) -> list[Table]:
    header = ["measure", *(f"{k} {r['version']}" if r else k for k, r in results.items())]
    absent = "not installed"
    values = [
        [
            "calls a run, model + tools, A / B",
            *(calls_cell(r) if r else absent for r in results.values()),
        ]
    ]
    ratios = []
    for row in rows_for(plan):
        values.append(
            [row.label, *(cell(row, k, r, plan) if r else absent for k, r in results.items())]
        )
        if row.only is None:
            ratios.append(
                [
                    row.label,
                    *(
                        " / ".join(ratio(row, r, results[ref]) for ref in REFERENCES) if r else "-"
                        for r in results.values()
                    ),
                ]
            )
    return [
        (
            "Same workload on each framework (A: zero-latency model, 10 turns × 4 parallel "
            f"no-op tools; B: each tool sleeps {TOOL_MS} ms)",
            header,
            values,
        ),
        (
            "Cost relative to agentrt / to the instrumented floor / to the bare floor "
            "(above 1× is costlier)",
            header,
            ratios,
        ),
    ]


def print_rich(title: str, header: list[str], rows: list[list[str]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for i, column in enumerate(header):
        table.add_column(column, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    Console().print(table)


def print_markdown(title: str, header: list[str], rows: list[list[str]]) -> None:
    print(f"{title}:\n")
    for line in (header, ["---"] * len(header), *rows):
        print("| " + " | ".join(line) + " |")
    print()


NOTES = (
    "Every framework runs the same calls (peer_adapters/turn_calls) through its own tool "
    "registration and a scripted model at its documented seam. agentrt builds its events and "
    "writes each run's trajectory to disk, as the instrumented floor does with dicts and "
    "json.dumps; the bare floor and the peers keep their history in memory (LangGraph "
    "without a checkpointer, the Agents SDK with tracing off), so they do less work per run. "
    "A tool call's cost is the difference between runs of 4 and of 1 call a turn, over 3: "
    "near the floors it is within the noise. Only agentrt runs at the largest concurrency."
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer runs: a smoke check, not numbers"
    )
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the results here")
    parser.add_argument(
        "--measure", nargs=3, metavar=("KIND", "ADAPTER", "ARG"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    if args.measure:
        kind, adapter, arg = args.measure
        print(json.dumps(measure(kind, adapter, plan, int(arg))))
        return

    load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    results = measure_all(plan, args.quick)
    load_after = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    show = print_markdown if args.markdown else print_rich
    for title, header, rows in tables(results, plan):
        show(title, header, rows)
    print(NOTES)
    if note := skipped_note(results, plan):
        print(note)
    print(f"Load average (1, 5, 15 min): {load_before} before, {load_after} after.")


if __name__ == "__main__":
    main()
