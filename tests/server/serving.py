"""The server `agentrt serve` runs (uvicorn), in a thread of the test process, on a free port.

In-process so that tests see what the tools saw (the test workspace's `seen`) and can look at
the server's event loop for tasks left behind; over a real socket so that what is tested is
what clients get.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from types import TracebackType
from typing import Any, TypeVar

import uvicorn
from fastapi import FastAPI

from agentrt import ModelChunk, ModelRequest, TextChunk, Usage, UsageChunk
from agentrt.server import Server

T = TypeVar("T")


class LiveServer:
    """`with LiveServer(app) as server:` serves `app` at `server.url` until the block ends.

    :param server: the uvicorn server class: agentrt's for an app of `create_app`, uvicorn's
        own for any other app (agentrt's refuses those)
    """

    def __init__(
        self, app: FastAPI, host: str = "127.0.0.1", *, server: type[uvicorn.Server] = Server
    ) -> None:
        self.app = app
        # Bound and listening before the server starts: clients may connect at once (the
        # kernel queues them), so nothing has to wait for the server to come up.
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind((host, 0))
        self._sock.listen(256)
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        self._server = server(
            uvicorn.Config(
                app,
                log_level="warning",
                lifespan="on",
                timeout_graceful_shutdown=5,
            )
        )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name="uvicorn", daemon=True)

    def _serve(self) -> None:
        # As `asyncio.run` ends: what the app left running on the loop is cancelled before the
        # loop closes (sse-starlette keeps a shutdown watcher task per loop, for one).
        with asyncio.Runner(loop_factory=lambda: self._loop) as runner:
            runner.run(self._server.serve(sockets=[self._sock]))

    def __enter__(self) -> LiveServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Shut the server down as uvicorn does on a signal, and wait until it has."""
        self._server.should_exit = True
        self._thread.join(timeout=30)
        self._sock.close()
        assert not self._thread.is_alive(), "the server did not stop within 30 s"

    def call(self, fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run `fn()` on the server's event loop and return its result."""
        return asyncio.run_coroutine_threadsafe(fn(), self._loop).result(timeout=30)

    def tasks(self) -> list[str]:
        """Every task alive on the server's event loop but the one asking, by name: a plain
        task by its coroutine, one of an anyio task group by the function it runs (anyio names
        the task after it)."""

        async def tasks() -> list[str]:
            found = []
            for task in asyncio.all_tasks():
                if task is asyncio.current_task():
                    continue
                coro = getattr(task.get_coro(), "__qualname__", "")
                found.append(task.get_name() if coro == "TaskHandle._run_coro" else coro)
            return sorted(found)

        return self.call(tasks)


class PlainModel:
    """A model that answers every call with the same plain text, however many calls come: a
    server under a fuzzer starts any number of runs. (Classification then falls back, and each
    run's single turn is its answer.)"""

    native_tools = False

    def __init__(self, answer: str = "Plain answer.") -> None:
        self.answer = answer

    @property
    def name(self) -> str:
        return "plain"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        yield TextChunk(text=self.answer)
        yield UsageChunk(usage=Usage(prompt_tokens=1, completion_tokens=1))


def outward_address() -> str | None:
    """This machine's address on the interface its traffic leaves by, None without one. (A
    UDP socket's `connect` only picks the route: nothing is sent.)"""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: routed like any outside address
        except OSError:
            return None
        address: str = probe.getsockname()[0]
    return None if address.startswith("127.") else address


def wait_until(condition: Callable[[], T], what: str, *, timeout: float = 15.0) -> T:
    """Poll `condition` until it returns something true, and return that; fail after `timeout`
    seconds saying `what` was awaited."""
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)
    return result
