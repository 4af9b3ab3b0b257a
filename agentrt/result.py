"""What `Agent.run` returns: one run, to stream (`async for`) or to await (`await`), and the
result it ends with."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Coroutine, Generator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Generic, cast

from typing_extensions import TypeVar

from agentrt.events import AnswerDoubt, Event, RunFinishedEvent, RunStatus, Usage
from agentrt.exceptions import RunFailed, UserError
from agentrt.models.base import Message
from agentrt.run import EventFeed
from agentrt.trajectory.format import Trajectory

__all__ = ["AgentRun", "RunResult"]

OutputT = TypeVar("OutputT", default=str)


@dataclass(frozen=True, slots=True)
class RunResult(Generic[OutputT]):
    """How a run ended, with everything it produced."""

    status: RunStatus
    answer: str | None
    """The answer as text (a typed output as its JSON); for `needs_input`, the question."""
    error: str | None
    """Why a run that did not end `ok` ended as it did."""
    doubt: AnswerDoubt | None
    """Why the answer of a run that ended `ok` is not taken for one (a raw tool call, a tool's
    error repeated, no tool call that succeeded), or None; see `AnswerDoubt`."""
    messages: list[Message]
    """The whole conversation: the history the run was given, then this run's question, its
    tool calls and their results, and its answer. Pass it as the next run's
    `message_history` to go on with the conversation."""
    usage: Usage
    path: Path | None
    """The trajectory file, when trajectories are recorded."""
    _recorded: Callable[[], Trajectory] = field(repr=False, compare=False)
    _output: Any = field(default=None, repr=False)

    @property
    def trajectory(self) -> Trajectory:
        """Every event of the run, `run_finished` last, under its header.

        A run does not hold its events while it goes (at a thousand runs at once they were
        half of each run's memory): they are read back from the trajectory file the first
        time this is asked for, then kept. A run recorded in no file (no `trajectory_dir`,
        or its file could not be written) keeps them serialised in memory instead.

        :raises UserError: the trajectory file has since been removed or changed
        """
        return self._recorded()

    @property
    def output(self) -> OutputT:
        """The final answer, of the agent's `output_type` (`str` unless it was given one).

        :raises RunFailed: the run did not end `ok` (the message says how it ended, and why)
        """
        if self.status != "ok":
            msg = f"the run ended {self.status}: {self.error or self.answer}"
            raise RunFailed(msg)
        return cast(OutputT, self._output)


class AgentRun(Coroutine[Any, Any, RunResult[OutputT]]):
    """One run of an agent: an async iterator of its events, and a coroutine of its result.

    `async for event in run` streams every event, the last `run_finished`; `await run` (also
    after iterating part or all of it) runs it to the end and returns the `RunResult`. Being
    a coroutine, it can also be given to `asyncio.run` or `asyncio.create_task`. Leave early
    with `aclose()` or `async with`: the run is cancelled, its tools too, and its trajectory
    still ends with `run_finished`.
    """

    def __init__(
        self,
        events: AsyncGenerator[Event, None],
        finish: Callable[[RunFinishedEvent], RunResult[OutputT]],
        divert: Callable[[Callable[[Event], None]], None],
        feed: EventFeed,
    ) -> None:
        self._events = events
        self._feed = feed
        self._finish = finish
        self._divert = divert
        self._started = False
        self._result: RunResult[OutputT] | None = None
        self._driver: Coroutine[Any, Any, RunResult[OutputT]] | None = None
        """What `await` runs: made on first use, so a run only iterated is never left
        un-awaited."""

    def __aiter__(self) -> AgentRun[OutputT]:
        return self

    async def __anext__(self) -> Event:
        self._started = True
        # An event already made is taken from the run's feed at once; `events` (which also
        # starts the run, waits for the next and ends the stream) only when there is none.
        event = self._feed.take()
        if event is None:
            event = await self._events.__anext__()
        if isinstance(event, RunFinishedEvent):
            self._result = self._finish(event)
        return event

    def _deliver(self, to: Callable[[Event], None]) -> None:
        """Internal (the server's). Hand each event to `to` in the run's own task, as it is
        made, instead of to this iterator, which then yields nothing and ends when the run
        does (iterate it to run it; `aclose` still cancels it). A reader that keeps every
        event anyway is spared a task switch per event. Call it before iterating."""
        if self._started:
            msg = "events already read cannot be delivered elsewhere: deliver before iterating"
            raise UserError(msg)
        self._divert(to)

    def _drive(self) -> Coroutine[Any, Any, RunResult[OutputT]]:
        if self._driver is None:
            self._driver = self._complete()
        return self._driver

    def __await__(self) -> Generator[Any, None, RunResult[OutputT]]:
        return self._drive().__await__()

    def send(self, value: Any) -> Any:
        return self._drive().send(value)

    def throw(self, *args: Any) -> Any:
        return self._drive().throw(*args)

    def close(self) -> None:
        if self._driver is not None:
            self._driver.close()

    async def _complete(self) -> RunResult[OutputT]:
        async for _ in self:
            pass
        return self.result

    @property
    def result(self) -> RunResult[OutputT]:
        """The run's result, once its `run_finished` event has been read.

        :raises UserError: the run has not finished (or was left before it did)
        """
        if self._result is None:
            msg = "the run has not finished: iterate it to its end, or await it"
            raise UserError(msg)
        return self._result

    async def aclose(self) -> None:
        """Stop the run (if it is still going): see the class docstring."""
        await self._events.aclose()

    async def __aenter__(self) -> AgentRun[OutputT]:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
