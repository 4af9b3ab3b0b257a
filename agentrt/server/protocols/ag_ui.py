"""A run as AG-UI events (protocol 1.0, what `@ag-ui/client`'s `HttpAgent` reads), made from
agentrt's events with the `ag-ui-protocol` package's own types.

    run_started                  RUN_STARTED (thread: the session, else the run)
    turn_started                 STEP_FINISHED (the turn before), STEP_STARTED "turn <n>"
    text_delta                   TEXT_MESSAGE_START / _CONTENT / _END
    reasoning_delta              REASONING_START, REASONING_MESSAGE_START / _CONTENT / _END,
                                 REASONING_END
    tool_call                    TOOL_CALL_START (its parent the turn's text), _ARGS, _END
    tool_call_invalid            the same, its raw text as the arguments, then TOOL_CALL_RESULT
                                 with the reason the model is told
    tool_finished                TOOL_CALL_RESULT: the output as JSON, or the error
    output_delta                 STATE_SNAPSHOT {"output": the typed output so far, "valid"}
    run_finished                 the answer as a text message when no text said it; then
                                 RUN_FINISHED (result: status, answer, output, usage, …;
                                 outcome success or cancelled), or RUN_ERROR for `error`
    model_response               nothing: it repeats the text already streamed
    any other event              CUSTOM named `agentrt.<its type>`, its JSON as the value

Ids are the run's (`<run_id>/<call_id>`, `<run_id>/text/<seq>`, …): an AG-UI thread keeps
the messages of all its runs, and each run numbers its calls from 1.
"""

from __future__ import annotations

import json

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from agentrt import events as ev

__all__ = ["AgUiTranslator"]

_UNSENT = frozenset({"model_response"})


class AgUiTranslator:
    """The AG-UI events of one run's events, fed in `seq` order from the first.

    It holds only what the protocol needs across events (the thread, the open message and
    step, the turn's text message), so feeding a run's events again gives the same AG-UI
    events: which is how a stream resumes after `Last-Event-ID`.
    """

    def __init__(self) -> None:
        self._thread = ""
        self._open: tuple[str, str] | None = None
        """The open text or reasoning message: ("text" or "reasoning", its id)."""
        self._step: str | None = None
        """The name of the open step."""
        self._parent: str | None = None
        """The turn's latest text message: the one its tool calls belong to."""
        self._said = ""
        """The text of the latest text message: an answer it already says is not said again."""

    def frames(self, event: ev.Event) -> list[str]:
        """The `data:` lines `event` becomes, as JSON text (what `ag_ui.encoder` writes)."""
        return [e.model_dump_json(by_alias=True) for e in self.events(event)]

    def events(self, event: ev.Event) -> list[BaseEvent]:
        """The AG-UI events `event` becomes (none for some)."""
        run = event.run_id
        match event:
            case ev.RunStartedEvent():
                self._thread = event.session_id or run
                return [RunStartedEvent(thread_id=self._thread, run_id=run)]
            case ev.TurnStartedEvent():
                self._parent = None
                closing = [*self._close(), *self._end_step()]
                self._step = f"turn {event.step}"
                return [*closing, StepStartedEvent(step_name=self._step)]
            case ev.TextDeltaEvent() | ev.ReasoningDeltaEvent():
                return self._delta(event)
            case ev.ToolCallEvent():
                return [*self._close(), *self._call(event, json.dumps(event.arguments))]
            case ev.ToolCallInvalidEvent():
                call = self._call(event, event.raw)
                return [*self._close(), *call, _result(event.run_id, event.call_id, event.reason)]
            case ev.ToolFinishedEvent():
                if event.status == "ok":
                    content = json.dumps(event.output, ensure_ascii=False)
                else:
                    content = f"{event.status}: {event.error or 'no result'}"
                return [_result(run, event.call_id, content)]
            case ev.OutputDeltaEvent():
                # The typed output as it is written is the state a UI renders as it grows.
                return [StateSnapshotEvent(snapshot={"output": event.output, "valid": event.valid})]
            case ev.RunFinishedEvent():
                return self._finish(event)
        if event.type in _UNSENT:
            return []
        value = event.model_dump(mode="json", exclude={"run_id", "type"})
        return [CustomEvent(name=f"agentrt.{event.type}", value=value)]

    def _delta(self, event: ev.TextDeltaEvent | ev.ReasoningDeltaEvent) -> list[BaseEvent]:
        kind = "text" if isinstance(event, ev.TextDeltaEvent) else "reasoning"
        out: list[BaseEvent] = []
        if self._open is None or self._open[0] != kind:
            out += self._close()
            message = f"{event.run_id}/{kind}/{event.seq}"
            self._open = (kind, message)
            if kind == "text":
                self._parent, self._said = message, ""
                out.append(TextMessageStartEvent(message_id=message, role="assistant"))
            else:
                out += [
                    ReasoningStartEvent(message_id=message),
                    ReasoningMessageStartEvent(message_id=message, role="reasoning"),
                ]
        message = self._open[1]
        if kind == "text":
            self._said += event.text
            out.append(TextMessageContentEvent(message_id=message, delta=event.text))
        else:
            out.append(ReasoningMessageContentEvent(message_id=message, delta=event.text))
        return out

    def _close(self) -> list[BaseEvent]:
        if self._open is None:
            return []
        kind, message = self._open
        self._open = None
        if kind == "text":
            return [TextMessageEndEvent(message_id=message)]
        return [ReasoningMessageEndEvent(message_id=message), ReasoningEndEvent(message_id=message)]

    def _end_step(self) -> list[BaseEvent]:
        if self._step is None:
            return []
        step, self._step = self._step, None
        return [StepFinishedEvent(step_name=step)]

    def _call(
        self, event: ev.ToolCallEvent | ev.ToolCallInvalidEvent, args: str
    ) -> list[BaseEvent]:
        call = f"{event.run_id}/{event.call_id}"
        return [
            ToolCallStartEvent(
                tool_call_id=call,
                tool_call_name=event.name or "unknown",
                parent_message_id=self._parent,
            ),
            ToolCallArgsEvent(tool_call_id=call, delta=args),
            ToolCallEndEvent(tool_call_id=call),
        ]

    def _finish(self, event: ev.RunFinishedEvent) -> list[BaseEvent]:
        out = self._close()
        if event.answer and event.answer.strip() != self._said.strip():
            message = f"{event.run_id}/text/{event.seq}"
            out += [
                TextMessageStartEvent(message_id=message, role="assistant"),
                TextMessageContentEvent(message_id=message, delta=event.answer),
                TextMessageEndEvent(message_id=message),
            ]
        out += self._end_step()
        if event.status == "error":
            out.append(RunErrorEvent(message=event.error or "the run failed", code="error"))
            return out
        result = event.model_dump(
            mode="json", include={"status", "answer", "output", "error", "doubt", "steps", "usage"}
        )
        outcome = (
            RunFinishedCancelledOutcome()
            if event.status == "cancelled"
            else RunFinishedSuccessOutcome()
        )
        out.append(
            RunFinishedEvent(
                thread_id=self._thread, run_id=event.run_id, result=result, outcome=outcome
            )
        )
        return out


def _result(run: str, call_id: str, content: str) -> ToolCallResultEvent:
    return ToolCallResultEvent(
        message_id=f"{run}/result/{call_id}",
        tool_call_id=f"{run}/{call_id}",
        content=content,
        role="tool",
    )
