"""Model faults and concurrent faulty runs: what the model client, the budgets and the executor
stop (issue 21, points 5 and 6).

    .venv/bin/python benchmarks/faults_model.py            # the table
    .venv/bin/python benchmarks/faults_model.py --size 2   # a smoke check

Rows (`measure()` returns them for `benchmarks/faults.py`):

- bad `Retry-After` values from a real HTTP server on 127.0.0.1 (`nan`, `inf`, negative,
  garbage, a past date, a huge number): a failure is a retry that did not come, or a wait that
  was not finite or not within `retry_max_wait`;
- endless model streams, under a token budget of 50 and under a per-answer cap of 100, in every
  planner: a failure is a run not ended `budget_exhausted`, or one that spent more than one
  streamed delta past its limit;
- streams broken after a `cache=False` call ran: a failure is the call's side effect twice;
- sync tool calls that hang past their timeout, many runs at once: a failure is a call that
  took a thread while the tool's hung calls held the cap; what is lost is threads left over;
- and for all of them: runs that did not end with exactly one `run_finished`.

Deterministic and loopback only; the scripted models pace themselves by the loop, not clocks.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the test workspace and the loopback server helper

from structlog.testing import capture_logs  # noqa: E402

from agentrt import Agent, AgentSettings, ScriptedModel, Workspace  # noqa: E402
from agentrt.events import Event, RunFinishedEvent, ToolFinishedEvent  # noqa: E402
from agentrt.exceptions import StreamInterrupted  # noqa: E402
from agentrt.models.base import Message, ModelChunk, ModelRequest, TextChunk  # noqa: E402
from agentrt.models.openai import OpenAIModel, OpenAISettings  # noqa: E402
from tests.helpers import TEST_WORKSPACE, call  # noqa: E402
from tests.models.openai_server import FakeServer, error_reply, text_reply  # noqa: E402

BAD_RETRY_AFTER = ["nan", "inf", "-inf", "1e999", "-5", "soon", "Sat, 01 Jan 2000 00:00:00 GMT"]
BAD_RETRY_AFTER += ["99999999999"]
RETRY_MAX_WAIT = 0.2
STRATEGIES = ["exploratory", "planned", "programmed"]


class Endless:
    """A model that does not stop writing (it gives up after `limit` deltas, so that a run that
    does not cut it is counted, not waited for)."""

    name = "endless"
    native_tools = False

    def __init__(self, limit: int = 5000) -> None:
        self.limit = limit

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        for _ in range(self.limit):
            await asyncio.sleep(0)
            yield TextChunk(text=" word")


class BreaksAfterCall:
    """Calls `counter`, then breaks off once the call has run (the tool's count says so);
    the retry repeats the call, then answers."""

    name = "breaks"
    native_tools = False

    def __init__(self, seen: Any) -> None:
        self.seen = seen
        self.calls = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        self.calls += 1
        if self.calls > 1:
            yield TextChunk(text=call("counter") if self.calls == 2 else "done")
            return
        before = self.seen.counter
        yield TextChunk(text=call("counter"))
        for _ in range(10_000):
            if self.seen.counter > before:
                break
            await asyncio.sleep(0)
        for _ in range(5):
            await asyncio.sleep(0)
        raise StreamInterrupted("connection reset mid-answer")


def _row(attempt: str, attempts: int, failures: int, lost: str = "nothing") -> dict[str, Any]:
    return {
        "area": "model faults",
        "attempt": attempt,
        "attempts": attempts,
        "failures": failures,
        "lost": lost,
    }


def _one_finish(events: list[Event]) -> bool:
    return sum(isinstance(e, RunFinishedEvent) for e in events) == 1


async def _retry_after(size: int) -> dict[str, Any]:
    failures = 0
    async with FakeServer() as server:
        settings = OpenAISettings(
            base_url=server.url,
            model="m",
            retry_initial_wait=0.01,
            retry_max_wait=RETRY_MAX_WAIT,
            read_timeout=2,
        )
        async with OpenAIModel(settings) as model:
            for value in BAD_RETRY_AFTER * size:
                server.add(error_reply(429, "busy", {"retry-after": value}), text_reply("fine"))
                request = ModelRequest(messages=[Message(role="user", content="hi")])
                with capture_logs() as logs:
                    try:
                        async with asyncio.timeout(5):
                            chunks = [c async for c in model.stream(request)]
                        text = "".join(c.text for c in chunks if isinstance(c, TextChunk))
                    except Exception:
                        text = ""
                waits = [e["wait"] for e in logs if e["event"] == "model call failed; retrying"]
                good = text == "fine" and all(
                    math.isfinite(w) and 0 <= w <= RETRY_MAX_WAIT for w in waits
                )
                failures += not good
    return _row(
        "bad Retry-After (nan, inf, negative, garbage, dates)",
        len(BAD_RETRY_AFTER) * size,
        failures,
    )


async def _run(agent: Agent, strategy: str) -> list[Event]:
    return [e async for e in agent.run("Go", strategy=strategy)]


async def _endless(size: int, workspace: Workspace) -> list[dict[str, Any]]:
    rows = []
    for label, limits, limit in [
        ("token_budget=50", {"token_budget": 50}, 50),
        ("max_turn_tokens=100", {"max_turn_tokens": 100}, 100),
    ]:
        agents = [
            (
                Agent(
                    workspace=workspace,
                    model=Endless(),
                    settings=AgentSettings(trajectory_dir=None, **limits),
                ),
                s,
            )
            for s in STRATEGIES
            for _ in range(size)
        ]
        runs = await asyncio.gather(*(_run(a, s) for a, s in agents))
        failures = 0
        for events in runs:
            end = events[-1]
            over = isinstance(end, RunFinishedEvent) and end.usage.total_tokens > limit + 1
            ok = _one_finish(events) and isinstance(end, RunFinishedEvent)
            failures += not (ok and end.status == "budget_exhausted" and not over)  # type: ignore[union-attr]
        rows.append(_row(f"endless stream, {label}, every planner", len(runs), failures))
    return rows


async def _side_effects(size: int, workspace: Workspace, seen: Any) -> dict[str, Any]:
    failures = 0
    for _ in range(size):  # one at a time: the tool's count is the side effect observed
        before = seen.counter
        agent = Agent(
            workspace=workspace,
            model=BreaksAfterCall(seen),
            settings=AgentSettings(trajectory_dir=None),
        )
        events = await _run(agent, "exploratory")
        failures += not (_one_finish(events) and seen.counter - before == 1)
    return _row("stream broken after a cache=False call ran (side effect twice?)", size, failures)


async def _hung(size: int, workspace: Workspace, seen: Any) -> dict[str, Any]:
    stuck = workspace.tools["stuck"]
    cap = stuck.max_hung_threads
    baseline = threading.active_count()
    turns = [call("stuck", seconds=30 + i) for i in range(3)]
    runs = []
    for r in range(size * 4):  # runs at once, each with three hanging calls, then the answer
        model_turns = [t.replace("30", str(30 + 3 * r)) for t in turns] + ["gave up"]
        agent = Agent(
            workspace=workspace,
            model=ScriptedModel(model_turns),
            settings=AgentSettings(trajectory_dir=None),
        )
        runs.append(_run(agent, "exploratory"))
    results = await asyncio.gather(*runs)
    held = threading.active_count() - baseline
    calls = [e for events in results for e in events if isinstance(e, ToolFinishedEvent)]
    timed_out = sum(e.status == "timeout" for e in calls)
    # A call is refused once `cap` calls hang; calls already running then are not, and may hang
    # too. Each run has one call at a time, so when the cap-th call hangs at most one call of
    # each other run is running: at most cap + runs - 1 calls can ever hang, however the
    # timeouts happen to interleave (a loaded machine staggers them).
    bound = cap + len(results) - 1
    failures = max(0, timed_out - bound) + sum(not _one_finish(e) for e in results)
    seen.unstuck.set()
    for _ in range(500):
        if stuck.hung.count == 0:
            break
        await asyncio.sleep(0.01)
    # anyio keeps returned worker threads idle for reuse: what must not be left is hung calls.
    lost = "nothing" if stuck.hung.count == 0 else f"{stuck.hung.count} hung calls not returned"
    return _row(
        f"sync tool hanging past its timeout, {len(results)} runs at once "
        f"({timed_out} abandoned, {len(calls) - timed_out} refused; threads held at most "
        f"{held}, cap {cap} per tool + one running call per other run)",
        len(calls),
        failures,
        lost,
    )


async def _measure(size: int) -> list[dict[str, Any]]:
    workspace = Workspace(TEST_WORKSPACE)
    seen = sys.modules[workspace.tools["echo"].fn.__module__].seen
    seen.__init__()
    rows = [await _retry_after(size)]
    rows += await _endless(size, workspace)
    rows.append(await _side_effects(size * 5, workspace, seen))
    rows.append(await _hung(size, workspace, seen))
    return rows


def measure(size: int = 5) -> list[dict[str, Any]]:
    """The rows of the fault table for model faults; `size` scales every attempt count."""
    return asyncio.run(_measure(size))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=5)
    rows = measure(parser.parse_args().size)
    print(f"{'attempt':<100} {'attempts':>8} {'failures':>8}  lost")
    for r in rows:
        print(f"{r['attempt']:<100} {r['attempts']:>8} {r['failures']:>8}  {r['lost']}")


if __name__ == "__main__":
    main()
