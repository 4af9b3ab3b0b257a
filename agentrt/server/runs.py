"""Internal. The runs a server holds: each driven by a task of its own, its events kept for the
streams.

    POST /runs ─► agent.run(…) ─► RunRegistry.start ─► consumer task (drives the run)
                                  the run's task, each event as it is made ─► RunHandle.events
                                                                                  │
    the stream that started the run (its owner) ◄─────────────────────────────────┤
    GET /runs/{id}/events (watchers, Last-Event-ID) ◄─────────────────────────────┘

A run is driven by a task in the registry's task group rather than by the request that
started it, so that the cancel endpoint and other streams can reach it while it runs. The
request that started it still owns it: when that stream ends before the run does (the client
went away), the run is cancelled. The events do not pass through that task: the run's own task
appends each to the handle as it makes it (`AgentRun._deliver`), and the streams waiting on the
handle wake once for all the events made since they last looked.

A cancelled run still delivers its `run_finished: cancelled`, so every stream ends with it.
Should a run end without one (cancelled before it began, at shutdown), the consumer looks for
the events it lacks in the trajectory file, and failing that the server says so in a
`run_finished` of its own: a stream never ends without one.

When the server is one of several workers, every event its runs publish also goes to the relay
(`RunRegistry.relay`; `agentrt.server.relay`), for the streams of the other workers.
"""

from __future__ import annotations

import asyncio
import functools
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup

from agentrt.events import (
    Event,
    ModelResponseEvent,
    RunFinishedEvent,
    RunStatus,
    Timings,
    ToolFinishedEvent,
    TurnStartedEvent,
    Usage,
)
from agentrt.logs import get_logger
from agentrt.result import AgentRun
from agentrt.server.schemas import RunState, RunSummary
from agentrt.server.trajectories import find_trajectory
from agentrt.trajectory.format import Trajectory
from agentrt.trajectory.writer import keep_json

__all__ = ["Refusal", "RunHandle", "RunRegistry", "written_end"]

log = get_logger("agentrt.server")


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a run cannot start now: what the client is told."""

    status: int
    """The HTTP status: 429 (a limit is full) or 409 (the session is busy)."""
    detail: str
    limit: Literal["server", "token"] | None = None
    """Which limit is full, for a 429."""


class RunHandle:
    """One run as the server sees it: its events so far and how it ended."""

    def __init__(self, query: str, session_id: str | None, caller: str | None) -> None:
        self.run_id: str | None = None
        """Known once the run's first event (`run_started`) has arrived."""
        self.query = query
        self.session_id = session_id
        self.caller = caller
        """The key of the token that started it (None when the server has no tokens)."""
        self.events: list[Event] = []
        """Every event in `seq` order (so `events[i].seq == i`); emptied once evicted."""
        self.state: RunState = "running"
        self.answer: str | None = None
        self.evicted = False
        """The events were dropped from memory; the trajectory file has them."""
        self.started = anyio.Event()
        """Set once `run_id` is known, or the run failed before it was."""
        self.finished = anyio.Event()
        self.strikes = 0
        """How often the registry's keep-alive clock has struck (every half `keepalive`) while
        the run was live: a stream that has sent nothing for 3 strikes sends a comment."""
        self._scope = anyio.CancelScope()
        # asyncio's, not anyio's: it can be set and cleared, where an anyio Event is made anew
        # for each wake-up (a few µs per event). The runtime runs on asyncio anyway.
        self._changed = asyncio.Event()

    @property
    def live(self) -> bool:
        return self.state == "running"

    def summary(self) -> RunSummary:
        assert self.run_id is not None
        return RunSummary(
            run_id=self.run_id,
            state=self.state,
            query=self.query,
            session_id=self.session_id,
            answer=self.answer,
        )

    def cancel(self) -> None:
        """Cancel the run (its tools too); `finished` is set once it has ended."""
        self._scope.cancel()

    def abandon(self) -> None:
        """The stream that started the run has ended: if the run has not, cancel it."""
        if self.live:
            log.info("client went away: cancelling its run", run_id=self.run_id)
            self.cancel()

    async def changed(self) -> None:
        """Wait until an event is added, the run ends or the keep-alive clock strikes."""
        await self._changed.wait()

    def _strike(self) -> None:
        self.strikes += 1
        self._wake()

    def _publish(self, events: list[Event]) -> None:
        self.events.extend(events)
        self._wake()

    def _wake(self) -> None:
        # A pulse: every stream waiting now is woken (once, however many events a run makes
        # in a row), and the next wait waits.
        self._changed.set()
        self._changed.clear()


class RunRegistry:
    """The live runs of a server and the most recent finished ones, with the limits on them.

    :param trajectory_dir: where the agent records its runs
    :param max_runs: runs that may be live at once on this server
    :param max_runs_per_token: runs that may be live at once for one token
    :param keep_finished: finished runs kept in memory; older ones are read from their files
    :param keepalive: seconds of silence after which an SSE stream gets a comment (sent
        between 1 and 1.5 times that: one clock per server strikes every half of it, rather
        than a timer per stream and wait)
    """

    def __init__(
        self,
        trajectory_dir: Path,
        *,
        max_runs: int,
        max_runs_per_token: int,
        keep_finished: int,
        keepalive: float,
    ) -> None:
        self.trajectory_dir = trajectory_dir
        self.keepalive = keepalive
        self.max_runs = max_runs
        self.max_runs_per_token = max_runs_per_token
        self.keep_finished = keep_finished
        self._runs: dict[str, RunHandle] = {}
        self._live: set[RunHandle] = set()
        self._per_caller: Counter[str] = Counter()
        self._finished: deque[RunHandle] = deque()
        self._sessions: dict[str, list[RunHandle]] = {}
        self._session_live: dict[str, RunHandle] = {}
        self._tg: TaskGroup | None = None
        self.relay: Callable[[list[Event]], None] | None = None
        """Where the events of this server's runs also go, as they come: the relay to the
        other workers (`agentrt.server.relay`), when there are others."""

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Hold the task group runs are consumed in; on exit every live run is cancelled."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(self._keepalive_clock)
            try:
                yield
            finally:
                self._tg = None
                tg.cancel_scope.cancel()

    async def _keepalive_clock(self) -> None:
        while True:
            await anyio.sleep(self.keepalive / 2)
            for handle in self._live:
                handle._strike()

    def cancel_all(self) -> None:
        """Cancel every run in progress (each ends as `cancel` says)."""
        for handle in self._live:
            handle.cancel()

    def cancel(self, run_id: str) -> None:
        """Cancel the run if it is live on this server (another worker asks for it)."""
        handle = self._runs.get(run_id)
        if handle is not None and handle.live:
            log.info("cancelling a run, as another worker asked", run_id=run_id)
            handle.cancel()

    def get(self, run_id: str) -> RunHandle | None:
        return self._runs.get(run_id)

    def session(self, session_id: str) -> list[RunHandle] | None:
        return self._sessions.get(session_id)

    def admit(self, caller: str | None, session_id: str | None) -> Refusal | None:
        """Why a run may not start now, or None if it may: a limit is full (429), or the
        session has a run in progress (409)."""
        if len(self._live) >= self.max_runs:
            msg = (
                f"the server's runs in progress are at its limit (max_runs={self.max_runs}); "
                "retry when one has finished"
            )
            return Refusal(429, msg, limit="server")
        if caller is not None and self._per_caller[caller] >= self.max_runs_per_token:
            msg = (
                "this token's runs in progress are at its limit (max_runs_per_token="
                f"{self.max_runs_per_token}); retry when one has finished"
            )
            return Refusal(429, msg, limit="token")
        if session_id is not None and session_id in self._session_live:
            busy = self._session_live[session_id]
            msg = (
                f"session {session_id!r} has a run in progress ({busy.run_id}): wait for it "
                "to finish or cancel it, so that the next message sees its answer"
            )
            return Refusal(409, msg)
        return None

    def start(
        self,
        events: AgentRun[Any],
        *,
        query: str,
        session_id: str | None,
        caller: str | None,
        run_id: str | None = None,
    ) -> RunHandle:
        """Consume `events` (a run just made by `Agent.run`) in a task of the registry.

        Call `admit` first, with no await in between: the run counts against the limits from
        here on. A `run_id` the caller chose (`Agent.run(run_id=…)`) is taken at once, so that
        `get` finds it before the first event, and a second run cannot be given it meanwhile.
        """
        if self._tg is None:
            msg = "the run registry is not running: serve the app with its lifespan on"
            raise RuntimeError(msg)
        handle = RunHandle(query, session_id, caller)
        if run_id is not None:
            handle.run_id = run_id
            self._runs[run_id] = handle
        self._live.add(handle)
        if caller is not None:
            self._per_caller[caller] += 1
        if session_id is not None:
            self._session_live[session_id] = handle
            self._sessions.setdefault(session_id, []).append(handle)
        self._tg.start_soon(self._consume, handle, events)
        return handle

    async def _consume(self, handle: RunHandle, events: AgentRun[Any]) -> None:
        # In this task's context, which the run's tasks copy when the iteration starts them:
        # the trajectory's bytes of each event stay on it, for the streams to send.
        keep_json.set(True)
        # Each event is published by the run's task as it is made: handed through a stream to
        # this task instead, each cost a task switch more (a fifth of the server's CPU).
        events._deliver(functools.partial(self._take, handle))
        try:
            with handle._scope:
                async for _ in events:  # yields nothing (delivered), ends with the run
                    pass
        except Exception:
            log.exception("a run's event stream failed", run_id=handle.run_id)
        finally:
            with anyio.CancelScope(shield=True):
                # A no-op once the run has ended; otherwise this is what cancels it, and it
                # returns once the trajectory has its run_finished.
                await events.aclose()
                await self._complete(handle)
            self._retire(handle)

    def _take(self, handle: RunHandle, event: Event) -> None:
        if not handle.started.is_set():
            handle.run_id = event.run_id
            self._runs[event.run_id] = handle
            handle.started.set()
        self._publish(handle, [event])

    async def _complete(self, handle: RunHandle) -> None:
        """Take the events the stream did not deliver from the file, then settle the state."""
        end = handle.events[-1] if handle.events else None
        if handle.run_id is not None and not isinstance(end, RunFinishedEvent):
            path = find_trajectory(self.trajectory_dir, handle.run_id)
            if path is not None:
                try:
                    recorded = await anyio.to_thread.run_sync(Trajectory.read, path)
                except (OSError, ValueError) as exc:
                    log.warning("trajectory not readable", path=str(path), error=str(exc))
                else:
                    self._publish(handle, recorded.events[len(handle.events) :])
                    end = handle.events[-1] if handle.events else None
            if not isinstance(end, RunFinishedEvent) and handle.events:
                end = _lost_end(handle.events, path)
                self._publish(handle, [end])
        if isinstance(end, RunFinishedEvent):
            handle.state, handle.answer = end.status, end.answer
        else:
            handle.state = "unfinished"

    def _publish(self, handle: RunHandle, events: list[Event]) -> None:
        handle._publish(events)
        if self.relay is not None and events:
            self.relay(events)

    def _retire(self, handle: RunHandle) -> None:
        if handle.live:  # it never got as far as a state: say so rather than "running"
            handle.state = "unfinished"
        self._live.discard(handle)
        if handle.caller is not None:
            self._per_caller[handle.caller] -= 1
            if not self._per_caller[handle.caller]:
                del self._per_caller[handle.caller]
        if handle.session_id is not None and self._session_live.get(handle.session_id) is handle:
            del self._session_live[handle.session_id]
        if not handle.events:  # no run came of it (shutdown): forget the id it was given
            if handle.run_id is not None:
                self._runs.pop(handle.run_id, None)
        elif handle.run_id is not None:
            self._finished.append(handle)
            while len(self._finished) > self.keep_finished:
                old = self._finished.popleft()
                assert old.run_id is not None
                self._runs.pop(old.run_id, None)
                # Streams that follow it hold the old list; new readers go to the file.
                old.events, old.evicted = [], True
        handle.started.set()
        handle.finished.set()
        handle._wake()


def _lost_end(events: list[Event], path: Path | None) -> RunFinishedEvent:
    """The `run_finished` of a run cancelled while its trajectory could not be written."""
    where = f"{path} lacks it" if path is not None else "no trajectory file was written"
    error = (
        f"the run was cancelled; its recorded end was lost ({where}), so the server wrote this one"
    )
    return written_end(events[-1].run_id, events, "cancelled", error)


def written_end(
    run_id: str, events: list[Event], status: RunStatus, error: str
) -> RunFinishedEvent:
    """A `run_finished` the server writes for a run whose own end it cannot have: its
    accounts summed from the events the server saw (none, if it saw none)."""
    usage, model_time, tool_time = Usage(), 0.0, 0.0
    for e in events:
        if isinstance(e, ModelResponseEvent):
            usage, model_time = usage + e.usage, model_time + e.duration
        elif isinstance(e, ToolFinishedEvent):
            tool_time += e.duration
    seq, t = (events[-1].seq + 1, events[-1].t) if events else (0, 0.0)
    return RunFinishedEvent(
        run_id=run_id,
        seq=seq,
        t=t,
        status=status,
        error=error,
        steps=sum(isinstance(e, TurnStartedEvent) for e in events),
        usage=usage,
        timings=Timings(total=t, model=round(model_time, 6), tools=round(tool_time, 6)),
    )
