"""Tool approval and `Agent.resume`: a run held for a person carries on from its trajectory
with the decisions; a run whose process was killed carries on from where its file stops. The
live model is asked only for the turns the recording lacks, and a completed call never runs
twice."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentrt import (
    Agent,
    AgentSettings,
    ApprovalRequestedEvent,
    Approve,
    Event,
    ModelResponseEvent,
    ReasoningDeltaEvent,
    Reject,
    RunFinishedEvent,
    RunResumedEvent,
    ScriptedModel,
    Tool,
    ToolFinishedEvent,
    ToolStartedEvent,
    Trajectory,
    UserError,
    tool,
)
from agentrt.trajectory.replay import replay
from tests.helpers import ROOT, call, run_python
from tests.resume import crash_run

QUESTION = "Pay 30 to Bob, and add 2 and 3."


class Ledger:
    """What the tools did, to count side effects."""

    def __init__(self) -> None:
        self.paid: list[dict[str, Any]] = []
        self.added = 0


def make_tools(ledger: Ledger) -> list[Tool]:
    @tool(requires_approval=True)
    def pay(to: str, amount: int) -> str:
        """Pay someone.

        Args:
            to: Who.
            amount: How much, at most 100.
        """
        ledger.paid.append({"to": to, "amount": amount})
        return f"paid {amount} to {to}"

    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: The first.
            b: The second.
        """
        ledger.added += 1
        return a + b

    return [pay, Tool(add)]


FIRST_TURN = call("add", a=2, b=3) + call("pay", to="Bob", amount=30)
"""Both calls in one turn: `add` runs, `pay` is held (`call_1_2`)."""


def agent_for(tmp_path: Path, model: ScriptedModel, ledger: Ledger, **kw: Any) -> Agent:
    settings = AgentSettings(trajectory_dir=tmp_path)
    return Agent(model, tools=make_tools(ledger), settings=settings, **kw)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def file_names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.jsonl"))


def finished(events: list[Event]) -> list[RunFinishedEvent]:
    return [e for e in events if isinstance(e, RunFinishedEvent)]


async def held_run(tmp_path: Path, ledger: Ledger) -> str:
    """A run that ends `needs_approval` on its first turn; its id."""
    agent = agent_for(tmp_path, ScriptedModel([FIRST_TURN]), ledger)
    result = await agent.run(QUESTION, run_id="pay-1")
    assert result.status == "needs_approval"
    return "pay-1"


class TestApproval:
    async def test_a_held_call_does_not_run_and_the_batch_does(self, tmp_path: Path) -> None:
        ledger = Ledger()
        model = ScriptedModel([FIRST_TURN, "never asked"])
        result = await agent_for(tmp_path, model, ledger).run(QUESTION)
        events = result.trajectory.events
        assert (result.status, result.answer) == ("needs_approval", None)
        assert (ledger.paid, ledger.added) == ([], 1)
        assert len(model.requests) == 1
        (asked,) = [e for e in events if isinstance(e, ApprovalRequestedEvent)]
        assert [c.model_dump(exclude_none=True) for c in asked.calls] == [
            {
                "call_id": "call_1_2",
                "tool": "pay",
                "arguments": {"to": "Bob", "amount": 30},
                "step": 1,
            }
        ]
        assert [e.name for e in events if isinstance(e, ToolStartedEvent)] == ["add"]
        assert isinstance(events[-1], RunFinishedEvent)
        assert len(finished(events)) == 1
        assert result.path is not None
        assert Trajectory.read(result.path).events[-1].type == "run_finished"

    async def test_a_policy_holds_calls_it_picks(self, tmp_path: Path) -> None:
        """`approval(tool, arguments)` holds `add` only when a is large."""
        ledger = Ledger()
        model = ScriptedModel([call("add", a=1, b=1) + call("add", a=500, b=1)])
        agent = Agent(
            model,
            tools=[make_tools(ledger)[1]],
            settings=AgentSettings(trajectory_dir=tmp_path),
            approval=lambda name, args: name == "add" and int(str(args["a"])) > 100,
        )
        result = await agent.run("Add.")
        (asked,) = [e for e in result.trajectory.events if isinstance(e, ApprovalRequestedEvent)]
        assert [(c.call_id, c.arguments) for c in asked.calls] == [("call_1_2", {"a": 500, "b": 1})]
        assert (result.status, ledger.added) == ("needs_approval", 1)


class TestResumeWithDecisions:
    async def test_approve_runs_the_call_and_asks_only_later_turns(self, tmp_path: Path) -> None:
        ledger = Ledger()
        run_id = await held_run(tmp_path, ledger)
        model = ScriptedModel(["Paid Bob; 2 + 3 = 5."])
        agent = agent_for(tmp_path, model, ledger)
        result = await agent.resume(run_id, {"call_1_2": Approve()})
        assert (result.status, result.answer) == ("ok", "Paid Bob; 2 + 3 = 5.")
        assert (ledger.paid, ledger.added) == ([{"to": "Bob", "amount": 30}], 1)
        assert len(model.requests) == 1  # the recorded first turn was not asked again
        tool_messages = [m.content for m in model.requests[0].messages if m.role == "tool"]
        assert tool_messages == ["5", "paid 30 to Bob"]
        assert result.path is not None
        assert result.path.name == "pay-1.jsonl"
        earlier = result.path.with_name("pay-1~1.jsonl")
        assert result.trajectory.header.resumed_from == "pay-1~1.jsonl"
        (resumed,) = [e for e in result.trajectory.events if isinstance(e, RunResumedEvent)]
        assert (resumed.previous, resumed.replayed_turns, resumed.reused_results) == (
            "pay-1~1.jsonl",
            1,
            1,
        )
        for path in (result.path, earlier):
            events = Trajectory.read(path).events
            assert len(finished(events)) == 1
            assert isinstance(events[-1], RunFinishedEvent)
        assert Trajectory.read(earlier).events[-1].status == "needs_approval"  # type: ignore[union-attr]

    async def test_a_scoped_run_resumes_in_its_scope(self, tmp_path: Path) -> None:
        """The scope is in the header: the resumed attempt is told it as the first was."""
        ledger = Ledger()
        first = agent_for(tmp_path, ScriptedModel([FIRST_TURN]), ledger)
        held = await first.run(QUESTION, run_id="pay-s", scope=["ledger/2024", "notes"])
        assert held.trajectory.header.scope == ["ledger/2024", "notes"]
        model = ScriptedModel(["Paid."])
        result = await agent_for(tmp_path, model, ledger).resume("pay-s", {"call_1_2": Approve()})
        assert result.status == "ok", result.error
        assert result.trajectory.header.scope == ["ledger/2024", "notes"]
        system = " ".join(m.content for m in model.requests[0].messages if m.role == "system")
        assert "ledger" in system
        assert "2024" in system

    async def test_reject_gives_the_model_the_reason(self, tmp_path: Path) -> None:
        ledger = Ledger()
        run_id = await held_run(tmp_path, ledger)
        model = ScriptedModel(["I did not pay Bob."])
        result = await agent_for(tmp_path, model, ledger).resume(
            run_id, {"call_1_2": Reject(reason="Bob was paid yesterday")}
        )
        assert (result.status, ledger.paid) == ("ok", [])
        tool_messages = [m.content for m in model.requests[0].messages if m.role == "tool"]
        assert tool_messages[1] == "Error: a person rejected this call: Bob was paid yesterday"
        (rejected,) = [
            e
            for e in result.trajectory.events
            if isinstance(e, ToolFinishedEvent) and e.call_id == "call_1_2"
        ]
        assert rejected.status == "error"

    async def test_approve_with_edited_arguments(self, tmp_path: Path) -> None:
        ledger = Ledger()
        run_id = await held_run(tmp_path, ledger)
        model = ScriptedModel(["Paid."])
        edit = Approve(arguments={"to": "Bob", "amount": 20})
        result = await agent_for(tmp_path, model, ledger).resume(run_id, {"call_1_2": edit})
        assert (result.status, ledger.paid) == ("ok", [{"to": "Bob", "amount": 20}])

    async def test_a_second_hold_resumes_again_keeping_the_first_decision(
        self, tmp_path: Path
    ) -> None:
        """Resumed, the model pays again (held: `call_2_1`); the second resume replays both
        turns, reuses the first payment and runs the second: two payments in all."""
        ledger = Ledger()
        run_id = await held_run(tmp_path, ledger)
        again = ScriptedModel([call("pay", to="Ann", amount=5)])
        agent = agent_for(tmp_path, again, ledger)
        second = await agent.resume(run_id, {"call_1_2": Approve()})
        assert second.status == "needs_approval"
        model = ScriptedModel(["Both paid."])
        third = await agent_for(tmp_path, model, ledger).resume(run_id, {"call_2_1": Approve()})
        assert third.status == "ok"
        assert [p["to"] for p in ledger.paid] == ["Bob", "Ann"]
        assert (ledger.added, len(model.requests)) == (1, 1)
        assert file_names(tmp_path) == ["pay-1.jsonl", "pay-1~1.jsonl", "pay-1~2.jsonl"]


class TestResumeRefuses:
    async def test_unknown_run(self, tmp_path: Path) -> None:
        agent = agent_for(tmp_path, ScriptedModel([]), Ledger())
        with pytest.raises(UserError, match="no run 'nope' to resume"):
            agent.resume("nope")

    async def test_a_finished_run(self, tmp_path: Path) -> None:
        agent = agent_for(tmp_path, ScriptedModel(["Hi."]), Ledger())
        await agent.run("Hello?", run_id="done-1")
        with pytest.raises(UserError, match=r"run done-1 finished \(ok\)"):
            agent.resume("done-1")

    async def test_no_decisions_lists_the_pending_calls(self, tmp_path: Path) -> None:
        ledger = Ledger()
        run_id = await held_run(tmp_path, ledger)
        agent = agent_for(tmp_path, ScriptedModel([]), ledger)
        with pytest.raises(UserError, match=r'awaits approval of call_1_2 \(pay \{"to": "Bob"'):
            agent.resume(run_id)

    async def test_a_decision_for_a_call_not_pending(self, tmp_path: Path) -> None:
        ledger = Ledger()
        run_id = await held_run(tmp_path, ledger)
        agent = agent_for(tmp_path, ScriptedModel([]), ledger)
        with pytest.raises(
            UserError, match=r"no call 'call_9' awaiting approval \(pending: call_1_2"
        ):
            agent.resume(run_id, {"call_9": Approve()})

    async def test_edited_arguments_that_do_not_validate(self, tmp_path: Path) -> None:
        ledger = Ledger()
        run_id = await held_run(tmp_path, ledger)
        agent = agent_for(tmp_path, ScriptedModel([]), ledger)
        bad = Approve(arguments={"to": "Bob", "amount": "lots"})
        with pytest.raises(UserError, match="edited arguments do not fit pay: field 'amount'"):
            agent.resume(run_id, {"call_1_2": bad})
        assert file_names(tmp_path) == ["pay-1.jsonl"]  # untouched


class TestResumeAfterACrash:
    async def test_a_killed_run_resumes_without_repeating_its_side_effect(
        self, tmp_path: Path
    ) -> None:
        notes = tmp_path / "notes.txt"
        folder = tmp_path / "trajectories"
        path = kill_mid_run(folder, notes)

        async def fast() -> str:
            return "done"

        model = ScriptedModel(["Noted and waited."])
        agent = Agent(
            model,
            tools=crash_run.tools(notes, fast),
            settings=AgentSettings(trajectory_dir=folder),
        )
        result = await agent.resume(crash_run.RUN_ID)
        assert (result.status, result.answer) == ("ok", "Noted and waited.")
        assert lines(notes) == ["hello"]  # the completed call was not run again
        assert len(model.requests) == 1  # only the turn after the recording
        (resumed,) = [e for e in result.trajectory.events if isinstance(e, RunResumedEvent)]
        # Both recorded turns replayed; `note` reused, `slow` (interrupted) run again.
        assert (resumed.replayed_turns, resumed.reused_results) == (2, 1)
        assert result.path == path
        assert Trajectory.read(path).header.resumed_from == "crash-1~1.jsonl"
        killed = Trajectory.read(path.with_name("crash-1~1.jsonl"), torn=True)
        assert killed.finished is None


def kill_mid_run(folder: Path, notes: Path) -> Path:
    """Run `crash_run` in a process, SIGKILL it while `slow` waits; the run's file."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.resume.crash_run", str(folder), str(notes)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        path = wait_for_slow_start(folder, process)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert process.stderr is not None
        process.stderr.close()
    assert notes.read_text() == "hello\n"
    return path


def wait_for_slow_start(folder: Path, process: subprocess.Popen[bytes]) -> Path:
    """The run's file, once it shows `slow`'s `tool_started` (polled, with a deadline)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            assert process.stderr is not None
            pytest.fail(f"the run exited early: {process.stderr.read().decode()}")
        for path in folder.glob("*/crash-1.jsonl"):
            lines = path.read_text().splitlines()
            if any(_started_slow(line) for line in lines):
                return path
        time.sleep(0.05)
    pytest.fail("the run never started `slow`")


def _started_slow(line: str) -> bool:
    try:
        event = json.loads(line)
    except ValueError:
        return False  # half-written
    return bool(event.get("type") == "tool_started" and event.get("name") == "slow")


class TestReplayOfBothFiles:
    async def test_replay_reads_the_held_and_the_resumed_file(self, tmp_path: Path) -> None:
        ledger = Ledger()
        run_id = await held_run(tmp_path, ledger)
        agent = agent_for(tmp_path, ScriptedModel(["Paid."]), ledger)
        result = await agent.resume(run_id, {"call_1_2": Approve()})
        assert result.path is not None
        like = agent_for(tmp_path, ScriptedModel([]), Ledger())
        held = Trajectory.read(result.path.with_name("pay-1~1.jsonl"))
        _, difference = await replay(held, agent=like)
        assert difference is None
        _, difference = await replay(Trajectory.read(result.path), agent=like)
        assert difference is None


def readme_snippet() -> str:
    """The README's Python block under "Tool approval and resume"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Tool approval and resume\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"^```python\n(.*?)^```$", section, re.DOTALL | re.MULTILINE)
    assert found is not None
    return found.group(1)


def test_the_readme_snippet_runs_as_written(tmp_path: Path) -> None:
    (tmp_path / "approve.py").write_text(readme_snippet(), encoding="utf-8")
    done = run_python("approve.py", cwd=tmp_path)
    assert done.stdout.splitlines() == ["needs_approval", "ok Paid."]
    assert file_names(tmp_path) == ["pay-bob.jsonl", "pay-bob~1.jsonl"]


async def test_a_recorded_answer_that_began_in_reasoning_replays_as_it_was(
    tmp_path: Path,
) -> None:
    """A model whose prompt opens `<think>` (`starts_in_reasoning`): its recorded answer holds
    that `<think>`, so the replayed turn reasons and calls exactly as the original did."""
    ledger = Ledger()
    first = ScriptedModel(["I should pay.</think>" + FIRST_TURN])
    first.starts_in_reasoning = True  # type: ignore[attr-defined]
    held = await agent_for(tmp_path, first, ledger).run(QUESTION, run_id="think-1")
    assert held.status == "needs_approval"
    live = ScriptedModel(["Done.</think>Paid."])
    live.starts_in_reasoning = True  # type: ignore[attr-defined]
    result = await agent_for(tmp_path, live, ledger).resume("think-1", {"call_1_2": Approve()})
    assert (result.status, result.answer) == ("ok", "Paid.")

    def reasoning(events: list[Event], step: int) -> str:
        return "".join(
            e.text for e in events if isinstance(e, ReasoningDeltaEvent) and e.step == step
        )

    assert reasoning(result.trajectory.events, 1) == reasoning(held.trajectory.events, 1)
    assert reasoning(result.trajectory.events, 1) == "I should pay."

    def recorded(events: list[Event]) -> list[str]:
        return [e.text for e in events if isinstance(e, ModelResponseEvent) and e.step == 1]

    assert recorded(result.trajectory.events) == recorded(held.trajectory.events)


async def test_of_two_resumes_made_at_once_the_second_ends_error(tmp_path: Path) -> None:
    """Both read the held file; the first to start sets it aside and resumes. The second
    ends `error` without touching the first's file."""
    ledger = Ledger()
    run_id = await held_run(tmp_path, ledger)
    one = agent_for(tmp_path, ScriptedModel(["Paid."]), ledger).resume(
        run_id, {"call_1_2": Approve()}
    )
    two = agent_for(tmp_path, ScriptedModel(["Paid again."]), ledger).resume(
        run_id, {"call_1_2": Approve()}
    )
    first = await one
    assert first.status == "ok"
    second = await two
    assert second.status == "error"
    assert "another resume of the run came first" in str(second.error)
    assert len(ledger.paid) == 1
    assert file_names(tmp_path) == ["pay-1.jsonl", "pay-1~1.jsonl"]
    assert first.path is not None
    assert Trajectory.read(first.path).events[-1].status == "ok"  # type: ignore[union-attr]
