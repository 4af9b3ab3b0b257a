"""The model's reasoning is taken out of every model call of a run, not only react's turns: in the
text (``<think>`` blocks, a stream that begins inside one), or sent apart by the server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentrt import (
    Agent,
    AgentSettings,
    ClassifiedEvent,
    Event,
    ModelResponseEvent,
    ReasoningDeltaEvent,
    ScriptedModel,
    ScriptedTurn,
    TextDeltaEvent,
    ToolCallEvent,
    Trajectory,
)
from agentrt.trajectory.replay import replay
from tests.helpers import MakeAgent, call, check_stream, classified, last
from tests.planning.plans import finish, node, plan


def of(events: list[Event], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def thoughts(events: list[Event]) -> dict[int | None, str]:
    """The reasoning of each step, joined."""
    out: dict[int | None, str] = {}
    for e in of(events, ReasoningDeltaEvent):
        out[e.step] = out.get(e.step, "") + e.text
    return out


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class City(BaseModel):
    name: str
    population: int


async def replays_the_same(result: Any, agent: Agent[Any, Any]) -> None:
    assert result.path is not None
    _, difference = await replay(Trajectory.read(result.path), agent=agent)
    assert difference is None, difference.summary()


class TestEveryPath:
    async def test_a_plan_written_after_thinking_runs(self, make_agent: MakeAgent) -> None:
        """dag: the plan stream reaches the plan parser without the reasoning before it."""
        agent = make_agent(
            ["<think>One node will do.</think>" + plan(node("T1", "add", a=1, b=2)), finish("3")]
        )
        events = [e async for e in agent.run("Go", strategy="planned")]
        check_stream(events)
        assert [e.call_id for e in of(events, ToolCallEvent)] == ["T1"]
        assert thoughts(events) == {1: "One node will do."}
        assert (last(events).status, last(events).answer) == ("ok", "3")
        # No later call is shown the reasoning.
        later = agent.model.requests[1].messages  # type: ignore[attr-defined]
        assert not [m for m in later if "One node" in m.content]

    async def test_a_classification_reads_the_content(self, make_agent: MakeAgent) -> None:
        """A classifier that thinks first still classifies; its reasoning has no step."""
        agent = make_agent(["<think>Mars is a planet.</think>" + classified("direct"), "Two."])
        events = [e async for e in agent.run("How many moons has Mars?")]
        (c,) = of(events, ClassifiedEvent)
        assert (c.query_type, c.method) == ("direct", "model")
        assert thoughts(events) == {None: "Mars is a planet."}

    async def test_a_typed_output_written_after_thinking_parses(self, tmp_path: Path) -> None:
        """The structured-output call: ``<think>…</think>{…}`` is a City."""
        model = ScriptedModel(
            [
                "Lyon has about 522,000 people.",
                '<think>Fill both fields.</think>{"name": "Lyon", "population": 522000}',
            ]
        )
        agent = Agent(model, output_type=City, settings=AgentSettings(trajectory_dir=tmp_path))
        result = await agent.run("How many people live in Lyon?")
        assert result.output == City(name="Lyon", population=522000)
        assert thoughts(result.trajectory.events) == {2: "Fill both fields."}
        await replays_the_same(result, agent)


class TestReasoningSentApart:
    async def test_it_streams_as_reasoning_and_survives_replay(self, tmp_path: Path) -> None:
        """A server's `reasoning_content`: reasoning events, never the answer; the record keeps
        it and the replaying model sends it again."""
        model = ScriptedModel([ScriptedTurn(reasoning="Two and two make four.", text="4")])
        agent = Agent(model, settings=AgentSettings(trajectory_dir=tmp_path))
        result = await agent.run("2 + 2?")
        events = result.trajectory.events
        assert result.answer == "4"
        assert thoughts(events) == {1: "Two and two make four."}
        assert "".join(e.text for e in of(events, TextDeltaEvent)) == "4"
        (response,) = of(events, ModelResponseEvent)
        assert (response.text, response.reasoning) == ("4", "Two and two make four.")
        await replays_the_same(result, agent)


class TestStartingInsideThink:
    def agent(self, tmp_path: Path, turns: list[str | ScriptedTurn]) -> Agent[Any, Any]:
        model = ScriptedModel(turns)
        model.starts_in_reasoning = True  # type: ignore[attr-defined]
        return Agent(model, tools=[add], settings=AgentSettings(trajectory_dir=tmp_path))

    async def test_only_the_closing_tag_arrives(self, tmp_path: Path) -> None:
        """The prompt opened the block: what comes before ``</think>`` is reasoning, and a call
        drafted there is never run. The record leads with the prompt's ``<think>``, so a
        replay (whose model does not start inside one) splits it the same."""
        draft = "I could " + call("add", a=2, b=2)
        agent = self.agent(tmp_path, [f"{draft}</think>It is 4."])
        result = await agent.run("2 + 2?")
        events = result.trajectory.events
        assert not of(events, ToolCallEvent)
        assert result.answer == "It is 4."
        assert thoughts(events) == {1: draft}
        (response,) = of(events, ModelResponseEvent)
        assert response.text == f"<think>{draft}</think>It is 4."
        await replays_the_same(result, agent)

    async def test_every_call_starts_inside(self, tmp_path: Path) -> None:
        """Each call's prompt opens a block: the turn after a call's results does too."""
        agent = self.agent(tmp_path, [f"Add.</think>{call('add', a=2, b=3)}", "It is 5.</think>5"])
        result = await agent.run("2 + 3?")
        assert thoughts(result.trajectory.events) == {1: "Add.", 2: "It is 5."}
        assert result.answer == "5"

    async def test_reasoning_sent_apart_first_means_the_text_is_content(
        self, tmp_path: Path
    ) -> None:
        """A server with a reasoning parser has split the text already: no ``</think>`` will
        come, so the text is not read as reasoning."""
        agent = self.agent(tmp_path, [ScriptedTurn(reasoning="Easy.", text="4")])
        result = await agent.run("2 + 2?")
        assert result.answer == "4"
        assert thoughts(result.trajectory.events) == {1: "Easy."}
        await replays_the_same(result, agent)
