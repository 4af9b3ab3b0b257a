"""The `react` planner: stream a turn, run each tool call the moment it closes, repeat.

Tool calls start while the model is still writing (interruption-free, incremental dispatch):
the parser hands over a call as soon as its closing tag or brace arrives, and the executor
starts it in the turn's task group. When the stream ends, the turn waits for its calls, and
their observations, in call order, become the next turn's input.

A run ends on a call to a tool that ends the run (`finish`), on a turn with text and no tool
calls (that text is the answer), or when the step or token budget is spent. A turn whose
stream breaks off mid-answer is asked again (`turn_retries` times); its calls that were still
running are cancelled, and its half-written call is never run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from agentrt.events import (
    GuardEvent,
    ModelErrorEvent,
    NativeToolCall,
    TextDeltaEvent,
    TurnStartedEvent,
    Usage,
)
from agentrt.exceptions import ModelError, StreamInterrupted
from agentrt.execution import Batch, ToolOutcome, canonical_arguments
from agentrt.models.base import (
    Message,
    ModelChunk,
    ModelRequest,
    TextChunk,
    ToolCallChunk,
    ToolDefinition,
    UsageChunk,
)
from agentrt.parsing import (
    CallPiece,
    InvalidPiece,
    NativeToolCallAssembler,
    ParsedPiece,
    TagSpec,
    TextPiece,
    ToolCallParser,
)
from agentrt.planning.base import PlannerInput, PlannerResult

__all__ = ["run_react"]

EMPTY_TURN_NUDGE = (
    "Your last reply was empty. Answer the question in plain text, or call one of the tools."
)


async def run_react(task: PlannerInput) -> PlannerResult:
    tools = list(task.tools.values())
    # One parser and one assembler serve every turn: both start afresh after `close()`.
    parser = ToolCallParser(TagSpec(t.name, t.text_param, t.split) for t in tools)
    assembler = NativeToolCallAssembler()
    definitions = [t.definition for t in tools]
    messages = [
        Message(role="system", content=task.system_prompt),
        *task.history,
        Message(role="user", content=task.query),
    ]
    budget = task.settings.token_budget
    for step in range(1, task.step_budget + 1):
        turn = await _turn_with_retries(task, messages, step, parser, assembler, definitions)
        ended = next((o for o in turn.outcomes if o.ends_run), None)
        if ended is not None and _finished_too_early(task, step, turn, ended):
            ended = None
        messages.append(
            Message(role="assistant", content=turn.raw_text, tool_calls=tuple(turn.native_calls))
        )
        for o in turn.outcomes:
            messages.append(
                Message(
                    role="tool",
                    content=o.observation,
                    tool_call_id=o.call_id,
                    name=o.name,
                    arguments=o.arguments,
                )
            )
        if ended is not None:
            return PlannerResult("ok", str(ended.output), step)
        if not turn.outcomes:
            answer = turn.visible_text.strip()
            if answer:
                return PlannerResult("ok", answer, step)
            messages.append(Message(role="user", content=EMPTY_TURN_NUDGE))
        if budget is not None and task.ctx.usage.total_tokens >= budget:
            return PlannerResult("budget_exhausted", None, step)
    return PlannerResult("budget_exhausted", None, task.step_budget)


def _finished_too_early(task: PlannerInput, step: int, turn: _Turn, ended: ToolOutcome) -> bool:
    """A model that finishes in the same turn as it calls other tools answers before it has
    seen their results (they run while it writes): refuse the finish so that it reads them."""
    others = sorted({str(o.name) for o in turn.outcomes if o is not ended and o.status})
    if not others:
        return False
    task.ctx.emit(
        GuardEvent,
        step=step,
        call_id=ended.call_id,
        kind="early_finish",
        detail=f"{ended.name} came in the same turn as {', '.join(others)}, before their results",
    )
    ended.observation = (
        f"Not finished: you called {ended.name} in the same reply as other tools, before seeing "
        f"their results. Read the results, then call {ended.name} with the answer they support."
    )
    return True


async def _turn_with_retries(
    task: PlannerInput,
    messages: list[Message],
    step: int,
    parser: ToolCallParser,
    assembler: NativeToolCallAssembler,
    definitions: list[ToolDefinition],
) -> _Turn:
    attempt = 0
    while True:
        try:
            return await _turn(task, messages, step, parser, assembler, definitions)
        except ModelError as exc:
            retrying = isinstance(exc, StreamInterrupted) and attempt < task.settings.turn_retries
            task.ctx.emit(
                ModelErrorEvent, step=step, error=f"{type(exc).__name__}: {exc}", retrying=retrying
            )
            if not retrying:
                raise
            attempt += 1


@dataclass(slots=True)
class _Turn:
    raw_text: str = ""
    visible_text: str = ""
    native_calls: list[NativeToolCall] = field(default_factory=list)
    outcomes: list[ToolOutcome] = field(default_factory=list)


async def _turn(
    task: PlannerInput,
    messages: list[Message],
    step: int,
    parser: ToolCallParser,
    assembler: NativeToolCallAssembler,
    definitions: list[ToolDefinition],
) -> _Turn:
    ctx = task.ctx
    ctx.checkpoint()
    ctx.steps = step
    ctx.emit(TurnStartedEvent, step=step)
    raw: list[str] = []
    visible: list[str] = []
    native: list[ToolCallChunk] = []
    usage = Usage()
    native_calls: list[NativeToolCall] = []
    failure: Exception | None = None
    request = ModelRequest(messages=messages, tools=definitions)
    started = time.perf_counter()

    async with asyncio.TaskGroup() as tg:
        batch = Batch(task.executor, tg)
        written: set[str] = set()

        def dispatch(pieces: list[ParsedPiece] | list[CallPiece | InvalidPiece]) -> bool:
            """Start the calls among `pieces`; True when the model is looping and must stop."""
            for piece in pieces:
                if isinstance(piece, TextPiece):
                    visible.append(piece.text)
                    ctx.emit(TextDeltaEvent, step=step, text=piece.text)
                    continue
                call_id = (
                    piece.id
                    if isinstance(piece, CallPiece) and piece.id
                    else f"call_{step}_{len(batch.outcomes) + 1}"
                )
                if isinstance(piece, CallPiece):
                    identity = piece.name + canonical_arguments(piece.arguments)
                    if identity in written:
                        ctx.emit(
                            GuardEvent,
                            step=step,
                            call_id=call_id,
                            kind="repetition",
                            detail=f"{piece.name} was written again with the same arguments in "
                            "this turn; the answer is cut here",
                        )
                        return True
                    written.add(identity)
                batch.add(task.executor.admit(piece, step=step, call_id=call_id))
            return False

        stream = ctx.model.stream(request)
        looping = False
        try:
            async for chunk in stream:
                if isinstance(chunk, TextChunk):
                    raw.append(chunk.text)
                    looping = dispatch(parser.feed(chunk.text))
                elif isinstance(chunk, ToolCallChunk):
                    if not chunk.id:
                        # Some servers send no call ids; the assistant message and the result
                        # must still agree on one, so give it here, where both come from.
                        chunk = chunk.model_copy(update={"id": f"call_{step}_n{chunk.index}"})
                    native.append(chunk)
                    looping = dispatch(
                        assembler.feed(chunk.index, chunk.id, chunk.name, chunk.arguments)
                    )
                elif isinstance(chunk, UsageChunk):
                    usage = chunk.usage
                if looping:
                    # Cut off mid-answer, the model sends no usage: count what it wrote.
                    usage = Usage(completion_tokens=len(raw) + len(native))
                    break
            if looping:
                parser.close()
                assembler.close()
            else:
                dispatch(parser.close())
                dispatch(assembler.close())
        except Exception as exc:
            # Calls already running belong to an answer that will not be finished: stop them,
            # and drop what was half-parsed.
            failure = exc
            batch.cancel()
            parser.close()
            assembler.close()
        else:
            native_calls = _fold(native)
            ctx.record_model_response(
                step=step,
                purpose="turn",
                text="".join(raw),
                tool_calls=native_calls,
                usage=usage,
                duration=time.perf_counter() - started,
            )
        finally:
            await _close(stream)
    if failure is not None:
        raise failure
    return _Turn(
        raw_text="".join(raw),
        visible_text="".join(visible),
        native_calls=native_calls,
        outcomes=[o for o in batch.outcomes if o is not None],
    )


async def _close(stream: AsyncIterator[ModelChunk]) -> None:
    """Close a model's stream that was left early (async generators have `aclose`)."""
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


def _fold(chunks: list[ToolCallChunk]) -> list[NativeToolCall]:
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
