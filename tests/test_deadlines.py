"""`Deadlines`: the time limits of a run's tool calls, one timer for all, with the semantics of
`asyncio.timeout`. The waits below never end on their own: a limit ends them, or the test fails
after `GUARD` seconds."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import weakref
from collections.abc import Coroutine
from typing import Any

import pytest

from agentrt.deadlines import Deadlines

SHORT = 0.02
LONG = 60.0
GUARD = 10.0


async def forever() -> None:
    await asyncio.Event().wait()


async def limited(deadlines: Deadlines, seconds: float) -> None:
    with deadlines.limit(seconds):
        await forever()


async def ending(block: Coroutine[Any, Any, None]) -> type[BaseException] | None:
    """How `block` ends, run as a task: the type of what it raised, or None."""
    task = asyncio.create_task(block)
    done, _ = await asyncio.wait({task}, timeout=GUARD)
    if not done:
        task.cancel()
        pytest.fail(f"not ended by its limit within {GUARD} s")
    if task.cancelled():
        return asyncio.CancelledError
    error = task.exception()
    return None if error is None else type(error)


async def test_a_block_past_its_limit_ends_in_timeout_error_and_its_task_goes_on() -> None:
    deadlines = Deadlines()

    async def then_goes_on() -> None:
        with pytest.raises(TimeoutError):
            await limited(deadlines, SHORT)
        task = asyncio.current_task()
        assert task is not None
        assert task.cancelling() == 0
        await asyncio.sleep(0)  # not cancelled any more

    assert await ending(then_goes_on()) is None


async def test_a_block_that_ends_in_time_is_left_alone() -> None:
    deadlines = Deadlines()
    with deadlines.limit(LONG) as limit:
        await asyncio.sleep(0)
    assert limit.when > asyncio.get_running_loop().time() + LONG / 2
    deadlines.close()


async def test_a_shorter_limit_started_later_expires_first() -> None:
    deadlines = Deadlines()
    slow = asyncio.create_task(limited(deadlines, LONG))
    await asyncio.sleep(0)  # entered: the timer is set for its deadline
    assert await ending(limited(deadlines, SHORT)) is TimeoutError
    assert not slow.done()
    slow.cancel()
    deadlines.close()


async def test_blocks_due_together_all_expire() -> None:
    deadlines = Deadlines()
    ends = await asyncio.gather(*(ending(limited(deadlines, SHORT)) for _ in range(3)))
    assert ends == [TimeoutError] * 3


async def test_another_cancellation_wins_over_the_limit() -> None:
    """Someone else cancelling the task as well: the block ends cancelled, not timed out."""
    deadlines = Deadlines()

    async def cancelled_again() -> None:
        with deadlines.limit(SHORT):
            try:
                await forever()
            except asyncio.CancelledError:
                task = asyncio.current_task()
                assert task is not None
                task.cancel()
                raise

    assert await ending(cancelled_again()) is asyncio.CancelledError


async def test_a_block_that_swallows_the_cancellation_returns_and_is_not_cancelled_later() -> None:
    deadlines = Deadlines()

    async def swallowing() -> None:
        with deadlines.limit(SHORT), contextlib.suppress(asyncio.CancelledError):
            await forever()
        task = asyncio.current_task()
        assert task is not None
        assert task.cancelling() == 0
        await asyncio.sleep(0)

    assert await ending(swallowing()) is None


async def test_a_block_after_the_timer_found_none_running_is_still_limited() -> None:
    deadlines = Deadlines()
    with deadlines.limit(SHORT):
        pass
    await asyncio.sleep(SHORT * 3)  # the timer fires with no block in progress
    assert await ending(limited(deadlines, SHORT)) is TimeoutError


async def test_close_takes_the_timer_off_the_loop() -> None:
    """Until its deadline the loop's timer holds the keeper (and a run's executor with it);
    after `close` nothing does."""

    def kept(close: bool) -> bool:
        deadlines = Deadlines()
        with deadlines.limit(LONG):
            pass
        if close:
            deadlines.close()
        ref = weakref.ref(deadlines)
        del deadlines
        gc.collect()
        return ref() is not None

    assert kept(close=False)
    assert not kept(close=True)


def test_a_limit_outside_an_event_loop_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="no running event loop"), Deadlines().limit(1.0):
        pass
