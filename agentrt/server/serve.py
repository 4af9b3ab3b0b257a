"""Internal. Serving the app with uvicorn, ending the runs in progress first when the server stops.

Uvicorn stops by waiting for open responses to finish, then cutting them off after a grace
period. A run's stream finishes only with the run, so this server cancels the runs in progress
as it starts to stop: each stream then ends with the run's recorded `run_finished: cancelled`,
and the grace period is not spent waiting.
"""

from __future__ import annotations

import socket

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

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.registry.cancel_all()
        await super().shutdown(sockets)
