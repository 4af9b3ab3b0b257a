"""Internal. The state of one run that every part of it shares: the event sink, the run's
accounts, and the model calls, metered as they stream.

Every model call of a run goes through `RunContext.stream` (or `complete`), which counts the
answer's tokens as they arrive and cuts it the moment the run's token budget or the per-call
cap is passed: a model that never stops writing cannot outlast either. What it counts: each
streamed delta (text, or a piece of a native tool call) is `max(1, characters // 4)` tokens —
one per delta from servers that stream a token at a time, about four characters a token from
those that batch. Servers (and the embedded model) report usage only at the end, so the
estimate is what binds mid-stream; a finished call's reported usage replaces it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from agentrt.events import (
    Event,
    EventBase,
    ModelErrorEvent,
    ModelResponseEvent,
    NativeToolCall,
    Usage,
)
from agentrt.exceptions import TokenLimitReached
from agentrt.logs import get_logger
from agentrt.models.base import (
    Model,
    ModelChunk,
    ModelRequest,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from agentrt.trajectory.format import TrajectoryHeader
from agentrt.trajectory.writer import TrajectoryWriter

__all__ = ["RunContext", "TokenLimitReached", "TokenLimits", "fold_tool_calls"]

E = TypeVar("E", bound=EventBase)


@dataclass(frozen=True, slots=True)
class TokenLimits:
    """What the run's model calls may spend (`AgentSettings.token_budget`, `max_turn_tokens`)."""

    budget: int | None = None
    """Most tokens of the whole run: its usage so far and the streaming answer's estimate."""
    per_call: int | None = None
    """Most tokens one answer may stream."""


def fold_tool_calls(chunks: list[ToolCallChunk]) -> list[NativeToolCall]:
    """Whole native calls from their pieces, as the server sent them (for history and replay)."""
    calls: dict[int, NativeToolCall] = {}
    for c in chunks:
        prev = calls.get(c.index)
        if prev is None:
            calls[c.index] = NativeToolCall(id=c.id, name=c.name or "", arguments=c.arguments or "")
        else:
            # Some servers repeat id and name in every piece: keep the first, never concatenate.
            calls[c.index] = NativeToolCall(
                id=prev.id or c.id,
                name=prev.name or c.name or "",
                arguments=prev.arguments + (c.arguments or ""),
            )
    return [calls[i] for i in sorted(calls)]


def _estimate(chunk: ModelChunk) -> int:
    """Tokens of one streamed delta (see the module docstring); usage reports count none."""
    if isinstance(chunk, TextChunk):
        return max(1, len(chunk.text) // 4)
    if isinstance(chunk, ToolCallChunk):
        return max(1, (len(chunk.name or "") + len(chunk.arguments or "")) // 4)
    return 0


class RunContext:
    """Stamps and routes the events of one run; keeps its usage and timings.

    `emit` is synchronous on purpose: events get their `seq` in the order they happen, are
    buffered for the trajectory, and are handed to the reader without ever waiting, so a tool
    task can report from inside a cancel scope and an event can never overtake another.
    """

    def __init__(
        self,
        run_id: str,
        model: Model,
        header: TrajectoryHeader,
        writer: TrajectoryWriter | None,
        limits: TokenLimits | None = None,
    ) -> None:
        self.run_id = run_id
        self.log = get_logger("agentrt").bind(run_id=run_id)
        """The run's logger, its id bound."""
        self.model = model
        self.header = header
        """What the trajectory file starts with; completed once the strategy is chosen."""
        self.writer = writer
        self._send: MemoryObjectSendStream[Event] | None = None
        self._seq = 0
        self.started = time.perf_counter()
        self.usage = Usage()
        self.model_time = 0.0
        self.tool_time = 0.0
        self.limits = limits or TokenLimits()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def attach(self, send: MemoryObjectSendStream[Event]) -> None:
        """Send every event from now on into `send` too (the run's reader)."""
        self._send = send

    def emit(self, cls: type[E], /, **fields: Any) -> E:
        event = cls(run_id=self.run_id, seq=self._seq, t=round(self.elapsed(), 6), **fields)
        self._seq += 1
        if self.writer is not None:
            self.writer.add(event)
        if self._send is not None:
            try:
                self._send.send_nowait(event)  # type: ignore[arg-type]
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._send = None  # the reader went away; the trajectory still gets everything
        return event

    def checkpoint(self) -> None:
        """Between turns: write buffered events to the trajectory if it is time to."""
        if self.writer is not None:
            self.writer.flush_if_due(self.header)

    def close(self) -> None:
        """Write the trajectory's remaining events and end the event stream.

        The stream is closed whatever happens to the write: a reader must never wait forever.
        """
        try:
            if self.writer is not None:
                self.writer.flush(self.header)
        finally:
            if self._send is not None:
                self._send.close()
                self._send = None

    def record_model_response(
        self,
        *,
        step: int | None,
        purpose: str,
        text: str,
        tool_calls: list[NativeToolCall],
        usage: Usage,
        duration: float,
    ) -> None:
        self.usage += usage
        self.model_time += duration
        self.emit(
            ModelResponseEvent,
            step=step,
            purpose=purpose,
            text=text,
            tool_calls=tool_calls,
            usage=usage,
            duration=round(duration, 6),
        )

    async def stream(
        self, request: ModelRequest, *, step: int | None
    ) -> AsyncGenerator[ModelChunk, None]:
        """The model's answer to `request`, metered: cut (`TokenLimitReached`) the moment it
        passes the run's token budget or the per-call cap. What was passed on before the cut
        is recorded as the call's `model_response`, followed by a `model_error` saying why."""
        started = time.perf_counter()
        spent, budget, cap = 0, self.limits.budget, self.limits.per_call
        text: list[str] = []
        calls: list[ToolCallChunk] = []
        chunks = self.model.stream(request)
        try:
            async for chunk in chunks:
                spent += _estimate(chunk)
                if cap is not None and spent > cap:
                    why = f"the answer passed the cap of {cap} tokens per model call"
                elif budget is not None and self.usage.total_tokens + spent > budget:
                    why = f"the run passed its token budget of {budget}"
                else:
                    if isinstance(chunk, TextChunk):
                        text.append(chunk.text)
                    elif isinstance(chunk, ToolCallChunk):
                        calls.append(chunk)
                    yield chunk
                    continue
                # The chunk that passed the limit is counted (it was paid for), not passed on.
                self.record_model_response(
                    step=step,
                    purpose=request.purpose,
                    text="".join(text),
                    tool_calls=fold_tool_calls(calls),
                    usage=Usage(completion_tokens=spent),
                    duration=time.perf_counter() - started,
                )
                msg = f"{why} (about {spent} tokens written in this call); the answer is cut here"
                self.emit(
                    ModelErrorEvent, step=step, error=f"TokenLimitReached: {msg}", retrying=False
                )
                raise TokenLimitReached(msg)
        finally:
            # Backends' streams are async generators; the protocol only promises an iterator.
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                await aclose()

    async def complete(self, request: ModelRequest, *, step: int | None = None) -> str:
        """One model call whose whole text is wanted at once (classification, JSON steps)."""
        started = time.perf_counter()
        parts: list[str] = []
        usage = Usage()
        async with aclosing(self.stream(request, step=step)) as chunks:
            async for chunk in chunks:
                if isinstance(chunk, TextChunk):
                    parts.append(chunk.text)
                elif isinstance(chunk, UsageChunk):
                    usage = chunk.usage
        text = "".join(parts)
        self.record_model_response(
            step=step,
            purpose=request.purpose,
            text=text,
            tool_calls=[],
            usage=usage,
            duration=time.perf_counter() - started,
        )
        return text
