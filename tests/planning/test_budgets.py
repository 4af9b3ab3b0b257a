"""The token budget holds for every planner: a run whose usage reaches it ends
`budget_exhausted` with the steps it took (the kernel checks it before each step, the run's
metered stream while an answer streams)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentrt import Agent, AgentSettings, ScriptedModel, ScriptedTurn, Usage, Workspace
from agentrt.events import ModelErrorEvent, ModelResponseEvent, RunFinishedEvent
from agentrt.models.base import ModelChunk, ModelRequest, TextChunk
from agentrt.trajectory.format import Trajectory
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
    agent = Agent(workspace=Workspace(), model=model, settings=settings)
    end = await finished(agent, "analysis")
    assert (end.status, end.steps) == ("budget_exhausted", 1)


class EndlessModel:
    """A model that does not stop writing, and reports usage only at the end (never). It gives
    up after `LIMIT` chunks, so that a run that does not cut it fails its test, not hangs."""

    LIMIT = 20_000

    __test__ = False
    name = "endless"
    native_tools = False

    def __init__(self) -> None:
        self.chunks = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        while self.chunks < self.LIMIT:
            await asyncio.sleep(0)  # a real server's pace: the loop runs between chunks
            self.chunks += 1
            yield TextChunk(text=" word")


def endless_agent(workspace: Workspace, tmp_path: Path, **settings: Any) -> Agent:
    settings.setdefault("trajectory_dir", tmp_path)
    return Agent(workspace=workspace, model=EndlessModel(), settings=AgentSettings(**settings))


STRATEGIES = ["exploratory", "planned", "programmed", "analysis"]


def _workspace(strategy: str, workspace: Workspace) -> Workspace:
    return Workspace() if strategy == "analysis" else workspace


class TestMidStream:
    """Budgets bind while an answer streams, in every planner: an endless answer is cut, the run
    ends `budget_exhausted` and its trajectory keeps the partial answer and why it was cut."""

    @pytest.mark.parametrize("strategy", STRATEGIES)
    async def test_token_budget(self, strategy: str, workspace: Workspace, tmp_path: Path) -> None:
        """An endless answer stops at the run's token budget."""
        agent = endless_agent(_workspace(strategy, workspace), tmp_path, token_budget=50)
        result = await agent.run("Go", strategy=strategy)
        assert result.status == "budget_exhausted"
        assert agent.model.chunks <= 51  # type: ignore[attr-defined]
        events = Trajectory.read(result.path).events
        check_stream(events)
        (partial,) = [e for e in events if isinstance(e, ModelResponseEvent)]
        assert partial.text == " word" * 50
        assert partial.usage.completion_tokens == 51
        (error,) = [e for e in events if isinstance(e, ModelErrorEvent)]
        assert error.error.startswith("TokenLimitReached: the run passed its token budget of 50")
        assert not error.retrying
        assert last(events).usage.total_tokens == 51

    @pytest.mark.parametrize("strategy", STRATEGIES)
    async def test_turn_cap(self, strategy: str, workspace: Workspace, tmp_path: Path) -> None:
        """Without a token budget, one answer stops at `max_turn_tokens`."""
        agent = endless_agent(_workspace(strategy, workspace), tmp_path, max_turn_tokens=200)
        result = await agent.run("Go", strategy=strategy)
        assert result.status == "budget_exhausted"
        events = Trajectory.read(result.path).events
        (error,) = [e for e in events if isinstance(e, ModelErrorEvent)]
        assert "the cap of 200 tokens per model call" in error.error
        (partial,) = [e for e in events if isinstance(e, ModelResponseEvent)]
        assert partial.text == " word" * 200

    async def test_budget_counts_earlier_calls(self, make_agent: MakeAgent) -> None:
        """The streaming answer is counted on top of what the run spent before it."""
        first = ScriptedTurn(text=call("add", a=1, b=1), usage=Usage(prompt_tokens=950))
        long = " ".join(["word"] * 200)
        events = [
            e
            async for e in make_agent([first, long], token_budget=1000).run(
                "Go", strategy="exploratory"
            )
        ]
        check_stream(events)
        end = last(events)
        assert (end.status, end.steps) == ("budget_exhausted", 2)
        partial = [e for e in events if isinstance(e, ModelResponseEvent)][-1]
        assert partial.usage.completion_tokens == 51  # 950 + 51 passes 1000
