"""Internal. A run's events, in order, turned into OpenTelemetry GenAI spans.

    invoke_agent {agent}            the run: run_started … run_finished
      ├── chat {model}              one per model call (`model_response`, or a failed call's
      │                             `model_error`)
      ├── execute_tool {tool}       one per tool call that ran (`tool_started` … `tool_finished`),
      │                             linked to the spans of the calls it `depends_on` (a plan)
      └── …

Spans are derived from events alone, so live runs (`Agent(instrument=…)`) and stored
trajectories (`agentrt export-otel`) give the same spans. Start and end times are the events'
own: `header.created + event.t`. Attribute names follow the OpenTelemetry semantic conventions
for generative AI (`gen_ai.*`); what agentrt adds is under `agentrt.*`. Content — the query,
the model's text, tool arguments and results, the answer — is recorded only when asked for
(`include_content`): it may hold personal data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode, Tracer
from pydantic import JsonValue

from agentrt.events import (
    Event,
    GuardEvent,
    ModelErrorEvent,
    ModelResponseEvent,
    NodeSkippedEvent,
    PlanCreatedEvent,
    PlanInvalidEvent,
    RunFinishedEvent,
    StrategySelectedEvent,
    ToolCallEvent,
    ToolCallInvalidEvent,
    ToolFinishedEvent,
    ToolStartedEvent,
    TurnStartedEvent,
)
from agentrt.trajectory.format import TrajectoryHeader

__all__ = ["SpanTranslator", "agent_name_of"]

# The GenAI semantic conventions' attribute names (their Python constants are deprecated in
# opentelemetry-semantic-conventions, moved to a repository of their own): the names are the
# contract, so they are spelled here.
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
FINISH_REASONS = "gen_ai.response.finish_reasons"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"

_ERROR_CLASS = re.compile(r"^([A-Za-z_][\w.]*):")
"""A tool error written `ValueError: …` names its exception class: the span's `error.type`."""


def agent_name_of(header: TrajectoryHeader) -> str:
    """The agent's name on its spans: its workspace folder's, or `agentrt` for one held in
    memory (a code-first agent)."""
    return Path(header.workspace).name if header.workspace else "agentrt"


def _json(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False)


def _messages(role: str, text: str, finish_reason: str | None = None) -> str:
    """One message in the conventions' JSON form (`gen_ai.input.messages`/`output.messages`)."""
    message: dict[str, JsonValue] = {"role": role, "parts": [{"type": "text", "content": text}]}
    if finish_reason is not None:
        message["finish_reason"] = finish_reason
    return _json([message])


def _response_message(event: ModelResponseEvent, finish_reason: str) -> str:
    """A model call's answer as the conventions' output message: its text (reasoning tags
    included, as the model wrote it), the reasoning a server sent apart, its native calls."""
    parts: list[JsonValue] = []
    if event.reasoning:
        parts.append({"type": "reasoning", "content": event.reasoning})
    if event.text:
        parts.append({"type": "text", "content": event.text})
    parts += [
        {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}
        for c in event.tool_calls
    ]
    return _json([{"role": "assistant", "parts": parts, "finish_reason": finish_reason}])


def _error_type(status: str, error: str | None) -> str:
    if status != "error":
        return status  # timeout, cancelled
    found = _ERROR_CLASS.match(error or "")
    return found.group(1) if found else "tool_error"


class SpanTranslator:
    """The spans of one run, made as its events are fed in order (`feed`), ended by
    `run_finished` (or by `close`, for a trajectory cut off before it).

    :param tracer: where spans are made (its provider's processors export them)
    :param header: the run's trajectory header: its start time, model, session, workspace
    :param include_content: record the query, the model's text, tool arguments and results,
        and the answer
    :param agent_name: the name on `invoke_agent` spans; None: `agent_name_of(header)`
    :param provider: `gen_ai.provider.name` (`openai`, `llama_cpp`, …); None leaves it out (a
        trajectory does not record its model's backend)
    :param parent: the context the run's span is a child of; None: a new trace
    """

    def __init__(
        self,
        tracer: Tracer,
        header: TrajectoryHeader,
        *,
        include_content: bool = False,
        agent_name: str | None = None,
        provider: str | None = None,
        parent: Context | None = None,
    ) -> None:
        self.tracer = tracer
        self.header = header
        self.include_content = include_content
        self.agent_name = agent_name or agent_name_of(header)
        self.parent = parent
        self._origin = int(header.created.timestamp() * 1e9)
        self._common: dict[str, str] = {REQUEST_MODEL: header.model}
        if provider is not None:
            self._common[PROVIDER] = provider
        self._run: Span | None = None
        self._last = 0.0
        """The time of the last event fed: where `close` ends what is open."""
        self._run_context: Context | None = None
        self._chat: tuple[Span, int] | None = None
        """The last `chat` span and its end: left open until the next event, which may say
        the answer was cut (`model_error` after it: finish reason `length`)."""
        self._turn_started: dict[int | None, float] = {}
        self._calls: dict[str, ToolCallEvent] = {}
        self._tools: dict[str, Span] = {}
        self._done: dict[str, SpanContext] = {}
        """Finished calls' spans, for the links of the calls that depend on them."""
        self._handlers: dict[str, Callable[[Any], None]] = {
            "turn_started": self._on_turn_started,
            "strategy_selected": self._on_strategy,
            "model_response": self._on_model_response,
            "model_error": self._on_model_error,
            "tool_call": self._on_tool_call,
            "tool_started": self._on_tool_started,
            "tool_finished": self._on_tool_finished,
            "tool_call_invalid": self._on_marker,
            "node_skipped": self._on_marker,
            "guard": self._on_marker,
            "plan_created": self._on_marker,
            "plan_invalid": self._on_marker,
            "run_finished": self._on_run_finished,
        }

    def _at(self, t: float) -> int:
        """An event's time, `t` seconds into the run, in ns since the epoch."""
        return self._origin + round(t * 1e9)

    def feed(self, event: Event) -> None:
        """Take the run's next event."""
        if self._run is None:
            self._start_run()
        self._last = event.t
        if self._chat is not None and not self._cuts_chat(event):
            self._end_chat()
        handler = self._handlers.get(event.type)
        if handler is not None:
            handler(event)

    def close(self) -> None:
        """End every span still open, at the time of its last event: the run's trajectory
        ended without `run_finished` (a crashed process)."""
        if self._chat is not None:
            self._end_chat()
        if self._run is not None and self._run.is_recording():
            self._end_run(self._at(self._last))

    def _start_run(self) -> None:
        header = self.header
        attributes: dict[str, Any] = {
            OPERATION: "invoke_agent",
            AGENT_NAME: self.agent_name,
            **self._common,
            "agentrt.run_id": header.run_id,
        }
        if header.session_id is not None:
            attributes[CONVERSATION_ID] = header.session_id
        if self.include_content:
            attributes[INPUT_MESSAGES] = _messages("user", header.query)
        self._run = self.tracer.start_span(
            f"invoke_agent {self.agent_name}",
            context=self.parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=self._origin,
        )
        self._run_context = trace.set_span_in_context(self._run, self.parent)

    def _child(
        self, name: str, start: int, attributes: dict[str, Any], *, kind: SpanKind, links: Any = ()
    ) -> Span:
        return self.tracer.start_span(
            name,
            context=self._run_context,
            kind=kind,
            attributes=attributes,
            links=links,
            start_time=start,
        )

    def _on_turn_started(self, event: TurnStartedEvent) -> None:
        self._turn_started[event.step] = event.t

    def _on_strategy(self, event: StrategySelectedEvent) -> None:
        assert self._run is not None
        self._run.set_attributes(
            {"agentrt.strategy": event.strategy, "agentrt.planner": event.planner}
        )

    def _chat_span(self, start: float, step: int | None, purpose: str) -> Span:
        attributes: dict[str, Any] = {OPERATION: "chat", **self._common, "agentrt.purpose": purpose}
        if step is not None:
            attributes["agentrt.step"] = step
        name = f"chat {self.header.model}"
        return self._child(name, self._at(start), attributes, kind=SpanKind.CLIENT)

    def _on_model_response(self, event: ModelResponseEvent) -> None:
        span = self._chat_span(event.t - event.duration, event.step, event.purpose)
        reason = "tool_call" if event.tool_calls else "stop"
        span.set_attributes(
            {
                INPUT_TOKENS: event.usage.prompt_tokens,
                OUTPUT_TOKENS: event.usage.completion_tokens,
                FINISH_REASONS: [reason],
            }
        )
        if self.include_content:
            span.set_attribute(OUTPUT_MESSAGES, _response_message(event, reason))
        self._chat = (span, self._at(event.t))

    def _cuts_chat(self, event: Event) -> bool:
        """`model_error` right after a `model_response`: the call was cut at a token limit."""
        return isinstance(event, ModelErrorEvent) and event.error.startswith("TokenLimitReached")

    def _end_chat(self) -> None:
        assert self._chat is not None
        span, end = self._chat
        span.end(end_time=end)
        self._chat = None

    def _on_model_error(self, event: ModelErrorEvent) -> None:
        if self._chat is not None:
            # The answer recorded just before was cut at a token limit: it ended for length.
            self._chat[0].set_attribute(FINISH_REASONS, ["length"])
            self._end_chat()
            return
        # A call that failed outright (a broken stream, a server error): it began with its turn.
        start = self._turn_started.get(event.step, event.t)
        span = self._chat_span(start, event.step, "turn")
        span.set_attribute(ERROR_TYPE, event.error.split(":", 1)[0])
        span.set_status(Status(StatusCode.ERROR, event.error))
        span.end(end_time=self._at(event.t))

    def _on_tool_call(self, event: ToolCallEvent) -> None:
        self._calls[event.call_id] = event

    def _tool_span(self, call_id: str, name: str, start: float) -> Span:
        attributes: dict[str, Any] = {
            OPERATION: "execute_tool",
            TOOL_NAME: name,
            TOOL_CALL_ID: call_id,
            TOOL_TYPE: "function",
        }
        call = self._calls.get(call_id)
        links = []
        if call is not None:
            attributes["agentrt.step"] = call.step
            if self.include_content:
                attributes[TOOL_ARGUMENTS] = _json(call.arguments)
            links = [
                Link(self._done[dep], {"agentrt.link": "depends_on"})
                for dep in call.depends_on
                if dep in self._done
            ]
        span = self._child(
            f"execute_tool {name}", self._at(start), attributes, kind=SpanKind.INTERNAL, links=links
        )
        self._tools[call_id] = span
        return span

    def _on_tool_started(self, event: ToolStartedEvent) -> None:
        self._tool_span(event.call_id, event.name, event.t)

    def _on_tool_finished(self, event: ToolFinishedEvent) -> None:
        span = self._tools.pop(event.call_id, None)
        if span is None:
            # Never started: answered from the run's cache, or cancelled while it waited.
            span = self._tool_span(event.call_id, event.name, event.t - event.duration)
            del self._tools[event.call_id]
        span.set_attribute("agentrt.tool.status", event.status)
        if event.cached:
            span.set_attribute("agentrt.tool.cached", True)
        if event.status != "ok":
            span.set_attribute(ERROR_TYPE, _error_type(event.status, event.error))
            span.set_status(Status(StatusCode.ERROR, event.error))
        elif self.include_content:
            span.set_attribute(TOOL_RESULT, _json(event.output))
        span.end(end_time=self._at(event.t))
        self._done[event.call_id] = span.get_span_context()

    def _on_marker(
        self,
        event: ToolCallInvalidEvent
        | NodeSkippedEvent
        | GuardEvent
        | PlanCreatedEvent
        | PlanInvalidEvent,
    ) -> None:
        """What happened between the spans, as an event on the run's span."""
        assert self._run is not None
        attributes: dict[str, Any] = {}
        if isinstance(event, ToolCallInvalidEvent | NodeSkippedEvent | GuardEvent):
            attributes[TOOL_CALL_ID] = event.call_id
        if isinstance(event, ToolCallInvalidEvent) and event.name is not None:
            attributes[TOOL_NAME] = event.name
        if isinstance(event, PlanCreatedEvent | PlanInvalidEvent):
            attributes["agentrt.plan.attempt"] = event.attempt
        if isinstance(event, PlanCreatedEvent):
            attributes["agentrt.plan.nodes"] = [n.id for n in event.nodes]
        # Reasons may quote a call's arguments: content.
        if self.include_content and isinstance(
            event, NodeSkippedEvent | GuardEvent | ToolCallInvalidEvent
        ):
            attributes["agentrt.reason"] = (
                event.detail if isinstance(event, GuardEvent) else event.reason
            )
        self._run.add_event(event.type, attributes, timestamp=self._at(event.t))

    def _on_run_finished(self, event: RunFinishedEvent) -> None:
        assert self._run is not None
        self._run.set_attributes(
            {
                "agentrt.run.status": event.status,
                "agentrt.steps": event.steps,
                INPUT_TOKENS: event.usage.prompt_tokens,
                OUTPUT_TOKENS: event.usage.completion_tokens,
            }
        )
        if event.status == "error":
            self._run.set_attribute(ERROR_TYPE, (event.error or "error").split(":", 1)[0])
            self._run.set_status(Status(StatusCode.ERROR, event.error))
        if self.include_content and event.answer is not None:
            answer = _messages("assistant", event.answer, event.status)
            self._run.set_attribute(OUTPUT_MESSAGES, answer)
        self._end_run(self._at(event.t))

    def _end_run(self, end: int) -> None:
        assert self._run is not None
        for span in self._tools.values():  # none in a well-formed run; never leave one open
            span.end(end_time=end)
        self._tools.clear()
        self._run.end(end_time=end)
