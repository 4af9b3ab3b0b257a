"""A `dag` plan approved as a whole (`approve_plan: true`): held once valid, before any node
runs; resumed with every node approved it runs (the plan is not asked for again), with a node
rejected the model plans again, reading the reason."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from agentrt import (
    Agent,
    AgentSettings,
    ApprovalRequestedEvent,
    Approve,
    Event,
    Reject,
    ScriptedModel,
    ToolStartedEvent,
    UserError,
)
from tests.helpers import TEST_WORKSPACE
from tests.planning.plans import finish, node, plan

STRATEGY = """description: Plans a person approves before they run.
planner: dag
step_budget: 4
tools: all
instructions: testing.j2
dag:
  approve_plan: true
"""

PLAN = plan(node("T1", "add", a=1, b=2), node("T2", "echo", ["T1"], text="sum: {T1}"))


def workspace(tmp_path: Path) -> Path:
    copy = tmp_path / "workspace"
    if copy.exists():
        return copy
    shutil.copytree(TEST_WORKSPACE, copy)
    (copy / "strategies" / "approved.yaml").write_text(STRATEGY)
    return copy


def agent(tmp_path: Path, turns: list[Any]) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(turns)
    settings = AgentSettings(trajectory_dir=tmp_path / "trajectories")
    return Agent(model, workspace=workspace(tmp_path), settings=settings), model


def of(events: list[Event], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


async def held_plan(tmp_path: Path) -> None:
    first, _ = agent(tmp_path, [PLAN])
    result = await first.run("Go", strategy="approved", run_id="plan-1")
    assert result.status == "needs_approval"
    events = result.trajectory.events
    assert of(events, ToolStartedEvent) == []  # nothing ran
    (asked,) = of(events, ApprovalRequestedEvent)
    assert [(c.call_id, c.node, c.tool, c.arguments) for c in asked.calls] == [
        ("T1", "T1", "add", {"a": 1, "b": 2}),
        ("T2", "T2", "echo", {"text": "sum: {T1}"}),
    ]


async def test_an_approved_plan_runs_without_being_asked_for_again(tmp_path: Path) -> None:
    await held_plan(tmp_path)
    later, model = agent(tmp_path, [finish("3")])
    result = await later.resume("plan-1", {"T1": Approve(), "T2": Approve()})
    assert (result.status, result.answer) == ("ok", "3")
    assert [r.purpose for r in model.requests] == ["join"]  # the plan was replayed
    assert [e.name for e in of(result.trajectory.events, ToolStartedEvent)] == ["add", "echo"]


async def test_a_rejected_plan_is_planned_again_with_the_reason(tmp_path: Path) -> None:
    await held_plan(tmp_path)
    again = plan(node("T1", "echo", text="hi"))
    later, model = agent(tmp_path, [again])
    result = await later.resume("plan-1", {"T1": Approve(), "T2": Reject(reason="no echo")})
    assert result.status == "needs_approval"  # the new plan is held in its turn
    asked = "\n".join(m.content for m in model.requests[0].messages)
    assert "a person rejected the plan: no echo" in asked
    (held,) = of(result.trajectory.events, ApprovalRequestedEvent)
    assert [c.call_id for c in held.calls] == ["T1@2"]
    assert of(result.trajectory.events, ToolStartedEvent) == []


async def test_a_plan_node_cannot_be_edited(tmp_path: Path) -> None:
    await held_plan(tmp_path)
    later, _ = agent(tmp_path, [])
    with pytest.raises(UserError, match="node T1 of a plan, which is approved or rejected"):
        later.resume("plan-1", {"T1": Approve(arguments={"a": 5, "b": 2})})


async def test_a_held_call_in_a_plan_stops_the_plan(tmp_path: Path) -> None:
    """Without `approve_plan`, a node whose call needs approval (the agent's policy) holds the
    run; resumed with it approved, the plan (replayed) goes on from there."""

    def needs_approval(tool: str, arguments: dict[str, Any]) -> bool:
        return tool == "add"

    settings = AgentSettings(trajectory_dir=tmp_path / "trajectories")
    first = Agent(
        ScriptedModel([PLAN]), workspace=TEST_WORKSPACE, settings=settings, approval=needs_approval
    )
    held = await first.run("Go", strategy="planned", run_id="plan-2")
    assert held.status == "needs_approval"
    (asked,) = of(held.trajectory.events, ApprovalRequestedEvent)
    assert [(c.call_id, c.node) for c in asked.calls] == [("T1", None)]
    assert of(held.trajectory.events, ToolStartedEvent) == []
    model = ScriptedModel([finish("3")])
    later = Agent(model, workspace=TEST_WORKSPACE, settings=settings, approval=needs_approval)
    result = await later.resume("plan-2", {"T1": Approve()})
    assert (result.status, result.answer) == ("ok", "3")
    assert [r.purpose for r in model.requests] == ["join"]
    assert [e.name for e in of(result.trajectory.events, ToolStartedEvent)] == ["add", "echo"]
