"""Where a turn's time goes: agentrt on the overhead workload under cProfile.

    .venv/bin/python benchmarks/profile_turn.py            # 200 runs (2,000 turns)
    .venv/bin/python benchmarks/profile_turn.py --runs 20  # a quick look

The workload is overhead.py's (workload.py: a zero-latency model, 10 turns × 4 parallel no-op
tools, trajectory written). Prints the 10 functions with the most own time, in µs per turn,
each with the part of the work it belongs to, then the total per part. cProfile's hooks
inflate every call by a similar amount, so read shares, not absolute µs: a part made of many
small calls (event construction, the event loop) looks heavier than it runs.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

# First match wins: (part of the work, what a profile entry's file path contains).
GROUPS = (
    ("pydantic validation / serialisation", ("pydantic",)),
    ("trajectory writing", ("agentrt/trajectory/",)),
    ("events (agentrt.events)", ("agentrt/events.py",)),
    ("tool-call parser", ("agentrt/parsing/",)),
    ("model adapter", ("agentrt/models/",)),
    ("JSON", ("json/", "orjson")),
    ("tool execution", ("agentrt/execution.py", "agentrt/tool.py")),
    ("run loop (agentrt/run.py)", ("agentrt/run.py",)),
    ("planning / strategy", ("agentrt/planning/", "agentrt/strategy.py")),
    ("OpenTelemetry / logging", ("agentrt/otel/", "opentelemetry", "structlog", "logging/")),
    ("anyio / asyncio machinery", ("anyio", "asyncio/", "contextvars", "selectors")),
    ("other agentrt", ("agentrt/",)),
    ("the benchmark's model", ("benchmarks/",)),
)


def group(filename: str, function: str) -> str:
    for name, needles in GROUPS:
        if any(needle in filename for needle in needles):
            return name
    if filename == "~":  # a C builtin: cProfile names it, but gives no file
        for name, needles in GROUPS:
            if any(needle.rstrip("/") in function for needle in needles):
                return name
        return "builtins (C)"
    return "other Python"


def profile(runs: int) -> tuple[pstats.Stats, int]:
    """The profile of `runs` warm runs, and how many turns they made."""
    from workload import TURNS, make_agent, run_once, scratch

    async def main(profiler: cProfile.Profile) -> None:
        with scratch() as tmp:  # as overhead.py times it
            agent = make_agent(Path(tmp))
            for _ in range(20):  # imports, caches and compiled validators out of the way
                await run_once(agent)
            profiler.enable()
            for _ in range(runs):
                await run_once(agent)
            profiler.disable()

    profiler = cProfile.Profile()
    asyncio.run(main(profiler))
    return pstats.Stats(profiler), runs * TURNS


def report(stats: pstats.Stats, turns: int, top: int) -> None:
    from rich.console import Console
    from rich.table import Table

    entries = stats.stats  # type: ignore[attr-defined]
    total = sum(tottime for _, _, tottime, _, _ in entries.values())
    parts: dict[str, float] = defaultdict(float)
    rows = []
    for (filename, line, function), (_, calls, tottime, _, _) in entries.items():
        part = group(filename, function)
        parts[part] += tottime
        where = f"{shorten(filename)}:{line}" if filename != "~" else ""
        rows.append((tottime, calls, f"{function} {where}".strip(), part))
    console = Console(width=160)
    table = Table(title=f"agentrt, one turn: top {top} functions by own time (cProfile)")
    for col in ("µs/turn", "share", "calls/turn", "function", "part"):
        table.add_column(
            col, justify="right" if col in ("µs/turn", "share", "calls/turn") else "left"
        )
    for tottime, calls, name, part in sorted(rows, reverse=True)[:top]:
        table.add_row(
            f"{tottime / turns * 1e6:.1f}",
            f"{tottime / total:.1%}",
            f"{calls / turns:.1f}",
            name,
            part,
        )
    console.print(table)
    by_part = Table(title="own time by part of the work")
    for col in ("part", "µs/turn", "share"):
        by_part.add_column(col, justify="left" if col == "part" else "right")
    for part, seconds in sorted(parts.items(), key=lambda item: -item[1]):
        by_part.add_row(part, f"{seconds / turns * 1e6:.1f}", f"{seconds / total:.1%}")
    console.print(by_part)
    console.print(
        f"[dim]{turns:,} turns profiled; total own time {total / turns * 1e6:.0f} µs/turn[/]"
    )


def shorten(filename: str) -> str:
    """The path from the package root on (agentrt/run.py, pydantic/main.py, asyncio/…)."""
    for root in ("site-packages/", "/lib/python3", "wt-floor/", "agentrt/"):
        if root in filename:
            return re.sub(r"^\.\d+/", "", filename.split(root, 1)[1])  # python3.NN/…
    return filename


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=200, help="runs profiled (10 turns each)")
    parser.add_argument("--top", type=int, default=10, help="functions listed")
    args = parser.parse_args()
    report(*profile(args.runs), args.top)


if __name__ == "__main__":
    main()
