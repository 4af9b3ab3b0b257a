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
"""

from __future__ import annotations

import signal
import socket
from types import FrameType

import uvicorn
from fastapi import FastAPI

from agentrt.server.runs import RunRegistry

__all__ = ["Server"]


class Server(uvicorn.Server):
    """A uvicorn server for an app of `create_app`."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        app = config.app
        server = getattr(app.state, "server", None) if isinstance(app, FastAPI) else None
        registry = getattr(server, "registry", None)
        if not isinstance(registry, RunRegistry):
            msg = f"{app!r} is not an app made by agentrt.server.create_app"
            raise TypeError(msg)
        self.registry = registry
        self.mcp = getattr(server, "mcp", None)
        """The app's MCP sessions (`/mcp`), None without them."""
        self.stopped_by: int | None = None
        """The first stop signal received, once one has been."""

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
        self.registry.cancel_all()
        if self.mcp is not None:
            self.mcp.close()  # their streams would otherwise be waited for, then cut off
        await super().shutdown(sockets)
