"""The executor: concurrency, timeouts, failures, validation, the duplicate guard."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import anyio

from agentrt import (
    Agent,
    AgentSettings,
    Event,
    GuardEvent,
    ModelRequest,
    NarrowedTool,
    ScriptedModel,
    ToolCallEvent,
    ToolCallInvalidEvent,
    ToolFinishedEvent,
    ToolStartedEvent,
    Workspace,
)
from agentrt.catalog.toolbox import Toolbox
from agentrt.execution import Executor, PreparedCall, share_out
from agentrt.parsing import CallPiece
from agentrt.run import RunContext
from agentrt.tool import Tool, ToolContext, ToolStorage, run_tool
from tests.helpers import MakeAgent, call, check_stream, header, last


def observations(request: ModelRequest) -> list[tuple[str | None, str]]:
    """The tool results a model call was sent, in order, for the latest turn."""
    out: list[tuple[str | None, str]] = []
    for m in reversed(request.messages):
        if m.role != "tool":
            break
        out.append((m.tool_call_id, m.content))
    return out[::-1]


async def run(agent: Any, query: str = "Go") -> list[Event]:
    events = [e async for e in agent.run(query, strategy="exploratory")]
    check_stream(events)
    return events


def of(events: list[Event], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


class TestConcurrency:
    async def test_calls_of_a_turn_overlap(self, make_agent: MakeAgent, seen: Any) -> None:
        """Four calls in one turn are all running before any finishes."""
        turn = "".join(call("nap", seconds=0.05, label=f"n{i}") for i in range(4))
        events = await run(make_agent([turn, "done"]))
        started = [e.seq for e in of(events, ToolStartedEvent)]
        finished = [e.seq for e in of(events, ToolFinishedEvent)]
        assert len(started) == 4
        assert max(started) < min(finished)
        assert seen.max_in_flight == 4

    async def test_concurrency_cap(self, make_agent: MakeAgent, seen: Any) -> None:
        """No more calls of a run execute at once than max_concurrency allows."""
        turn = "".join(call("nap", seconds=0.02, label=f"n{i}") for i in range(6))
        events = await run(make_agent([turn, "done"], max_concurrency=2))
        assert seen.max_in_flight == 2
        assert [e.status for e in of(events, ToolFinishedEvent)] == ["ok"] * 6

    async def test_results_in_call_order(self, make_agent: MakeAgent) -> None:
        """Observations come back in the order of the calls, not of their completion."""
        turn = (
            call("nap", seconds=0.06, label="slow")
            + call("nap", seconds=0.0, label="fast")
            + call("add", a=1, b=2)
        )
        agent = make_agent([turn, "done"])
        events = await run(agent)
        finished = [e.call_id for e in of(events, ToolFinishedEvent)]
        assert finished[0] != "call_1_1"  # the slow one finished last …
        assert [cid for cid, _ in observations(agent.model.requests[1])] == [
            "call_1_1",
            "call_1_2",
            "call_1_3",
        ]  # … yet its result comes first
        assert observations(agent.model.requests[1])[2] == ("call_1_3", "3")

    async def test_sync_tools_run_in_a_worker_thread(
        self, make_agent: MakeAgent, seen: Any
    ) -> None:
        """A sync tool does not block the event loop: it runs in a worker thread."""
        await run(make_agent([call("echo", text="hi"), "done"]))
        assert seen.threads
        assert seen.threads[0] != "MainThread"


class TestRunners:
    async def test_a_custom_runner_gets_every_call_s_context(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        """A runner of one's own is handed each call's context, though the tool takes none
        (the default runner builds it only for a tool that declares one)."""
        given: list[ToolContext] = []

        async def runner(tool: Tool, arguments: dict[str, Any], context: ToolContext) -> Any:
            given.append(context)
            return await run_tool(tool, arguments, context)

        agent = Agent(
            workspace=workspace,
            model=ScriptedModel([call("echo", text="hi"), "done"]),
            settings=AgentSettings(trajectory_dir=tmp_path),
            tool_runner=runner,
        )
        events = await run(agent)
        (finished,) = of(events, ToolFinishedEvent)
        assert (finished.status, finished.output) == ("ok", "hi")
        assert [(c.run_id, c.call_id, c.step) for c in given] == [
            (events[0].run_id, finished.call_id, finished.step)
        ]


class TestFailures:
    async def test_a_tool_that_hangs_times_out(self, make_agent: MakeAgent) -> None:
        """A tool past its timeout ends as `timeout`; the model is told, the run goes on."""
        agent = make_agent([call("hang"), "gave up"])
        events = await run(agent)
        (done,) = of(events, ToolFinishedEvent)
        assert (done.status, done.error) == ("timeout", "hang did not finish within 0.2 s")
        assert observations(agent.model.requests[1]) == [
            ("call_1_1", "Error: hang did not finish within 0.2 s")
        ]
        assert last(events).status == "ok"

    async def test_a_blocked_sync_tool_times_out(self, make_agent: MakeAgent, seen: Any) -> None:
        """A sync tool stuck in its thread is abandoned at its timeout; the run goes on."""
        events = await run(make_agent([call("stuck", seconds=30), "gave up"]))
        (done,) = of(events, ToolFinishedEvent)
        assert done.status == "timeout"
        assert str(done.error).startswith("stuck did not finish within 0.1 s; its worker thread")
        assert last(events).answer == "gave up"
        seen.unstuck.set()  # the abandoned thread ends now, not 30 s later

    async def test_hung_sync_calls_are_capped(
        self, make_agent: MakeAgent, seen: Any, workspace: Workspace
    ) -> None:
        """Sync calls abandoned past their timeout are counted per tool; at the cap the tool is
        refused, with an observation saying why, and takes no new thread; once their threads
        return, it runs again."""
        stuck = workspace.tools["stuck"]
        hung = [call("stuck", seconds=30 + i) for i in range(4)]  # its cap: max_hung_threads
        threads = threading.active_count()
        try:
            events = await run(make_agent(["".join(hung), call("stuck", seconds=60), "gave up"]))
            done = of(events, ToolFinishedEvent)
            assert [d.status for d in done] == ["timeout"] * len(hung) + ["error"]
            assert "its worker thread cannot be stopped and is abandoned" in str(done[0].error)
            assert str(done[-1].error).startswith(
                "stuck was not run: 4 earlier call(s) of it hung past their timeout and still "
                "hold worker threads (at most 4)"
            )
            assert threading.active_count() <= threads + 4
        finally:
            seen.unstuck.set()  # the abandoned threads return now
            for _ in range(500):  # bounded: each pass yields the loop for 10 ms
                if getattr(stuck, "hung", None) is None or stuck.hung.count == 0:
                    break
                await asyncio.sleep(0.01)
        assert stuck.hung.count == 0
        events = await run(make_agent([call("stuck", seconds=1), "done"]))
        assert [d.output for d in of(events, ToolFinishedEvent)] == ["woke up"]

    async def test_a_call_given_up_before_its_thread_starts_neither_runs_nor_counts(
        self, workspace: Workspace
    ) -> None:
        """Cancelled before a worker thread takes it, a sync call is not run later, and holds
        no thread, so it is not counted as hung (it was, forever, on a loaded machine)."""
        stuck = workspace.tools["stuck"]
        ran = threading.Event()
        with anyio.CancelScope() as scope:
            scope.cancel()
            await stuck.hung.run(stuck, ran.set)
        assert scope.cancelled_caught
        assert stuck.hung.count == 0
        await anyio.to_thread.run_sync(lambda: None)  # a later call: the pool has moved on
        assert not ran.is_set()

    async def test_tool_error_goes_to_the_model(self, make_agent: MakeAgent) -> None:
        """A ToolError's message reaches the model verbatim."""
        agent = make_agent([call("fail", message="the index is offline"), "sorry"])
        events = await run(agent)
        (done,) = of(events, ToolFinishedEvent)
        assert (done.status, done.error) == ("error", "the index is offline")
        assert observations(agent.model.requests[1]) == [
            ("call_1_1", "Error: the index is offline")
        ]

    async def test_unexpected_exception_is_contained(self, make_agent: MakeAgent) -> None:
        """Any other exception names its type; it never crashes the run."""
        agent = make_agent([call("crash") + call("add", a=1, b=1), "ok"])
        events = await run(agent)
        statuses = sorted((e.name, e.status, e.error) for e in of(events, ToolFinishedEvent))
        assert statuses == [
            ("add", "ok", None),
            ("crash", "error", "ZeroDivisionError: division by zero"),
        ]
        assert last(events).status == "ok"


class TestAdmission:
    async def test_unknown_tool(self, make_agent: MakeAgent) -> None:
        """A call to a tool that does not exist is refused, naming the tools that do."""
        agent = make_agent(
            [call("teleport", to="Mars"), "ok"],
        )
        events = await run(agent)
        (invalid,) = of(events, ToolCallInvalidEvent)
        assert invalid.name == "teleport"
        assert invalid.reason.startswith("There is no tool named 'teleport' here. ")
        assert "add, " in invalid.reason
        assert not of(events, ToolCallEvent)
        assert observations(agent.model.requests[1]) == [("call_1_1", "Error: " + invalid.reason)]

    async def test_tool_outside_the_strategy(self, make_agent: MakeAgent) -> None:
        """A strategy's tool list is enforced: other tools are refused."""
        agent = make_agent([call("add", a=1, b=2), "ok"])
        events = [e async for e in agent.run("Go", strategy="direct")]
        (invalid,) = of(events, ToolCallInvalidEvent)
        assert invalid.reason == (
            "There is no tool named 'add' here. The tools you may call are: finish, echo."
        )

    async def test_invalid_arguments(self, make_agent: MakeAgent) -> None:
        """Arguments that fail the tool's schema are refused with each problem and the schema."""
        agent = make_agent([call("add", a="two", c=3), "ok"])
        events = await run(agent)
        (invalid,) = of(events, ToolCallInvalidEvent)
        assert invalid.reason.startswith(
            "Invalid arguments for add: a: Input should be a valid integer, unable to parse "
            "string as an integer; b: Field required; c: Extra inputs are not permitted. "
            "Call it again with arguments matching: "
        )
        assert '"b": {"description": "The second.", "type": "integer"}' in invalid.reason

    async def test_malformed_call(self, make_agent: MakeAgent) -> None:
        """A call whose JSON is broken is refused with the parser's explanation."""
        agent = make_agent(['<tool_call>{"name": "add", "arguments": {"a": 1,}}</tool_call>', "ok"])
        events = await run(agent)
        (invalid,) = of(events, ToolCallInvalidEvent)
        assert "not valid JSON" in invalid.reason
        assert invalid.raw.startswith("<tool_call>")


class TestDuplicateGuard:
    async def test_repeat_in_a_later_turn(self, make_agent: MakeAgent) -> None:
        """An identical call later in the run is answered from the cache, with a guard event."""
        agent = make_agent([call("add", a=2, b=2), call("add", b=2, a=2), "4"])
        events = await run(agent)
        (guard,) = of(events, GuardEvent)
        assert (guard.call_id, guard.original_call_id, guard.kind) == (
            "call_2_1",
            "call_1_1",
            "duplicate",
        )
        first, second = of(events, ToolFinishedEvent)
        assert (first.cached, second.cached, second.output) == (False, True, 4)
        assert len(of(events, ToolStartedEvent)) == 1
        (obs,) = observations(agent.model.requests[2])
        assert obs[1].startswith("(You already made this exact call as call_1_1;")
        assert obs[1].endswith("\n4")

    async def test_identical_calls_in_flight_run_once(
        self, workspace: Workspace, seen: Any, tmp_path: Path
    ) -> None:
        """Two identical calls running at the same time execute once; the second waits for
        the first's result (a plan can start identical nodes together)."""
        ctx = RunContext("run", ScriptedModel([]), header(), None)
        offered = [NarrowedTool(name="nap", source="template")]
        toolbox = Toolbox(ctx, workspace.tools, offered, None)
        executor = Executor(
            ctx,
            toolbox,
            timeout=5,
            max_concurrency=4,
            max_observation_chars=1000,
            storage=ToolStorage({}, tmp_path),
        )
        piece = CallPiece("nap", {"seconds": 0.02, "label": "x"}, "raw", "json")
        first = executor.admit(piece, step=1, call_id="a")
        second = executor.admit(piece, step=1, call_id="b")
        assert isinstance(first, PreparedCall)
        assert isinstance(second, PreparedCall)
        a, b = await asyncio.gather(executor.execute(first), executor.execute(second))
        assert (a.output, b.output) == ("slept 0.02", "slept 0.02")
        assert b.observation.startswith("(You already made this exact call as a;")
        assert seen.max_in_flight == 1

    async def test_uncached_tools_run_every_time(self, make_agent: MakeAgent) -> None:
        """A tool declared cache=False is never answered from the cache."""
        events = await run(make_agent([call("counter"), call("counter"), "ok"]))
        assert [e.output for e in of(events, ToolFinishedEvent)] == [1, 2]
        assert not of(events, GuardEvent)


class TestTurnObservations:
    def test_the_longest_share_what_the_shorter_leave(self) -> None:
        texts = ["a" * 10, "b" * 500, "c" * 2000]
        cut = share_out(texts, 1000)
        assert cut[0] == texts[0]  # short: whole
        assert [len(t.split("\n")[0]) for t in cut[1:]] == [495, 495]  # (1000 - 10) / 2 each
        assert cut[1].endswith("[… 5 more characters not shown]")
        assert cut[2].endswith("[… 1505 more characters not shown]")
        assert share_out(texts, 3000) == texts  # under the limit: nothing cut

    async def test_a_turn_of_long_results_fits_its_limit(self, make_agent: MakeAgent) -> None:
        calls = "\n".join(call("echo", text=letter * 3000) for letter in "xyz")
        agent = make_agent([calls, "done"], max_turn_observation_chars=3000)
        events = await run(agent)
        assert [len(str(e.output)) for e in of(events, ToolFinishedEvent)] == [3000] * 3
        seen = observations(agent.model.requests[1])  # type: ignore[attr-defined]
        assert [len(text.split("\n")[0]) for _, text in seen] == [1000] * 3
