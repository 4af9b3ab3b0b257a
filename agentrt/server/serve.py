"""Internal. Serving the app with uvicorn, ending the runs in progress first when the server stops.

Uvicorn stops by waiting for open responses to finish, then cutting them off after a grace
period. A run's stream finishes only with the run, so this server cancels the runs in progress
as it starts to stop: each stream then ends with the run's recorded `run_finished: cancelled`,
and the grace period is not spent waiting.

A stop signal (SIGINT, SIGTERM) is recorded in `Server.stopped_by` and not raised again once the
server has stopped, as uvicorn does: raised again inside `anyio.run`, SIGINT cancelled the main
task, and whether that ended the program with KeyboardInterrupt or normally (exit status 0)
depended on whether the task had one more `await` to run. `agentrt serve` exits `128 + signal`
from `stopped_by` instead, every time.

`run_workers` serves with N processes under uvicorn's supervisor (which replaces a worker that
dies), each of them this server: on a stop, each cancels its runs first, as a lone one does.
"""

from __future__ import annotations

import gc
import signal
import socket
from types import FrameType
from typing import Any

import uvicorn
from fastapi import FastAPI
from uvicorn.supervisors import multiprocess

from agentrt.server.runs import RunRegistry

__all__ = ["Server", "freeze_startup", "run_workers"]


class Server(uvicorn.Server):
    """A uvicorn server for an app of `create_app`."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.registry: RunRegistry | None = None
        self.mcp: Any = None
        """The app's MCP sessions (`/mcp`), None without them."""
        if not config.factory:  # a factory's app is made as the server starts
            self._find_parts(config.app)
        self.stopped_by: int | None = None
        """The first stop signal received, once one has been."""

    def _find_parts(self, app: object) -> None:
        server = getattr(app.state, "server", None) if isinstance(app, FastAPI) else None
        registry = getattr(server, "registry", None)
        if not isinstance(registry, RunRegistry):
            msg = f"{app!r} is not an app made by agentrt.server.create_app"
            raise TypeError(msg)
        self.registry = registry
        self.mcp = getattr(server, "mcp", None)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        if self.registry is None:
            # Made by the factory when the config was loaded, then wrapped in uvicorn's
            # middleware, each of which keeps the app it wraps as `app`.
            app = self.config.loaded_app
            while not isinstance(app, FastAPI) and hasattr(app, "app"):
                app = app.app
            self._find_parts(app)
        await super().startup(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Stop on the first signal, force the stop on a second SIGINT (uvicorn's rule), and
        record the signal instead of queueing it to be raised again after the stop."""
        if self.stopped_by is None:
            self.stopped_by = sig
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        else:
            self.should_exit = True

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.registry is not None:
            self.registry.cancel_all()
        if self.mcp is not None:
            self.mcp.close()  # their streams would otherwise be waited for, then cut off
        await super().shutdown(sockets)


def freeze_startup() -> None:
    """Keep what the process has made so far (modules, schemas, the app) out of the garbage
    collector's reach for the rest of its life, so that a full collection scans only what the
    runs made since. Unfrozen, each full collection paused every stream for 100-250 ms with
    200 runs streaming (`benchmarks/server.py`), and the collector cost a sixth of the server's
    CPU. For a process that is the server's alone (`agentrt serve`, each of its workers):
    an application that serves the app itself decides for its own process."""
    gc.collect()  # what is garbage now is freed, not frozen for good
    gc.freeze()


class _Worker(multiprocess.Process):
    """A worker process of uvicorn's supervisor that runs `Server`, not uvicorn's own."""

    @property
    def server(self) -> uvicorn.Server:
        if self._server is None:
            self._server = Server(self.config)
        return self._server


def run_workers(config: uvicorn.Config, sockets: list[socket.socket]) -> None:
    """Serve `config` (its app a factory of `create_app` apps, `config.workers` of them) with
    uvicorn's supervisor until a stop signal, each worker process a `Server`."""
    # uvicorn 0.54's supervisor makes its workers of `multiprocess.Process` (it no longer takes
    # a `target`), each running uvicorn's own server; nothing else chooses what they run. A
    # worker is that object sent to the new process, so its class is the one made here.
    made = multiprocess.Process
    multiprocess.Process = _Worker  # type: ignore[misc]
    try:
        multiprocess.Multiprocess(config, sockets=sockets).run()
    finally:
        multiprocess.Process = made  # type: ignore[misc]
