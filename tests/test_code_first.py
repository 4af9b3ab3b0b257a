"""The code-first agent: tools, instructions, typed output, deps and history given in code, no
workspace folder; and `run` as one object that is both awaited and iterated."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from agentrt import (
    Agent,
    AgentSettings,
    ClassifiedEvent,
    Message,
    NativeToolCall,
    OutputDeltaEvent,
    RunFailed,
    RunFinishedEvent,
    ScriptedModel,
    ScriptedTurn,
    ToolContext,
    ToolDefinitionError,
    ToolFinishedEvent,
    Trajectory,
    UserError,
    tool,
)
from agentrt.trajectory.replay import replay
from tests.helpers import TEST_WORKSPACE, call, check_stream


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


def recorded_runs(folder: Path) -> list[Trajectory]:
    return [Trajectory.read(p) for p in folder.rglob("*.jsonl")]


class Opaque:
    """Nothing pydantic can describe."""


def takes_opaque(thing: Opaque) -> str:
    """Use a thing."""
    return ""


def settings(tmp_path: Path) -> AgentSettings:
    """The test agents' settings: trajectories in `tmp_path`."""
    return AgentSettings(trajectory_dir=tmp_path)


class TestCodeFirst:
    async def test_a_function_is_a_tool_and_no_call_classifies(self, tmp_path: Path) -> None:
        """One strategy: the model is asked once per turn, nothing else."""
        model = ScriptedModel([call("add", a=2, b=3), "It is 5."])
        agent = Agent(model, tools=[add], instructions="Be terse.", settings=settings(tmp_path))
        result = await agent.run("What is 2 + 3?")
        assert (result.status, result.output) == ("ok", "It is 5.")
        assert len(model.requests) == 2  # two turns, no classification
        classified = [e for e in result.trajectory.events if isinstance(e, ClassifiedEvent)]
        assert [(c.query_type, c.method) for c in classified] == [("agent", "only")]
        system = model.requests[0].messages[0].content
        assert system.startswith("Be terse.")
        assert "## add\nAdd two integers." in system
        assert '"a": {"description": "The first."' in system
        assert result.trajectory.header.workspace is None
        assert result.path is not None
        assert result.path.name.endswith(".jsonl")
        check_stream(result.trajectory.events)

    async def test_instructions_are_a_template_over_the_tools(self, tmp_path: Path) -> None:
        model = ScriptedModel(["ok"])
        agent = Agent(
            model,
            tools=[add],
            instructions="Tools: {{ tools | map(attribute='name') | join(', ') }}.",
            settings=settings(tmp_path),
        )
        await agent.run("hi")
        assert model.requests[0].messages[0].content.startswith("Tools: finish, add.")

    async def test_code_tools_join_a_workspace_folder(self, tmp_path: Path) -> None:
        """Every strategy offers them, even one that lists its own tools."""

        def shout(text: str) -> str:
            """Say it louder."""
            return text.upper()

        model = ScriptedModel([call("shout", text="hi"), "HI"])
        agent = Agent(model, workspace=TEST_WORKSPACE, tools=[shout], settings=settings(tmp_path))
        result = await agent.run("shout hi", strategy="direct")
        outputs = [e.output for e in result.trajectory.events if isinstance(e, ToolFinishedEvent)]
        assert outputs == ["HI"]
        assert "shout" in result.trajectory.header.tools

    def test_bad_declarations_are_user_errors_naming_the_culprit(self) -> None:
        model = ScriptedModel([])
        with pytest.raises(ToolDefinitionError, match="tool 'takes_opaque': its parameters"):
            Agent(model, tools=[takes_opaque])
        with pytest.raises(ToolDefinitionError, match="tool 'add': its parameters"):
            Agent(model, tools=[tool(name="add")(takes_opaque)])
        with pytest.raises(UserError, match="two tools are named 'add'"):
            Agent(model, tools=[add, tool(name="add")(settings)])
        with pytest.raises(UserError, match="output_type Opaque cannot be validated"):
            Agent(model, output_type=Opaque)
        with pytest.raises(UserError, match="instructions= is for an agent without a workspace"):
            Agent(model, workspace=TEST_WORKSPACE, instructions="x")
        with pytest.raises(UserError, match="min_fit= is for an agent without a workspace"):
            Agent(model, workspace=TEST_WORKSPACE, min_fit=0.1)
        unknown = AgentSettings(default_strategy="nope")
        wanted = r"default_strategy 'nope' is not a strategy of .*it has: direct, "
        with pytest.raises(UserError, match=wanted):
            Agent(model, workspace=TEST_WORKSPACE, settings=unknown)
        with pytest.raises(ToolDefinitionError, match="'add' is not a function"):
            Agent(model, tools=["add"])  # type: ignore[list-item]


class TestRunObject:
    async def test_awaited_iterated_or_both(self, tmp_path: Path) -> None:
        agent = Agent(ScriptedModel(["one", "two", "three"]), settings=settings(tmp_path))
        streamed = [e async for e in agent.run("q1")]
        assert isinstance(streamed[-1], RunFinishedEvent)
        assert streamed[-1].answer == "one"
        run = agent.run("q2")
        first = await run.__anext__()
        assert first.type == "run_started"
        result = await run  # the rest of it
        assert result.output == "two"
        assert result.trajectory.events[0] == first
        assert run.result is result
        # A coroutine too: a task can run it.
        task_result = await asyncio.create_task(agent.run("q3"))
        assert task_result.output == "three"
        assert task_result.usage.total_tokens > 0

    async def test_leaving_early_still_finishes_the_run_once(self, tmp_path: Path) -> None:
        model = ScriptedModel([call("add", a=1, b=1) + " and then a long text"], token_delay=0.01)
        agent = Agent(model, tools=[add], settings=settings(tmp_path))
        async with agent.run("q") as run:
            async for event in run:
                if event.type == "text_delta":
                    break
        with pytest.raises(UserError, match="the run has not finished"):
            _ = run.result
        (recorded,) = recorded_runs(tmp_path)
        finished = [e for e in recorded.events if isinstance(e, RunFinishedEvent)]
        assert [e.status for e in finished] == ["cancelled"]


class City(BaseModel):
    name: str
    population: int = Field(gt=0)


@dataclasses.dataclass
class Point:
    x: float
    y: float


class Pair(TypedDict):
    left: str
    right: str


class TestTypedOutput:
    @pytest.mark.parametrize(
        ("output_type", "answer", "expected"),
        [
            (City, '{"name": "Lyon", "population": 522000}', City(name="Lyon", population=522000)),
            (Point, 'Here: {"x": 1.5, "y": -2}', Point(1.5, -2.0)),
            (Pair, '{"left": "a", "right": "b"}', {"left": "a", "right": "b"}),
            (int, "42", 42),
            (int | str, '"forty-two"', "forty-two"),
        ],
    )
    async def test_an_answer_already_of_the_type_is_the_output(
        self, tmp_path: Path, output_type: Any, expected: Any, answer: str
    ) -> None:
        model = ScriptedModel([answer])
        agent = Agent(model, output_type=output_type, settings=settings(tmp_path))
        result = await agent.run("q")
        assert result.output == expected
        assert len(model.requests) == 1
        end = result.trajectory.events[-1]
        assert isinstance(end, RunFinishedEvent)
        assert end.output == agent.output.dump(expected)  # JSON in the trajectory

    async def test_a_prose_answer_is_asked_again_constrained(self, tmp_path: Path) -> None:
        """The extra call carries the output's JSON schema; its answer streams as
        `output_delta` events, partially parsed."""
        model = ScriptedModel(
            ["Lyon has about 522,000 people.", '{"name": "Lyon", "population": 522000}']
        )
        agent = Agent(model, output_type=City, settings=settings(tmp_path))
        result = await agent.run("How many people live in Lyon?")
        assert result.output == City(name="Lyon", population=522000)
        assert model.requests[1].json_schema == City.model_json_schema()
        assert model.requests[1].purpose == "output"
        ask = model.requests[1].messages[-1].content
        # Quoted beside the request: small models copy from there.
        assert ask.startswith("Your answer was:\nLyon has about 522,000 people.\n")
        deltas = [e for e in result.trajectory.events if isinstance(e, OutputDeltaEvent)]
        assert deltas[0].output == {"name": ""} or deltas[0].output == {}
        assert deltas[-1].output == {"name": "Lyon", "population": 522000}
        assert deltas[-1].valid
        assert result.messages[-1] == Message(
            role="assistant", content='{"name": "Lyon", "population": 522000}'
        )
        check_stream(result.trajectory.events)

    async def test_an_invalid_answer_goes_back_with_its_errors(self, tmp_path: Path) -> None:
        bad = '{"name": "Lyon", "population": -1}'
        model = ScriptedModel(["prose", bad, '{"name": "Lyon", "population": 5}'])
        agent = Agent(model, output_type=City, settings=settings(tmp_path))
        result = await agent.run("q")
        assert result.output == City(name="Lyon", population=5)
        fix = model.requests[2].messages[-1].content
        assert fix.startswith(
            "That answer is not valid: population: Input should be greater than 0"
        )

    async def test_retries_spent_end_the_run_naming_the_last_error(self, tmp_path: Path) -> None:
        model = ScriptedModel(["prose", '{"name": "Lyon"}', '{"name": "Lyon"}'])
        agent = Agent(model, output_type=City, output_retries=1, settings=settings(tmp_path))
        result = await agent.run("q")
        assert result.status == "error"
        assert result.error == (
            "OutputInvalid: the final answer is not a valid City after 2 tries: "
            "population: Field required"
        )
        with pytest.raises(RunFailed, match="the run ended error: OutputInvalid"):
            _ = result.output
        assert len([e for e in result.trajectory.events if e.type == "run_finished"]) == 1


class Database:
    def __init__(self, rows: dict[str, int]) -> None:
        self.rows = rows


def stock(ctx: ToolContext[Database], item: str) -> int:
    """How many of an item are in stock."""
    return ctx.deps.rows[item]


class TestDeps:
    async def test_a_tool_reads_the_runs_deps(self, tmp_path: Path) -> None:
        model = ScriptedModel([call("stock", item="pens"), "12 pens."])
        agent = Agent(model, tools=[stock], deps_type=Database, settings=settings(tmp_path))
        result = await agent.run("pens?", deps=Database({"pens": 12}))
        outputs = [e.output for e in result.trajectory.events if isinstance(e, ToolFinishedEvent)]
        assert outputs == [12]
        assert result.trajectory.header.deps_type == "tests.test_code_first.Database"
        assert "rows" not in result.trajectory.header.model_dump_json()  # never the value

    async def test_a_replay_takes_substitute_deps(self, tmp_path: Path) -> None:
        """A recorded run re-checked against another database: the replay tells the
        difference."""
        model = ScriptedModel([call("stock", item="pens"), "12 pens."])
        agent = Agent(model, tools=[stock], deps_type=Database, settings=settings(tmp_path))
        recorded = (await agent.run("pens?", deps=Database({"pens": 12}))).trajectory
        _, same = await replay(recorded, agent=agent, deps=Database({"pens": 12}))
        assert same is None
        _, changed = await replay(recorded, agent=agent, deps=Database({"pens": 3}))
        assert changed is not None
        assert "12" in str(changed)
        assert "3" in str(changed)

    def test_missing_or_wrong_deps_fail_before_the_run(self) -> None:
        agent = Agent(ScriptedModel([]), tools=[stock], deps_type=Database)
        with pytest.raises(UserError, match="tool 'stock' needs deps"):
            agent.run("pens?")
        with pytest.raises(UserError, match="deps is a dict, not the agent's deps_type Database"):
            agent.run("pens?", deps={"pens": 1})  # type: ignore[arg-type]
        with pytest.raises(UserError, match="tool 'stock' reads deps of type Database"):
            Agent(ScriptedModel([]), tools=[stock], deps_type=str)


class TestHistory:
    async def test_a_result_messages_carry_the_conversation_on(self, tmp_path: Path) -> None:
        model = ScriptedModel([call("add", a=2, b=3), "5.", "10."])
        agent = Agent(model, tools=[add], settings=settings(tmp_path))
        first = await agent.run("2 + 3?")
        roles = [m.role for m in first.messages]
        assert roles == ["user", "assistant", "tool", "assistant"]
        assert first.messages[2].content == "5"
        second = await agent.run("Double it.", message_history=first.messages)
        sent = [m for m in model.requests[2].messages if m.role != "system"]
        assert sent == [*first.messages, Message(role="user", content="Double it.")]
        assert second.messages == [
            *first.messages,
            Message(role="user", content="Double it."),
            Message(role="assistant", content="10."),
        ]

    async def test_a_session_keeps_tool_calls_and_results(self, tmp_path: Path) -> None:
        model = ScriptedModel([call("add", a=2, b=3), "5.", "10."])
        agent = Agent(model, tools=[add], settings=settings(tmp_path))
        first = await agent.run("2 + 3?", session_id="s")
        await agent.run("Double it.", session_id="s")
        stored = await agent.sessions.load("s")
        assert stored.messages[: len(first.messages)] == first.messages
        sent = [m for m in model.requests[2].messages if m.role != "system"]
        assert [m.role for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
        with pytest.raises(UserError, match="give message_history or session_id, not both"):
            agent.run("x", session_id="s", message_history=[])


class TestNativeFinalResult:
    async def test_a_native_model_answers_with_the_final_result_tool(self, tmp_path: Path) -> None:
        """No extra call: the typed answer is the tool's argument, checked as any call is; an
        invalid one goes back to the model with its errors."""

        def final(arguments: str, n: int) -> ScriptedTurn:
            call = NativeToolCall(id=f"c{n}", name="final_result", arguments=arguments)
            return ScriptedTurn(tool_calls=[call])

        model = ScriptedModel(
            [
                final('{"answer": {"name": "Lyon", "population": -1}}', 1),
                final('{"answer": {"name": "Lyon", "population": 522000}}', 2),
            ],
            native_tools=True,
        )
        agent = Agent(model, output_type=City, settings=settings(tmp_path))
        result = await agent.run("How many people live in Lyon?")
        assert result.output == City(name="Lyon", population=522000)
        assert len(model.requests) == 2
        offered = [t.name for t in model.requests[0].tools]
        assert offered == ["final_result"]
        # The output type is shown inline (minimal schemas: no `$ref` a model could copy).
        answer = model.requests[0].tools[0].parameters["properties"]["answer"]
        assert set(answer["properties"]) == {"name", "population"}
        refused = model.requests[1].messages[-1]
        assert refused.role == "tool"
        assert "population" in refused.content
        assert "greater than 0" in refused.content
        check_stream(result.trajectory.events)


def test_a_half_written_number_keeps_its_field() -> None:
    """`21.` is read as 21 while the answer streams: a UI never sees the field vanish."""
    spec = Agent(ScriptedModel([]), output_type=City).output
    seen = [
        spec.partial('{"name": "Lyon", "population": ' + tail) for tail in ("52", "52.", "52.5")
    ]
    assert [s[0] if s else None for s in seen] == [
        {"name": "Lyon", "population": 52},
        {"name": "Lyon", "population": 52},
        {"name": "Lyon", "population": 52.5},
    ]
