"""The workload every framework runs in benchmarks/peers.py, and one adapter per framework.

A run is 11 model calls: ten turns of 4 parallel tool calls, then the answer `ANSWER`. The
calls of each turn are data (`turn_calls`), so every adapter's scripted model emits exactly
the same ones; the model is stateless (it reads the turn off the conversation), so one
instance serves any number of concurrent runs. Each adapter module has one function,
`build(tool_ms, tools=TOOLS_PER_TURN) -> Run`; with `tool_ms` 0 the tool is `noop` (workload
A), otherwise `sleep_ms`, which waits that long (workload B); `tools` is the number of calls a
turn makes (workload A also runs with 1, so that the cost of a tool call can be told from the
cost of a turn).

The peers' tools are the two functions below, wrapped by each framework's own decorator;
agentrt's are the same two in the benchmark workspace (benchmarks/workspace/tools/).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ANSWER",
    "COUNTS",
    "TOOLS_PER_TURN",
    "TURNS",
    "Run",
    "check_answer",
    "noop",
    "sleep_ms",
    "text_turns",
    "turn_calls",
]

TURNS = 10
"""As in workload.py (agentrt_react checks), which is not imported here: it imports agentrt."""
TOOLS_PER_TURN = 4
ANSWER = "All done."

Run = Callable[[], Awaitable[None]]
"""One whole run; raises if it did not end with `ANSWER`."""


@dataclass
class Counts:
    """What the runs of this process did, counted where it happens (in the model and the tools).

    Each measurement runs in its own process, so process-wide counters are enough."""

    model_calls: int = 0
    tool_calls: int = 0


COUNTS = Counts()


def turn_calls(
    turn: int, tool_ms: int, tools: int = TOOLS_PER_TURN
) -> list[tuple[str, dict[str, Any]]]:
    """The `tools` tool calls (name, arguments) of `turn`: distinct arguments, so that no
    framework may answer one from a cache."""
    first = turn * tools
    if tool_ms == 0:
        return [("noop", {"i": first + k}) for k in range(tools)]
    return [("sleep_ms", {"ms": tool_ms, "node": f"n{first + k}"}) for k in range(tools)]


def text_turns(tool_ms: int, tools: int = TOOLS_PER_TURN) -> list[str]:
    """What a model that writes its calls as text (workload.py's `BenchModel`) answers at each
    turn: the same calls as `turn_calls`, in `<tool_call>` tags, then `ANSWER`."""
    return [
        "".join(
            f"<tool_call>{json.dumps({'name': name, 'arguments': args})}</tool_call>"
            for name, args in turn_calls(turn, tool_ms, tools)
        )
        for turn in range(TURNS)
    ] + [ANSWER]


async def noop(i: int) -> int:
    """Do nothing and return the argument.

    Args:
        i: Any integer.
    """
    COUNTS.tool_calls += 1
    return i


async def sleep_ms(ms: int, node: str) -> str:
    """Wait, then say which node waited.

    Args:
        ms: How long, in milliseconds.
        node: The plan node (keeps every call distinct).
    """
    COUNTS.tool_calls += 1
    await asyncio.sleep(ms / 1000)
    return node


def check_answer(answer: object, framework: str) -> None:
    if answer != ANSWER:
        msg = f"a {framework} run ended with {answer!r}, not the scripted answer {ANSWER!r}"
        raise RuntimeError(msg)
