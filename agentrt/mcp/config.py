"""MCP servers whose tools an agent offers: declared in code, or in a workspace's `mcp.yaml`.

    # my-workspace/mcp.yaml
    servers:
      files:                          # the server's name: errors and trajectories use it
        command: python               # stdio: a command the agent starts (in the workspace
        args: [servers/files.py]      # folder), speaking MCP on its stdin and stdout
        env: {DATA_DIR: data}
        timeout: 20                   # seconds per call (default: the agent's tool_timeout)
        max_concurrency: 2            # calls in flight at once, over every run of the agent
      search:
        url: http://127.0.0.1:8931/mcp    # streamable HTTP
        headers: {Authorization: Bearer abc}
        prefix: search_               # its tools are named search_<tool>: a name clash with
                                      # another tool is an error until a prefix resolves it

In code: `Agent(model, mcp_servers=[MCPServer.stdio("files", "python", ["files.py"]),
MCPServer.http("search", "http://127.0.0.1:8931/mcp")])`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentrt._validation import load_yaml, load_yaml_model
from agentrt.exceptions import WorkspaceError

__all__ = ["MCPServer", "load_mcp_servers"]


class MCPServer(BaseModel):
    """One MCP server: how to reach it, and how its tools are called. Build one with
    `MCPServer.stdio` or `MCPServer.http`."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    """What errors, logs and the trajectory header call it."""
    command: str | None = None
    """stdio: the executable to start (looked up on `PATH`)."""
    args: list[str] = []
    """stdio: its arguments."""
    env: dict[str, str] = {}
    """stdio: environment variables, over the few the SDK passes on (`PATH`, `HOME`, …)."""
    cwd: Path | None = None
    """stdio: the folder it starts in (from `mcp.yaml`: the workspace folder, by default)."""
    url: str | None = None
    """streamable HTTP: the server's endpoint (`http://host:port/mcp`)."""
    headers: dict[str, str] = {}
    """streamable HTTP: sent with every request (an `Authorization` header, say)."""
    timeout: float | None = Field(None, gt=0)
    """Seconds a call may take before it is abandoned as `timeout`; None takes the agent's
    `tool_timeout`."""
    start_timeout: float = Field(30.0, gt=0)
    """Seconds to start and answer the handshake and the tool list."""
    max_concurrency: int = Field(8, ge=1)
    """Calls to this server in flight at once, over every run of the agent; more wait in the
    executor, and their timeout starts once they run."""
    prefix: str = Field("", pattern=r"^[A-Za-z0-9_.-]*$")
    """Put before each of its tools' names: what resolves a clash with another tool."""

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServer:
        if (self.command is None) == (self.url is None):
            msg = f"MCP server {self.name!r}: give either command (stdio) or url (HTTP), not both"
            raise ValueError(msg)
        if self.url is None and self.headers:
            msg = f"MCP server {self.name!r}: headers are for a url (HTTP) server"
            raise ValueError(msg)
        if self.command is None and (self.args or self.env or self.cwd):
            msg = f"MCP server {self.name!r}: args, env and cwd are for a command (stdio) server"
            raise ValueError(msg)
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    @classmethod
    def stdio(
        cls,
        name: str,
        command: str,
        args: list[str] | None = None,
        *,
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
        **options: Any,
    ) -> MCPServer:
        """A server the agent starts as a subprocess and talks to over its stdin and stdout.

        :param options: `timeout`, `start_timeout`, `max_concurrency`, `prefix`
        """
        return cls(
            name=name,
            command=command,
            args=args or [],
            env=env or {},
            cwd=Path(cwd) if cwd is not None else None,
            **options,
        )

    @classmethod
    def http(
        cls, name: str, url: str, *, headers: dict[str, str] | None = None, **options: Any
    ) -> MCPServer:
        """A server already running, reached over streamable HTTP at `url`.

        :param options: `timeout`, `start_timeout`, `max_concurrency`, `prefix`
        """
        return cls(name=name, url=url, headers=headers or {}, **options)


def load_mcp_servers(root: Path) -> list[MCPServer]:
    """The servers `root/mcp.yaml` declares (none when there is no such file). A stdio
    server's `cwd` is taken relative to `root`, which is also its default.

    :raises WorkspaceError: the file is not a `servers:` mapping of valid servers (the message
        names the file and the server)
    """
    path = root / "mcp.yaml"
    if not path.is_file():
        return []
    loaded = load_yaml(path)
    servers = loaded.get("servers") if isinstance(loaded, dict) else None
    if not isinstance(loaded, dict) or set(loaded) != {"servers"} or not isinstance(servers, dict):
        msg = f"{path}: expected one key, 'servers': a mapping of server name → server"
        raise WorkspaceError(msg)
    found = []
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            msg = f"{path}: servers.{name}: expected a mapping (command or url, …)"
            raise WorkspaceError(msg)
        data = {**entry, "name": str(name)}
        if "command" in entry:
            data["cwd"] = root / entry.get("cwd", ".")
        found.append(load_yaml_model(path, MCPServer, data=data, where=f"servers.{name}"))
    return found
