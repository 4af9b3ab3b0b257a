"""The run's lifecycle: each way a run ends, always with exactly one run_finished."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anyio
import pytest

from agentrt import (
    Event,
    ModelError,
    ModelRequest,
    RunFinishedEvent,
    ToolStartedEvent,
    Trajectory,
    UserError,
)
from tests.helpers import MakeAgent, call, check_stream, classified, finish, last, types


def collapsed(events: list[Event]) -> list[str]:
    """Event types with runs of text_delta shown once (how text is chunked is not the point)."""
    out: list[str] = []
    for t in types(events):
        if not (t == "text_delta" and out and out[-1] == t):
            out.append(t)
    return out


def trajectory_of(tmp_path: Path) -> Trajectory:
    (path,) = (tmp_path / "trajectories").glob("*/*.jsonl")
    return Trajectory.read(path)


class TestEndings:
    async def test_ok_by_finish(self, make_agent: MakeAgent) -> None:
        """A call to finish ends the run with its answer.

        (This model never pauses while streaming, so each tool task gets its first chance to
        run once the turn's stream has ended: tool_started follows model_response.)"""
        agent = make_agent([classified("exploratory"), call("add", a=2, b=3), finish("5")])
        events = [e async for e in agent.run("What is 2 + 3?")]
        check_stream(events)
        assert collapsed(events) == [
            "run_started",
            "model_response",
            "classified",
            "strategy_selected",
            "tools_narrowed",
            "turn_started",
            "tool_call",
            "model_response",
            "tool_started",
            "tool_finished",
            "turn_started",
            "tool_call",
            "model_response",
            "tool_started",
            "tool_finished",
            "run_finished",
        ]
        end = last(events)
        assert (end.status, end.answer, end.steps) == ("ok", "5", 2)
        assert end.error is None

    async def test_ok_by_plain_answer(self, make_agent: MakeAgent) -> None:
        """A turn with text and no tool call is the answer."""
        agent = make_agent(["Paris is the capital of France."])
        events = [e async for e in agent.run("Capital of France?", strategy="direct")]
        check_stream(events)
        end = last(events)
        assert (end.status, end.answer, end.steps) == ("ok", "Paris is the capital of France.", 1)

    async def test_budget_exhausted(self, make_agent: MakeAgent) -> None:
        """A run still calling tools when its step budget is spent ends budget_exhausted."""
        agent = make_agent([call("echo", text="again")])
        events = [e async for e in agent.run("Loop forever", strategy="direct")]
        check_stream(events)
        end = last(events)
        assert (end.status, end.answer, end.steps) == ("budget_exhausted", None, 1)

    async def test_error_when_the_model_fails(self, make_agent: MakeAgent) -> None:
        """A model failure ends the run with status error and says what failed."""

        def broken(request: ModelRequest) -> str:
            raise ModelError("connection reset by peer")

        agent = make_agent([broken])
        events = [e async for e in agent.run("Anything", strategy="exploratory")]
        check_stream(events)
        end = last(events)
        assert end.status == "error"
        assert end.error == "ModelError: connection reset by peer"

    async def test_error_when_the_script_runs_out(self, make_agent: MakeAgent) -> None:
        """Asking a scripted model for one turn too many is a clear error, not a hang."""
        agent = make_agent([call("echo", text="x")])
        events = [e async for e in agent.run("Anything", strategy="exploratory")]
        end = last(events)
        assert end.status == "error"
        assert end.error is not None
        assert "has 1 turn(s) and was asked for turn 2" in end.error


class TestCancellation:
    async def test_aclose_while_a_tool_runs(
        self, make_agent: MakeAgent, tmp_path: Path, seen: object
    ) -> None:
        """A consumer that stops early cancels the tool in flight and leaves no task behind;
        the trajectory still ends with run_finished: cancelled."""
        agent = make_agent([call("nap", seconds=60, label="long")])
        run = agent.run("Take a long nap", strategy="exploratory")
        async for event in run:
            if isinstance(event, ToolStartedEvent):
                break
        await run.aclose()

        assert seen.cancelled == ["long"]  # type: ignore[attr-defined]
        assert asyncio.all_tasks() == {asyncio.current_task()}
        recorded = trajectory_of(tmp_path).events
        check_stream(recorded)
        end = last(recorded)
        assert (end.status, end.error) == ("cancelled", "the run was cancelled")
        # The turn it was cancelled in counts: a cancelled run returns no result to count from.
        assert end.steps == 1
        finished = [e for e in recorded if e.type == "tool_finished"]
        assert [(e.name, e.status) for e in finished] == [("nap", "cancelled")]  # type: ignore[attr-defined]

    async def test_consumer_cancelled_while_a_tool_runs(
        self, make_agent: MakeAgent, tmp_path: Path, seen: object
    ) -> None:
        """Cancelling the task that consumes the run (a dropped request) cancels the run."""
        agent = make_agent([call("nap", seconds=60, label="long")])
        tool_running = anyio.Event()

        async def consume() -> None:
            async for event in agent.run("Take a long nap", strategy="exploratory"):
                if isinstance(event, ToolStartedEvent):
                    tool_running.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await tool_running.wait()
            tg.cancel_scope.cancel()

        assert seen.cancelled == ["long"]  # type: ignore[attr-defined]
        assert asyncio.all_tasks() == {asyncio.current_task()}
        end = last(trajectory_of(tmp_path).events)
        assert end.status == "cancelled"

    async def test_aclose_before_the_first_event(
        self, make_agent: MakeAgent, tmp_path: Path
    ) -> None:
        """Closing a run that never started is harmless and records nothing."""
        run = make_agent(["never"]).run("Anything")
        await run.aclose()
        assert not (tmp_path / "trajectories").exists()


class TestApi:
    async def test_run_to_completion(self, make_agent: MakeAgent, tmp_path: Path) -> None:
        """run_to_completion returns the answer, the trajectory and where it was written."""
        agent = make_agent([classified("direct"), "Hello there."])
        result = await agent.run("Hi!")
        assert (result.answer, result.status) == ("Hello there.", "ok")
        assert result.trajectory.header.strategy == "direct"
        assert result.trajectory.header.tools.keys() == {"finish", "echo"}
        assert result.path is not None
        on_disk = Trajectory.read(result.path)
        assert on_disk.header == result.trajectory.header
        assert on_disk.events == result.trajectory.events

    async def test_bad_input_fails_before_running(self, make_agent: MakeAgent) -> None:
        """An empty query or an unknown strategy is refused at the call, with the reason."""
        agent = make_agent([])
        with pytest.raises(UserError, match="the query is empty"):
            agent.run("   ")
        with pytest.raises(
            UserError, match=r"no strategy 'nope' \(known: direct, exploratory, planned"
        ):
            agent.run("Hi", strategy="nope")
        with pytest.raises(UserError, match=r"run id '\.\./up' cannot name a trajectory file"):
            agent.run("Hi", run_id="../up")

    async def test_a_given_run_id(self, make_agent: MakeAgent) -> None:
        """A run id the caller has (an AG-UI client's) is the run's, and its file's name."""
        agent = make_agent(["Hello."])
        result = await agent.run("Hi", strategy="direct", run_id="client-run-1")
        assert result.trajectory.header.run_id == "client-run-1"
        assert {e.run_id for e in result.trajectory.events} == {"client-run-1"}
        assert result.path is not None
        assert result.path.name == "client-run-1.jsonl"

    async def test_session_history(self, make_agent: MakeAgent) -> None:
        """A run in a session sees the session's earlier questions and answers."""
        agent = make_agent(["Your name is Ada.", "You told me: Ada."])
        await agent.run("My name is Ada.", session_id="s1", strategy="direct")
        await agent.run("What is my name?", session_id="s1", strategy="direct")
        second = agent.model.requests[1]  # type: ignore[attr-defined]
        assert [(m.role, m.content) for m in second.messages[1:]] == [
            ("user", "My name is Ada."),
            ("assistant", "Your name is Ada."),
            ("user", "What is my name?"),
        ]

    async def test_sessions_are_separate(self, make_agent: MakeAgent) -> None:
        """Another session does not see them."""
        agent = make_agent(["First.", "Second."])
        await agent.run("One", session_id="a", strategy="direct")
        await agent.run("Two", session_id="b", strategy="direct")
        second = agent.model.requests[1]  # type: ignore[attr-defined]
        assert [m.content for m in second.messages[1:]] == ["Two"]

    async def test_every_event_parses_back(self, make_agent: MakeAgent) -> None:
        """Each event round-trips through the discriminated union."""
        from agentrt import event_adapter

        agent = make_agent([classified("exploratory"), call("add", a=1, b=1) + call("nope"), "2"])
        result = await agent.run("1+1?")
        for event in result.trajectory.events:
            assert event_adapter.validate_json(event.model_dump_json()) == event
        assert isinstance(result.trajectory.events[-1], RunFinishedEvent)
