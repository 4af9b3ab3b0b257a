"""Internal. The state of one run that every part of it shares: the event sink and the run's
accounts."""

from __future__ import annotations

import time
from typing import Any, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from agentrt.events import Event, EventBase, ModelResponseEvent, NativeToolCall, Usage
from agentrt.logs import get_logger
from agentrt.models.base import Model, ModelRequest, TextChunk, UsageChunk
from agentrt.trajectory.format import TrajectoryHeader
from agentrt.trajectory.writer import TrajectoryWriter

__all__ = ["RunContext"]

E = TypeVar("E", bound=EventBase)


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

    async def complete(self, request: ModelRequest, *, step: int | None = None) -> str:
        """One model call whose whole text is wanted at once (classification, JSON steps)."""
        started = time.perf_counter()
        parts: list[str] = []
        usage = Usage()
        async for chunk in self.model.stream(request):
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
