"""The HTTP server: runs streamed as SSE or NDJSON, their trajectories, and a live web view.

Needs the `server` extra (`pip install agentrt[server]`). Start it with `agentrt serve`, or
serve `create_app(agent)` yourself: with `Server` (a uvicorn server that cancels the runs in
progress when it stops), or any ASGI server with the app's lifespan on.
"""

from agentrt.server.app import ServerSettings as ServerSettings
from agentrt.server.app import create_app as create_app
from agentrt.server.auth import check_exposure as check_exposure
from agentrt.server.serve import Server as Server

__all__ = ["Server", "ServerSettings", "check_exposure", "create_app"]
