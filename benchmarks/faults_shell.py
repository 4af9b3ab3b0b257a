"""Faults tried on the shell tools (`agentrt.knowledge.vfs`): escapes from the virtual `/`,
pathological regular expressions, and lines too long to print.

    .venv/bin/python benchmarks/faults_shell.py

`measure()` returns rows for `benchmarks/faults.py`: per attempt, how many were tried, how many
the defence did not stop, and what was lost. A pattern is run the way a sync tool runs, in a
worker thread, while a ticker on the event loop measures the longest stall; the process's peak
memory is read before and after.
"""

from __future__ import annotations

import contextlib
import random
import resource
import time
from pathlib import Path
from typing import Any

import anyio

from agentrt.exceptions import ShellError
from agentrt.knowledge.vfs import REGEX_SECONDS, VirtualFiles

ESCAPES = [
    "..",
    "../etc/passwd",
    "/../etc/passwd",
    "/results/../../etc/passwd",
    "a/b/../../../x",
    "/etc/passwd",
    "/proc/self/environ",
    "~/.ssh/id_rsa",
    "a\x00b",
    "..\\..\\windows\\win.ini",
    "x" * 600,
]
PATTERNS = [
    "((a{200}){200}){200}",
    "((a{300}){300}){300}",
    "(a|aa)+$",
    "(a+)+b",
    "(.*a){30}x",
    "[ab]*a[ab]{20}c",
    "(a|b)*a(a|b){100}c",
    r"(a)\1",
    "(?=a)a",
    r"\pL{500}",
]
STALL_LIMIT = 0.5
"""Seconds the event loop may go without running before a pattern counts as a failure."""


def _escapes() -> dict[str, Any]:
    vfs = VirtualFiles()
    vfs.write("/results/r.md", "fine")
    real = (
        [Path("/etc/passwd").read_text(errors="replace")[:20]]
        if Path("/etc/passwd").exists()
        else []
    )
    attempts = failures = 0
    for path in ESCAPES:
        for command in (vfs.cat, vfs.head, vfs.wc, vfs.ls, lambda p: vfs.grep("root", p)):
            attempts += 1
            try:
                out = command(path)
            except ShellError:
                continue
            failures += any(r and r in out for r in real)
    lost = "nothing" if not failures else f"{failures} real file(s) read"
    return {
        "attempt": "paths escaping the virtual /",
        "attempts": attempts,
        "failures": failures,
        "lost": lost,
    }


async def _pattern(vfs: VirtualFiles, pattern: str) -> tuple[bool, float]:
    """Whether grep answered or refused within its limit (+ one call), and the loop's longest
    stall meanwhile."""
    stall = 0.0
    done = False

    async def ticker() -> None:
        nonlocal stall
        last = time.monotonic()
        while not done:
            await anyio.sleep(0.005)
            now = time.monotonic()
            stall, last = max(stall, now - last), now

    start = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        with contextlib.suppress(ShellError):
            await anyio.to_thread.run_sync(vfs.grep, pattern)
        done = True
    return time.monotonic() - start <= REGEX_SECONDS + 1.0, stall


def _patterns(size: int) -> dict[str, Any]:
    rng = random.Random(1)
    vfs = VirtualFiles()
    line = 20_000
    for i in range(max(size // (line * 50), 1)):
        lines = ("".join(rng.choice("ab") for _ in range(line)) for _ in range(50))
        vfs.write(f"/f{i}", "\n".join(lines))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    failures, worst = 0, 0.0
    for pattern in PATTERNS:
        in_time, stall = anyio.run(_pattern, vfs, pattern)
        worst = max(worst, stall)
        failures += not in_time or stall > STALL_LIMIT
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    lost = f"nothing (longest loop stall {worst * 1000:.0f} ms, peak memory +{grown:.0f} MB)"
    return {
        "attempt": f"pathological grep patterns over {size:,} chars",
        "attempts": len(PATTERNS),
        "failures": failures,
        "lost": lost if not failures else lost.replace("nothing", f"{failures} stalled or overran"),
    }


def _long_lines() -> dict[str, Any]:
    vfs = VirtualFiles()
    attempts = failures = 0
    for length in (9_000, 50_000, 200_000):
        attempts += 1
        line = "".join(str(i % 10) for i in range(length))
        vfs.write("/long", f"head\n{line}\ntail")
        read, offset = "", 5
        for _ in range(1000):
            out = vfs.cat("/long", offset)
            text, marker, rest = out.partition("[… the line goes on")
            read += text if marker else text.split("\n", 1)[0]
            if not marker:
                break
            offset = int(rest.split("offset=")[1].split()[0])
        failures += read != line
    return {
        "attempt": "lines longer than the output, read in pieces",
        "attempts": attempts,
        "failures": failures,
        "lost": "nothing" if not failures else f"{failures} line(s) not read whole",
    }


def measure(size: int = 2_000_000) -> list[dict[str, Any]]:
    """The rows of the shell area; `size`: characters of text the patterns search."""
    return [{"area": "shell", **row} for row in (_escapes(), _patterns(size), _long_lines())]


if __name__ == "__main__":
    for row in measure():
        print(f"{row['attempt']:<52} {row['attempts']:>5} {row['failures']:>5}  {row['lost']}")
