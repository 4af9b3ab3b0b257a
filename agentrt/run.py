"""Internal. The state of one run that every part of it shares: the event sink, the run's
accounts, and the model calls, metered as they stream.

Every model call of a run goes through `RunContext.stream` (or `complete`): a `ModelStream`,
which takes the reasoning out of the answer (see there), counts the answer's tokens as they
arrive and cuts it the moment the run's token budget or the per-call cap is passed: a model
that never stops writing cannot outlast either. What it counts: each streamed delta (text,
reasoning, or a piece of a native tool call) is `max(1, characters // 4)` tokens — one per
delta from servers that stream a token at a time, about four characters a token from those
that batch. Servers (and the embedded model) report usage only at the end, so the estimate is
what binds mid-stream; a finished call's reported usage replaces it.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, TypeVar

from agentrt.doubt import CallTally
from agentrt.events import (
    Event,
    EventBase,
    ModelErrorEvent,
    ModelResponseEvent,
    NativeToolCall,
    ReasoningDeltaEvent,
    ToolCallInvalidEvent,
    ToolFinishedEvent,
    ToolStartedEvent,
    Usage,
)
from agentrt.exceptions import TokenLimitReached
from agentrt.logs import get_logger
from agentrt.models.base import (
    Model,
    ModelChunk,
    ModelRequest,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    ToolConfidenceChunk,
    UsageChunk,
)
from agentrt.parsing.reasoning import ReasoningPiece, ReasoningSplitter, SplitPiece
from agentrt.trajectory.format import TrajectoryHeader
from agentrt.trajectory.writer import TrajectoryWriter

__all__ = [
    "ContentChunk",
    "EventFeed",
    "ModelStream",
    "RunContext",
    "TokenLimitReached",
    "TokenLimits",
    "fold_tool_calls",
]

E = TypeVar("E", bound=EventBase)

_WRITTEN_AT_ONCE = (ModelResponseEvent, ToolStartedEvent, ToolFinishedEvent)
"""Events the trajectory gets on disk before the run does anything else (once `durable`): what
a resume must find after a crash, a model answer not asked again and a tool's effect not
repeated. The write is the event loop's next callback, not made in `emit`: the four calls of a
batch that start (or end) together are written once, which halves what this costs a turn
(measured), and no task step scheduled after the event (the turn going on, the next model
call) runs before it."""


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
    if isinstance(chunk, TextChunk | ReasoningChunk):
        return max(1, len(chunk.text) // 4)
    if isinstance(chunk, ToolCallChunk):
        return max(1, (len(chunk.name or "") + len(chunk.arguments or "")) // 4)
    return 0


def to_microsecond(seconds: float) -> float:
    """A duration (≥ 0) as events carry it, to the microsecond: what `round(seconds, 6)`
    gives (the same on a million random durations), at a third of its 0.28 µs, which goes
    through decimal digits; every event has a time, some a duration too."""
    return int(seconds * 1e6 + 0.5) / 1e6


_TALLIED = (ToolFinishedEvent, ToolCallInvalidEvent)
"""Events that say how a tool call ended: `RunContext.calls` counts them."""

_FIELDS_GIVEN: dict[frozenset[str], set[str]] = {}
"""The names of the fields an event was given (pydantic's `__pydantic_fields_set__`), one set
for all events given the same: pydantic makes one per instance, 728 bytes once it holds five
names, more than the event's own values; a run keeps its events (its result's trajectory), and
these sets were 55% of what a run in flight holds in events (measured, issue 22). Sharing is
safe: an event is frozen, so pydantic never adds to the set, and `model_copy` copies it."""
_set = object.__setattr__


class EventFeed:
    """A run's events on their way to its reader, in order: the run adds each without ever
    waiting (`RunContext.emit` is synchronous), the reader waits for the next.

    What the run used anyio's memory object stream for, without what it does besides (a
    checkpoint per receive, statistics, many senders and receivers): an event cost the two
    sides about 3 µs through it, a fifth of a turn's overhead in all (measured, issue 22).
    """

    def __init__(self) -> None:
        self._events: deque[Event] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False
        self._left = False

    def put(self, event: Event) -> None:
        if self._left:
            return  # the reader went away; the trajectory still gets everything
        self._events.append(event)
        self._wake()

    def close(self) -> None:
        """No more events: the reader gets those left, then the end."""
        self._closed = True
        self._wake()

    def leave(self) -> None:
        """The reader is gone: drop what it did not read, and all that comes."""
        self._left = True
        self._events.clear()

    def take(self) -> Event | None:
        """The next event if there is one, without waiting."""
        return self._events.popleft() if self._events else None

    async def get(self) -> Event | None:
        """The next event, None at the end; an event already there is taken at once, without a
        trip through the event loop."""
        while not self._events:
            if self._closed:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._events.popleft()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


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
        writer: TrajectoryWriter | None = None,
        limits: TokenLimits | None = None,
    ) -> None:
        self.run_id = run_id
        self.log = get_logger("agentrt").bind(run_id=run_id)
        """The run's logger, its id bound."""
        self.model = model
        self.header = header
        """What the trajectory file starts with; completed once the strategy is chosen."""
        self.writer = writer or TrajectoryWriter(None)
        """Records every event: to the trajectory file, or in memory when there is none."""
        self._feed: EventFeed | None = None
        self._deliver: Callable[[Event], None] | None = None
        self._seq = 0
        self.started = time.perf_counter()
        self.usage = Usage()
        self.model_time = 0.0
        self.tool_time = 0.0
        self.limits = limits or TokenLimits()
        self.calls = CallTally()
        """How the run's tool calls ended, whoever made them: what `doubt` judges by."""
        self.observe: Callable[[Event], None] | None = None
        """Called with every event as it is stamped, whoever reads the stream (tracing)."""
        self.durable = False
        """Write model answers and tool starts and ends at once: set once the header is
        complete (the strategy chosen), which the file's first write fixes."""
        self._writing = False
        """A write of the events so far is scheduled."""

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def attach(self, feed: EventFeed) -> None:
        """Put every event from now on into `feed` too (the run's reader's)."""
        self._feed = feed

    def divert(self, to: Callable[[Event], None]) -> None:
        """Hand every event to `to`, in the emitting task as it is made, instead of sending it
        to the reader (whose stream then only ends): see `AgentRun._deliver`."""
        self._deliver = to

    def emit(self, cls: type[E], /, **fields: Any) -> E:
        """Stamp the next event of the run, built from `fields`, and route it.

        The event is validated as it is built: one that is not a member of the published union
        raises `ValidationError` here, where the mistake is, before it takes a `seq`; it is
        never written nor streamed. Validation is kept on purpose: building events without it
        (as `model_construct` does, minus its generality) saved at most 0.5 µs of the ~2.2
        an event costs, and checking their fields in Python instead cost more than
        pydantic-core's validation (measured, issue 22).
        """
        fields["run_id"] = self.run_id
        fields["seq"] = self._seq
        fields["t"] = to_microsecond(time.perf_counter() - self.started)
        # The model's validator itself, not `cls(**fields)`: the same validation without
        # BaseModel.__init__'s frame and a second dict of the keywords (0.4 of ~1 µs an event).
        event: E = cls.__pydantic_validator__.validate_python(fields)
        given = event.__pydantic_fields_set__
        _set(event, "__pydantic_fields_set__", _FIELDS_GIVEN.setdefault(frozenset(given), given))
        self._seq += 1
        if cls in _TALLIED:
            self.calls.see(event)  # type: ignore[arg-type]
        self.writer.add(event)
        if self.durable and isinstance(event, _WRITTEN_AT_ONCE) and not self._writing:
            self._writing = True
            asyncio.get_running_loop().call_soon(self._write)
        if self.observe is not None:
            self.observe(event)  # type: ignore[arg-type]
        if self._deliver is not None:
            self._deliver(event)  # type: ignore[arg-type]
        elif self._feed is not None:
            self._feed.put(event)  # type: ignore[arg-type]
        return event

    def _write(self) -> None:
        self._writing = False
        self.writer.flush(self.header)

    def checkpoint(self) -> None:
        """Between turns: write buffered events to the trajectory if it is time to."""
        self.writer.flush_if_due(self.header)

    def close(self) -> None:
        """Write the trajectory's remaining events and end the event stream.

        The stream is closed whatever happens to the write: a reader must never wait forever.
        """
        try:
            self.writer.flush(self.header)
        finally:
            if self._feed is not None:
                self._feed.close()
                self._feed = None

    def record_model_response(
        self,
        call: ModelStream,
        *,
        tool_calls: list[NativeToolCall],
        usage: Usage,
        duration: float,
    ) -> None:
        """Record a finished model call: what its model sent (`call.text`, `call.reasoning`),
        which is what a replay's model sends again."""
        self.usage += usage
        self.model_time += duration
        measured = call.confidence
        self.emit(
            ModelResponseEvent,
            step=call.step,
            purpose=call.request.purpose,
            text=call.text,
            reasoning=call.reasoning,
            tool_calls=tool_calls,
            tool_confidence=None if measured is None else measured.confidence,
            tools_withheld=measured is not None and measured.withheld,
            usage=usage,
            duration=to_microsecond(duration),
        )

    def stream(self, request: ModelRequest, *, step: int | None) -> ModelStream:
        """The model's answer to `request`, its content only and metered (see `ModelStream`)."""
        return ModelStream(self, request, step)

    async def complete(
        self,
        request: ModelRequest,
        *,
        step: int | None = None,
        until: Callable[[str], bool] | None = None,
    ) -> str:
        """One model call whose whole content is wanted at once (classification, JSON steps).

        :param until: given each piece of text as it arrives; True stops the model call there,
            and what it wrote so far is the answer
        """
        started = time.perf_counter()
        parts: list[str] = []
        usage = Usage()
        async with aclosing(self.stream(request, step=step)) as call:
            async for chunk in call:
                if isinstance(chunk, TextChunk):
                    parts.append(chunk.text)
                    if until is not None and until(chunk.text):
                        # Stopped mid-answer, the model sends no usage: count what it wrote.
                        usage = Usage(completion_tokens=len(call.raw))
                        break
                elif isinstance(chunk, UsageChunk):
                    usage = chunk.usage
        self.record_model_response(
            call, tool_calls=[], usage=usage, duration=time.perf_counter() - started
        )
        return "".join(parts)


ContentChunk = TextChunk | ToolCallChunk | ToolConfidenceChunk | UsageChunk
"""What a caller reads of a model's answer: its reasoning has been taken out."""


class ModelStream:
    """One model call of a run: the answer's content, as an async iterator of chunks.

    Metered: cut (`TokenLimitReached`) the moment the answer passes the run's token budget or
    the per-call cap. What was passed on before the cut is recorded as the call's
    `model_response`, followed by a `model_error` saying why.

    The reasoning is taken out here, for every caller alike (a `react` turn, a plan, a typed
    output, a classification): ``<think>`` blocks and gpt-oss's analysis channel (by a
    `ReasoningSplitter`, begun inside a block when the model `starts_in_reasoning`) and what
    the server sends apart (`ReasoningChunk`) are emitted as `reasoning_delta` events with the
    call's step, and the caller reads the rest. So a call drafted while thinking is never run,
    and a plan or a JSON answer after ``</think>`` parses.
    """

    def __init__(self, ctx: RunContext, request: ModelRequest, step: int | None) -> None:
        self.ctx = ctx
        self.request = request
        self.step = step
        self.raw: list[str] = []
        """The text chunks as the model sent them."""
        self._reasoning: list[str] = []
        self.confidence: ToolConfidenceChunk | None = None
        """What the model said of the offered tools before it wrote (the embedded model)."""
        self._opened = ""
        """``<think>`` when the stream began inside the block its prompt opened."""
        self._splitter: ReasoningSplitter | None = None
        self._chunks = self._run()

    @property
    def text(self) -> str:
        """The text the model wrote, as the call's record keeps it (`ModelResponseEvent.text`)."""
        return self._opened + "".join(self.raw)

    @property
    def reasoning(self) -> str:
        """The reasoning the server sent apart from the text."""
        return "".join(self._reasoning)

    def __aiter__(self) -> ModelStream:
        return self

    async def __anext__(self) -> ContentChunk:
        return await self._chunks.__anext__()

    async def aclose(self) -> None:
        await self._chunks.aclose()

    async def _run(self) -> AsyncGenerator[ContentChunk, None]:
        started = time.perf_counter()
        ctx = self.ctx
        spent, budget, cap = 0, ctx.limits.budget, ctx.limits.per_call
        calls: list[ToolCallChunk] = []
        chunks = ctx.model.stream(self.request)
        try:
            async for chunk in chunks:
                spent += _estimate(chunk)
                if cap is not None and spent > cap:
                    why = f"the answer passed the cap of {cap} tokens per model call"
                elif budget is not None and ctx.usage.total_tokens + spent > budget:
                    why = f"the run passed its token budget of {budget}"
                else:
                    if isinstance(chunk, ToolCallChunk):
                        calls.append(chunk)
                    for out in self._take(chunk):
                        yield out
                    continue
                # The chunk that passed the limit is counted (it was paid for), not passed on.
                ctx.record_model_response(
                    self,
                    tool_calls=fold_tool_calls(calls),
                    usage=Usage(completion_tokens=spent),
                    duration=time.perf_counter() - started,
                )
                msg = f"{why} (about {spent} tokens written in this call); the answer is cut here"
                ctx.emit(
                    ModelErrorEvent,
                    step=self.step,
                    error=f"TokenLimitReached: {msg}",
                    retrying=False,
                )
                raise TokenLimitReached(msg)
            if self._splitter is not None:
                for out in self._content(self._splitter.close()):
                    yield out
        finally:
            # Backends' streams are async generators; the protocol only promises an iterator.
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                await aclose()

    def _take(self, chunk: ModelChunk) -> list[ContentChunk]:
        """What of one chunk the caller reads; its reasoning goes out as events."""
        if isinstance(chunk, ReasoningChunk):
            self._reasoning.append(chunk.text)
            self.ctx.emit(ReasoningDeltaEvent, step=self.step, text=chunk.text)
            return []
        if isinstance(chunk, ToolConfidenceChunk):
            self.confidence = chunk  # for the call's record, and the caller's
        if not isinstance(chunk, TextChunk):
            return [chunk]
        if self._splitter is None:
            # Decided at the first text: a backend may learn it while loading. A server that
            # sent reasoning apart first has split the text itself.
            inside = not self._reasoning and getattr(self.ctx.model, "starts_in_reasoning", False)
            self._opened = "<think>" if inside else ""
            self._splitter = ReasoningSplitter(starts_in_reasoning=inside)
        self.raw.append(chunk.text)
        return self._content(self._splitter.feed(chunk.text), chunk)

    def _content(
        self, pieces: list[SplitPiece], chunk: TextChunk | None = None
    ) -> list[ContentChunk]:
        """The content among `pieces`, split from `chunk`; their reasoning goes out as events."""
        out: list[ContentChunk] = []
        for piece in pieces:
            if isinstance(piece, ReasoningPiece):
                self.ctx.emit(ReasoningDeltaEvent, step=self.step, text=piece.text)
            elif chunk is not None and piece.text == chunk.text:
                out.append(chunk)  # the chunk is all content (most are): no copy to validate
            else:
                out.append(TextChunk(text=piece.text))
        return out
