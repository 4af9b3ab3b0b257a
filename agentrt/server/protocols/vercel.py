"""A run as the Vercel AI SDK's UI message stream (protocol v1: what `useChat` and
`readUIMessageStream` read in AI SDK 5 and 6), made from agentrt's events.

A run is one assistant message, its id the run's id:

    run_started                  start (messageMetadata: run_id, session_id, model)
    turn_started                 finish-step (the turn before), start-step
    text_delta, reasoning_delta  text-start / text-delta / text-end, reasoning-* likewise
    tool_call                    tool-input-start, tool-input-available
    tool_call_invalid            tool-input-error
    tool_finished                tool-output-available, or tool-output-error
    output_delta                 data-output, one part updated in place (id "output")
    run_finished                 the answer as text when no text said it, error or abort,
                                 finish (messageMetadata: status, output, usage, …), [DONE]
    model_response               nothing: it repeats the text already streamed
    any other event              data-<its type> (data-plan-created, data-coverage,
                                 data-repair, …), its JSON as the part's data

The stream sends its chunks as SSE `data:` lines with the response header
`x-vercel-ai-ui-message-stream: v1`.
"""

from __future__ import annotations

import json
from typing import Any

from agentrt.events import (
    Event,
    OutputDeltaEvent,
    ReasoningDeltaEvent,
    RunFinishedEvent,
    RunStartedEvent,
    RunStatus,
    TextDeltaEvent,
    ToolCallEvent,
    ToolCallInvalidEvent,
    ToolFinishedEvent,
    TurnStartedEvent,
)

__all__ = ["DONE", "HEADER", "Chunk", "VercelTranslator"]

HEADER = ("x-vercel-ai-ui-message-stream", "v1")
"""The response header that tells the AI SDK's clients which stream this is."""
DONE = "[DONE]"
"""The stream's last `data:` line."""

Chunk = dict[str, Any]
"""One chunk of the stream as JSON: its `type` says which."""

_FINISH_REASON: dict[RunStatus, str] = {
    "ok": "stop",
    "budget_exhausted": "length",
    "needs_input": "other",
    "needs_approval": "other",
    "cancelled": "other",
    "error": "error",
}
_UNSENT = frozenset({"model_response"})


class VercelTranslator:
    """The chunks of one run's events, fed in `seq` order from the first.

    It holds only what the protocol needs across events (the open text or reasoning part, the
    open step, the last text said), so feeding a run's events again gives the same chunks:
    which is how a stream resumes after `Last-Event-ID`.
    """

    def __init__(self) -> None:
        self._open: tuple[str, str] | None = None
        """The open text or reasoning part: ("text" or "reasoning", its id)."""
        self._step_open = False
        self._said = ""
        """The text of the latest text part: an answer it already says is not said again."""

    def frames(self, event: Event) -> list[str]:
        """The `data:` lines `event` becomes, as text (JSON, then `[DONE]` at the end)."""
        lines = [
            json.dumps(c, ensure_ascii=False, separators=(",", ":")) for c in self.chunks(event)
        ]
        if isinstance(event, RunFinishedEvent):
            lines.append(DONE)
        return lines

    def chunks(self, event: Event) -> list[Chunk]:
        """The chunks `event` becomes (none for some)."""
        match event:
            case RunStartedEvent():
                meta = {
                    "run_id": event.run_id,
                    "session_id": event.session_id,
                    "model": event.model,
                }
                return [{"type": "start", "messageId": event.run_id, "messageMetadata": meta}]
            case TurnStartedEvent():
                return [*self._close(), *self._next_step()]
            case TextDeltaEvent():
                return self._delta("text", event.seq, event.text)
            case ReasoningDeltaEvent():
                return self._delta("reasoning", event.seq, event.text)
            case ToolCallEvent():
                return [*self._close(), *_tool_input(event)]
            case ToolCallInvalidEvent():
                invalid = {
                    "type": "tool-input-error",
                    "toolCallId": event.call_id,
                    "toolName": event.name or "unknown",
                    "input": event.raw,
                    "errorText": event.reason,
                }
                return [*self._close(), invalid]
            case ToolFinishedEvent():
                return [_tool_output(event)]
            case OutputDeltaEvent():
                return [{"type": "data-output", "id": "output", "data": event.output}]
            case RunFinishedEvent():
                return self._finish(event)
        if event.type in _UNSENT:
            return []
        data = event.model_dump(mode="json", exclude={"run_id", "type"})
        return [{"type": "data-" + event.type.replace("_", "-"), "data": data}]

    def _delta(self, kind: str, seq: int, text: str) -> list[Chunk]:
        chunks: list[Chunk] = []
        if self._open is None or self._open[0] != kind:
            chunks += self._close()
            self._open = (kind, f"{kind}-{seq}")
            chunks.append({"type": f"{kind}-start", "id": self._open[1]})
            if kind == "text":
                self._said = ""
        if kind == "text":
            self._said += text
        chunks.append({"type": f"{kind}-delta", "id": self._open[1], "delta": text})
        return chunks

    def _close(self) -> list[Chunk]:
        if self._open is None:
            return []
        kind, part = self._open
        self._open = None
        return [{"type": f"{kind}-end", "id": part}]

    def _next_step(self) -> list[Chunk]:
        """Finish the open step, if any, and start one."""
        chunks: list[Chunk] = [{"type": "finish-step"}] if self._step_open else []
        self._step_open = True
        return [*chunks, {"type": "start-step"}]

    def _finish(self, event: RunFinishedEvent) -> list[Chunk]:
        chunks = self._close()
        if event.answer and event.answer.strip() != self._said.strip():
            part = f"text-{event.seq}"
            chunks += [
                {"type": "text-start", "id": part},
                {"type": "text-delta", "id": part, "delta": event.answer},
                {"type": "text-end", "id": part},
            ]
        if self._step_open:
            self._step_open = False
            chunks.append({"type": "finish-step"})
        if event.status == "error":
            chunks.append({"type": "error", "errorText": event.error or "the run failed"})
        elif event.status == "cancelled":
            chunks.append({"type": "abort", "reason": event.error or "the run was cancelled"})
        meta = event.model_dump(
            mode="json", include={"status", "output", "error", "doubt", "steps", "usage"}
        )
        reason = _FINISH_REASON[event.status]
        chunks.append({"type": "finish", "finishReason": reason, "messageMetadata": meta})
        return chunks


def _tool_input(event: ToolCallEvent) -> list[Chunk]:
    call = {"toolCallId": event.call_id, "toolName": event.name}
    return [
        {"type": "tool-input-start", **call},
        {"type": "tool-input-available", **call, "input": event.arguments},
    ]


def _tool_output(event: ToolFinishedEvent) -> Chunk:
    if event.status == "ok":
        return {
            "type": "tool-output-available",
            "toolCallId": event.call_id,
            "output": event.output,
        }
    error = event.error or event.status
    return {"type": "tool-output-error", "toolCallId": event.call_id, "errorText": error}
