"""Live runs traced (`Agent(instrument=…)`): GenAI spans, read back from the SDK's in-memory
exporter, on `react` and `dag` runs played by a scripted model."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agentrt import (
    Agent,
    AgentSettings,
    Event,
    ModelResponseEvent,
    NativeToolCall,
    RunFinishedEvent,
    ScriptedModel,
    ScriptedTurn,
    StreamInterrupted,
    ToolFinishedEvent,
    Trajectory,
    UserError,
    Workspace,
)
from agentrt.models.scripted import ScriptItem
from agentrt.otel import InstrumentationSettings, SpanTranslator, export_trajectories
from tests.helpers import agentrt_logs, call, check_stream, finish
from tests.planning.plans import finish as joined
from tests.planning.plans import node, plan

CONTENT = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "agentrt.reason",
}


def traced_agent(
    workspace: Workspace,
    tmp_path: Path,
    provider: TracerProvider,
    turns: Sequence[ScriptItem],
    **instrument: Any,
) -> Agent:
    return Agent(
        workspace=workspace,
        model=ScriptedModel(turns),
        settings=AgentSettings(trajectory_dir=tmp_path / "trajectories"),
        instrument=InstrumentationSettings(tracer_provider=provider, **instrument),
    )


async def run(agent: Agent, strategy: str) -> list[Event]:
    events = [e async for e in agent.run("Go", strategy=strategy, session_id="s-1")]
    check_stream(events)
    return events


def named(spans: Sequence[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def the_run(spans: Sequence[ReadableSpan]) -> ReadableSpan:
    (run,) = named(spans, "invoke_agent ")
    return run


def at(events: list[Event], t: float) -> int:
    """An event time as the spans have it: ns since the epoch."""
    first = events[0]
    assert first.type == "run_started"
    return int(first.started_at.timestamp() * 1e9) + round(t * 1e9)


REACT: list[ScriptItem] = [
    call("add", a=1, b=2) + call("fail", message="boom"),
    finish("3"),
]


class TestReact:
    async def test_one_run_span_with_a_chat_span_per_call_and_a_tool_span_per_call(
        self,
        workspace: Workspace,
        tmp_path: Path,
        provider: TracerProvider,
        exporter: InMemorySpanExporter,
    ) -> None:
        """Names, parentage, GenAI attributes and times, all from the run's events."""
        agent = traced_agent(workspace, tmp_path, provider, REACT)
        events = await run(agent, "exploratory")
        spans = exporter.get_finished_spans()
        run_span = the_run(spans)
        assert run_span.name == "invoke_agent workspace"
        assert run_span.parent is None
        assert {s.parent.span_id for s in spans if s is not run_span} == {  # type: ignore[union-attr]
            run_span.context.span_id  # type: ignore[union-attr]
        }
        assert {s.context.trace_id for s in spans} == {run_span.context.trace_id}  # type: ignore[union-attr]
        end = events[-1]
        assert isinstance(end, RunFinishedEvent)
        assert dict(run_span.attributes or {}) == {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "workspace",
            "gen_ai.request.model": "scripted",
            "gen_ai.provider.name": "agentrt",
            "gen_ai.conversation.id": "s-1",
            "agentrt.run_id": end.run_id,
            "agentrt.strategy": "exploratory",
            "agentrt.planner": "react",
            "agentrt.run.status": "ok",
            "agentrt.steps": 2,
            "gen_ai.usage.input_tokens": end.usage.prompt_tokens,
            "gen_ai.usage.output_tokens": end.usage.completion_tokens,
        }
        assert (run_span.start_time, run_span.end_time) == (at(events, 0.0), at(events, end.t))

        responses = [e for e in events if isinstance(e, ModelResponseEvent)]
        chats = named(spans, "chat ")
        assert [c.name for c in chats] == ["chat scripted"] * 2
        for chat, response in zip(chats, responses, strict=True):
            assert dict(chat.attributes or {}) == {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "scripted",
                "gen_ai.provider.name": "agentrt",
                "agentrt.purpose": "turn",
                "agentrt.step": response.step,
                "gen_ai.usage.input_tokens": response.usage.prompt_tokens,
                "gen_ai.usage.output_tokens": response.usage.completion_tokens,
                "gen_ai.response.finish_reasons": ("stop",),
            }
            assert chat.end_time == at(events, response.t)
            assert chat.start_time == at(events, response.t - response.duration)

    async def test_a_failed_tool_call_is_an_error_span(
        self,
        workspace: Workspace,
        tmp_path: Path,
        provider: TracerProvider,
        exporter: InMemorySpanExporter,
    ) -> None:
        agent = traced_agent(workspace, tmp_path, provider, REACT)
        events = await run(agent, "exploratory")
        finished = {e.name: e for e in events if isinstance(e, ToolFinishedEvent)}
        tools = {s.name: s for s in named(exporter.get_finished_spans(), "execute_tool ")}
        assert set(tools) == {"execute_tool add", "execute_tool fail", "execute_tool finish"}
        add, fail = tools["execute_tool add"], tools["execute_tool fail"]
        assert dict(add.attributes or {}) == {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "add",
            "gen_ai.tool.call.id": finished["add"].call_id,
            "gen_ai.tool.type": "function",
            "agentrt.step": 1,
            "agentrt.tool.status": "ok",
        }
        assert add.status.status_code is StatusCode.UNSET
        assert add.end_time == at(events, finished["add"].t)
        assert fail.status.status_code is StatusCode.ERROR
        assert fail.status.description == finished["fail"].error
        assert (fail.attributes or {})["agentrt.tool.status"] == "error"
        # A ToolError's message is the model's to read: no class name in it.
        assert (fail.attributes or {})["error.type"] == "tool_error"

    async def test_content_only_when_asked_for(
        self,
        workspace: Workspace,
        tmp_path: Path,
        provider: TracerProvider,
        exporter: InMemorySpanExporter,
    ) -> None:
        """Off by default; with include_content, the query, the model's text, a call's
        arguments and result, and the answer."""
        await run(traced_agent(workspace, tmp_path, provider, REACT), "exploratory")
        keys = {k for s in exporter.get_finished_spans() for k in (s.attributes or {})}
        assert keys & CONTENT == set()
        exporter.clear()

        agent = traced_agent(workspace, tmp_path, provider, REACT, include_content=True)
        await run(agent, "exploratory")
        spans = exporter.get_finished_spans()
        attributes = dict(the_run(spans).attributes or {})
        assert json.loads(str(attributes["gen_ai.input.messages"])) == [
            {"role": "user", "parts": [{"type": "text", "content": "Go"}]}
        ]
        assert json.loads(str(attributes["gen_ai.output.messages"])) == [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": "3"}],
                "finish_reason": "ok",
            }
        ]
        add = dict(named(spans, "execute_tool add")[0].attributes or {})
        assert json.loads(str(add["gen_ai.tool.call.arguments"])) == {"a": 1, "b": 2}
        assert json.loads(str(add["gen_ai.tool.call.result"])) == 3
        chat = dict(named(spans, "chat ")[0].attributes or {})
        (message,) = json.loads(str(chat["gen_ai.output.messages"]))
        assert message["parts"][0]["content"] == str(REACT[0])

    async def test_the_run_span_is_a_child_of_the_callers_span(
        self,
        workspace: Workspace,
        tmp_path: Path,
        provider: TracerProvider,
        exporter: InMemorySpanExporter,
    ) -> None:
        agent = traced_agent(workspace, tmp_path, provider, REACT)
        with provider.get_tracer("app").start_as_current_span("request") as request:
            await run(agent, "exploratory")
        run_span = the_run(exporter.get_finished_spans())
        assert run_span.parent is not None
        assert run_span.parent.span_id == request.get_span_context().span_id

    async def test_a_failed_model_call_is_an_error_chat_span(
        self,
        workspace: Workspace,
        tmp_path: Path,
        provider: TracerProvider,
        exporter: InMemorySpanExporter,
    ) -> None:
        """A stream broken mid-answer, asked again: two chat spans, the first an error."""
        broken = ScriptedTurn(text="partial", error=StreamInterrupted("connection closed"))
        agent = traced_agent(workspace, tmp_path, provider, [broken, finish("ok")])
        await run(agent, "exploratory")
        first, second = named(exporter.get_finished_spans(), "chat ")
        assert first.status.status_code is StatusCode.ERROR
        assert first.status.description == "StreamInterrupted: connection closed"
        assert (first.attributes or {})["error.type"] == "StreamInterrupted"
        assert second.status.status_code is StatusCode.UNSET

    async def test_an_answer_cut_at_the_token_cap_ends_for_length(
        self,
        workspace: Workspace,
        tmp_path: Path,
        provider: TracerProvider,
        exporter: InMemorySpanExporter,
    ) -> None:
        agent = Agent(
            workspace=workspace,
            model=ScriptedModel(["word " * 50]),
            settings=AgentSettings(trajectory_dir=None, max_turn_tokens=10),
            instrument=InstrumentationSettings(tracer_provider=provider),
        )
        events = await run(agent, "exploratory")
        assert isinstance(events[-1], RunFinishedEvent)
        assert events[-1].status == "budget_exhausted"
        (chat,) = named(exporter.get_finished_spans(), "chat ")
        assert (chat.attributes or {})["gen_ai.response.finish_reasons"] == ("length",)


class TestDag:
    async def test_depends_on_edges_are_span_links(
        self,
        workspace: Workspace,
        tmp_path: Path,
        provider: TracerProvider,
        exporter: InMemorySpanExporter,
    ) -> None:
        """T3 waits for T1 and T2: its span links to both; theirs link to nothing."""
        script: list[ScriptItem] = [
            plan(
                node("T1", "add", a=1, b=2),
                node("T2", "add", a=3, b=4),
                node("T3", "echo", ["T1", "T2"], text="{T1} and {T2}"),
            ),
            joined("3 and 7"),
        ]
        agent = traced_agent(workspace, tmp_path, provider, script)
        await run(agent, "planned")
        spans = exporter.get_finished_spans()
        tools = {(s.attributes or {})["gen_ai.tool.call.id"]: s for s in named(spans, "execute_")}
        assert set(tools) == {"T1", "T2", "T3"}
        assert [link.context.span_id for link in tools["T3"].links] == [
            tools["T1"].context.span_id,  # type: ignore[union-attr]
            tools["T2"].context.span_id,  # type: ignore[union-attr]
        ]
        assert {dict(link.attributes or {})["agentrt.link"] for link in tools["T3"].links} == {
            "depends_on"
        }
        assert tools["T1"].links == tools["T2"].links == ()
        run_span = the_run(spans)
        assert (run_span.attributes or {})["agentrt.planner"] == "dag"
        created = [e for e in run_span.events if e.name == "plan_created"]
        assert [dict(e.attributes or {})["agentrt.plan.nodes"] for e in created] == [
            ("T1", "T2", "T3")
        ]
        assert {s.name for s in named(spans, "chat ")} == {"chat scripted"}

    @pytest.mark.parametrize("include_content", [False, True])
    async def test_a_stored_trajectory_gives_the_same_spans(
        self,
        workspace: Workspace,
        tmp_path: Path,
        provider: TracerProvider,
        exporter: InMemorySpanExporter,
        include_content: bool,
    ) -> None:
        """Spans are derived from events: exporting the run's trajectory later gives the live
        spans again (the model's backend aside, which a trajectory does not record)."""
        script: list[ScriptItem] = [
            plan(node("T1", "add", a=1, b=2), node("T2", "fail", ["T1"], message="got {T1}")),
            joined("no"),
        ]
        agent = traced_agent(workspace, tmp_path, provider, script, include_content=include_content)
        result = await agent.run("Go", strategy="planned")
        live = exporter.get_finished_spans()
        stored = InMemorySpanExporter()
        assert result.path is not None
        Trajectory.read(result.path)  # what the export reads
        report = export_trajectories([result.path], stored, include_content=include_content)
        assert (report.runs, report.spans) == (1, len(live))
        assert shape(stored.get_finished_spans()) == shape(live)


def shape(spans: Sequence[ReadableSpan]) -> list[tuple[Any, ...]]:
    """What two traces of one run share: not their ids, nor the backend a file cannot know."""
    names = {s.context.span_id: s.name for s in spans}  # type: ignore[union-attr]
    return [
        (
            s.name,
            names.get(s.parent.span_id) if s.parent else None,
            s.start_time,
            s.end_time,
            s.status.status_code,
            {k: v for k, v in (s.attributes or {}).items() if k != "gen_ai.provider.name"},
            [names[link.context.span_id] for link in s.links],
            [(e.name, e.timestamp, dict(e.attributes or {})) for e in s.events],
        )
        for s in spans
    ]


class TestRobustness:
    def test_instrument_of_the_wrong_type_is_refused(self, workspace: Workspace) -> None:
        with pytest.raises(UserError, match="instrument= takes True, False or Instrument"):
            Agent(ScriptedModel([]), workspace=workspace, instrument="yes")  # type: ignore[arg-type]

    async def test_a_failing_tracer_never_breaks_the_run(
        self, workspace: Workspace, tmp_path: Path, provider: TracerProvider
    ) -> None:
        """A span processor that raises: the run ends ok, the failure is logged once."""

        class Broken(SpanProcessor):
            def on_end(self, span: ReadableSpan) -> None:
                raise RuntimeError("exporter on fire")

        provider.add_span_processor(Broken())
        agent = traced_agent(workspace, tmp_path, provider, REACT)
        with agentrt_logs() as logs:
            events = await run(agent, "exploratory")
        end = events[-1]
        assert isinstance(end, RunFinishedEvent)
        assert end.status == "ok"
        failures = [r for r in logs if r["event"] == "tracing failed; this run's spans stop here"]
        assert len(failures) == 1
        assert failures[0]["run_id"] == end.run_id

    async def test_a_trajectory_cut_off_before_run_finished_still_ends_its_spans(
        self, workspace: Workspace, tmp_path: Path, provider: TracerProvider
    ) -> None:
        """A crashed process leaves no `run_finished`: `close` ends the run's span at its last
        event."""
        agent = traced_agent(workspace, tmp_path, provider, REACT)
        result = await agent.run("Go", strategy="exploratory")
        assert result.path is not None
        trajectory = Trajectory.read(result.path)
        cut = trajectory.events[:-3]
        exporter = InMemorySpanExporter()
        stored = TracerProvider()
        stored.add_span_processor(SimpleSpanProcessor(exporter))
        translator = SpanTranslator(stored.get_tracer("test"), trajectory.header)
        for event in cut:
            translator.feed(event)
        translator.close()
        spans = exporter.get_finished_spans()
        run_span = the_run(spans)
        assert run_span.end_time == at(cut, cut[-1].t)
        assert "agentrt.run.status" not in (run_span.attributes or {})
        assert all(s.end_time is not None for s in spans)


async def test_native_calls_end_a_chat_span_for_tool_call(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A server's native tool call: finish reason `tool_call`; with content, the call is a
    `tool_call` part of the output message, reasoning sent apart a `reasoning` part."""

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    native = NativeToolCall(id="call_1", name="add", arguments='{"a": 1, "b": 2}')
    turn = ScriptedTurn(reasoning="1 + 2, by the tool", tool_calls=[native])
    agent = Agent(
        ScriptedModel([turn, "3"], native_tools=True),
        tools=[add],
        settings=AgentSettings(trajectory_dir=None),
        instrument=InstrumentationSettings(tracer_provider=provider, include_content=True),
    )
    assert (await agent.run("1 + 2?")).output == "3"
    spans = exporter.get_finished_spans()
    first, second = named(spans, "chat ")
    assert (first.attributes or {})["gen_ai.response.finish_reasons"] == ("tool_call",)
    assert (second.attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)
    assert json.loads(str((first.attributes or {})["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "1 + 2, by the tool"},
                {"type": "tool_call", "id": "call_1", "name": "add", "arguments": native.arguments},
            ],
            "finish_reason": "tool_call",
        }
    ]
    (tool,) = named(spans, "execute_tool ")
    assert (tool.attributes or {})["gen_ai.tool.call.id"] == "call_1"
    assert the_run(spans).name == "invoke_agent agentrt"
