"""The token budget holds for every planner: a run whose usage reaches it ends
`budget_exhausted` with the steps it took (the kernel checks it before each step)."""

from __future__ import annotations

import json
from pathlib import Path

from agentrt import Agent, AgentSettings, ScriptedModel, ScriptedTurn, Usage, Workspace
from agentrt.events import RunFinishedEvent
from tests.analysis_answers import INTENT
from tests.helpers import MakeAgent, call, check_stream, last
from tests.planning.plans import node, plan, replan
from tests.planning.programs import assign, program

HEAVY = Usage(prompt_tokens=900, completion_tokens=200)
"""More than the budget of 1000 in one model call."""


async def finished(agent: Agent, strategy: str) -> RunFinishedEvent:
    events = [e async for e in agent.run("Go", strategy=strategy)]
    check_stream(events)
    return last(events)


async def test_react(make_agent: MakeAgent) -> None:
    """A turn that crosses the budget is the last."""
    turns = [ScriptedTurn(text=call("add", a=1, b=1), usage=HEAVY), "2"]
    end = await finished(make_agent(turns, token_budget=1000), "exploratory")
    assert (end.status, end.steps, end.usage.total_tokens) == ("budget_exhausted", 1, 1100)


async def test_dag(make_agent: MakeAgent) -> None:
    """A joiner that asks for another plan past the budget does not get one."""
    turns = [
        ScriptedTurn(text=plan(node("T1", "add", a=1, b=1)), usage=HEAVY),
        replan("not enough"),
        plan(node("T1", "add", a=2, b=2)),
    ]
    end = await finished(make_agent(turns, token_budget=1000), "planned")
    assert (end.status, end.steps) == ("budget_exhausted", 1)


async def test_vm(make_agent: MakeAgent) -> None:
    """An invalid program past the budget is not sent back for repair, nor to react."""
    invalid = ScriptedTurn(text=program(assign(0, final_answer="x")), usage=HEAVY)
    turns = [invalid, program(assign(0, final_answer="x"))]
    end = await finished(make_agent(turns, token_budget=1000), "programmed")
    assert (end.status, end.steps) == ("budget_exhausted", 1)


async def test_pipeline(tmp_path: Path) -> None:
    """An intent that crosses the budget is the pipeline's last question."""
    model = ScriptedModel([ScriptedTurn(text=json.dumps(INTENT), usage=HEAVY), "{}"])
    settings = AgentSettings(trajectory_dir=tmp_path, token_budget=1000)
    agent = Agent(Workspace(), model=model, settings=settings)
    end = await finished(agent, "analysis")
    assert (end.status, end.steps) == ("budget_exhausted", 1)
