"""Internal. Time limits for many short awaits, kept by one timer instead of one each.

`asyncio.timeout` arms a timer on the event loop for every block it guards and cancels it when
the block ends. For a run's tool calls that was 5 µs of a call's ~36 of overhead (16 no-op calls
a turn: 693 µs a turn with a timeout per call, 615 with none). Calls are short next to their
limits, so `Deadlines` keeps the limits of the blocks in progress and one timer at the earliest
of them; it is moved only when a block with an earlier deadline starts, and taken off the loop
by `close` (the run's end). What a limit does when it is reached is `asyncio.timeout`'s: the
block's task is cancelled, and the `CancelledError` that ends the block leaves it as
`TimeoutError`, unless something else cancelled the task too.
"""

from __future__ import annotations

import asyncio
from types import TracebackType


class Deadlines:
    """The limits of the blocks in progress, and the one timer that enforces them.

    Use one instance per set of tasks on one event loop (an executor's calls):

        with deadlines.limit(seconds):
            await work()
    """

    def __init__(self) -> None:
        self._running: dict[Limit, None] = {}
        """The blocks in progress (a dict: ordered, and a removal costs nothing)."""
        self._timer: asyncio.TimerHandle | None = None

    def limit(self, seconds: float) -> Limit:
        """A block that may last `seconds` from the moment it is entered."""
        return Limit(self, seconds)

    def _start(self, limit: Limit) -> None:
        self._running[limit] = None
        if self._timer is None or limit.when < self._timer.when():
            self._arm(limit.when)

    def _end(self, limit: Limit) -> None:
        # The timer stays as it is, even with no block left: calls that follow one another
        # (each done before the next starts) would otherwise set and cancel one each.
        del self._running[limit]

    def close(self) -> None:
        """No block will start again: take the timer off the loop now, not at its deadline
        (a finished run would otherwise be kept until then)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_at(when, self._expire)

    def _expire(self) -> None:
        assert self._timer is not None
        # The loop runs a timer up to its clock's resolution early: what it was set for is due.
        due = max(self._timer.when(), asyncio.get_running_loop().time())
        self._timer = None
        for limit in [limit for limit in self._running if limit.when <= due]:
            del self._running[limit]
            limit.expire()
        if self._running:
            self._arm(min(limit.when for limit in self._running))


class Limit:
    """One block's time limit, entered once, in a task. A plain context manager (it never
    waits), which costs less than an async one; the block inside may await."""

    __slots__ = ("_cancelling", "_deadlines", "_expired", "_seconds", "_task", "when")

    def __init__(self, deadlines: Deadlines, seconds: float) -> None:
        self._deadlines = deadlines
        self._seconds = seconds
        self.when = 0.0
        """The loop time the block must end by, once entered."""
        self._task: asyncio.Task[object] | None = None
        self._cancelling = 0
        self._expired = False

    def __enter__(self) -> Limit:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a time limit must be entered inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        self.when = asyncio.get_running_loop().time() + self._seconds
        self._deadlines._start(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self._expired:
            self._deadlines._end(self)
            return
        assert self._task is not None
        # Undo this limit's cancellation request whatever the block did with it; a request
        # left besides it is someone else's, and the CancelledError goes on as theirs.
        if self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
            raise TimeoutError from exc

    def expire(self) -> None:
        """The deadline has passed: cancel the block's task."""
        assert self._task is not None
        self._expired = True
        self._task.cancel()
