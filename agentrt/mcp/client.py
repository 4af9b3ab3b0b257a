"""MCP servers' tools as agentrt tools: the client side of MCP, on the official `mcp` SDK.

    MCPServer ──► MCPConnection.start() ──► a task of its own: `mcp.Client` over stdio or HTTP
                      │ tools/list ──► one `Tool` per server tool (`MCPConnection.tools`)
                      │ notifications/tools/list_changed ──► listed again; `on_change` is told
                      └ stop(): the client closes; a stdio server's process is stopped

Each connection runs in a task of its own because the SDK's transports run task groups: a
server that dies must end its own task, never the one that started it (`async with agent:`).

The handshake is the `initialize` one (`mode="legacy"`: protocol versions up to 2025-11-25),
which every MCP server speaks today and where a server announces a changed tool list with
`notifications/tools/list_changed`. A call's failure — the server gone, an error result, a
result that is not MCP — is raised as a `ToolError`, which the executor turns into an error the
model reads. A server that cannot start is an `MCPServerError` naming it.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import inspect
import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, ClassVar

import anyio
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from agentrt._validation import describe_errors
from agentrt._version import __version__
from agentrt.catalog.metadata import ToolMetadata, schema_metadata
from agentrt.exceptions import ToolError, UserError
from agentrt.logs import get_logger
from agentrt.mcp.config import MCPServer
from agentrt.tool import Tool

if TYPE_CHECKING:
    import mcp
    import mcp_types

__all__ = ["MCPConnection", "MCPServerError", "MCPTools", "describe_changes"]

log = get_logger("agentrt.mcp")

_STDERR_TAIL = 600
"""Characters of a stdio server's stderr quoted when it fails to start."""


class MCPServerError(UserError):
    """An MCP server could not be used: not found, exited at start, speaks a protocol this
    agentrt does not, or names a tool another tool has. The message names the server."""


class _Arguments(BaseModel):
    """The arguments of an MCP tool: the server's own JSON schema, shown to the model as it
    is and checked with `jsonschema`. The values pass through untouched (no defaults filled
    in): the server applies its own."""

    model_config = ConfigDict(defer_build=True, extra="allow")
    input_schema: ClassVar[dict[str, Any]] = {}
    validator: ClassVar[Any] = None

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.input_schema)

    @model_validator(mode="before")
    @classmethod
    def _matches_schema(cls, data: Any) -> Any:
        problems = [
            f"{'.'.join(map(str, e.absolute_path)) or 'arguments'}: {e.message}"
            for e in sorted(cls.validator.iter_errors(data), key=lambda e: list(e.path))
        ]
        if problems:
            raise ValueError("; ".join(problems))
        return data


def _arguments_model(name: str, schema: dict[str, Any]) -> type[_Arguments]:
    import jsonschema

    schema = {"type": "object", "properties": {}, **schema}
    validator_class = jsonschema.validators.validator_for(schema)
    return type(
        f"{name}_arguments",
        (_Arguments,),
        {"input_schema": schema, "validator": validator_class(schema)},
    )


class MCPConnection:
    """One MCP server, connected: its tools as `Tool`s, each call sent to it.

    :param server: the server, as declared
    :param on_change: called after the server's tool list changed and was read again
    """

    def __init__(self, server: MCPServer, on_change: Callable[[], None] = lambda: None) -> None:
        self.server = server
        self.on_change = on_change
        self.tools: list[Tool] = []
        """Its tools, each named with the server's `prefix`."""
        self.metadata: list[ToolMetadata] = []
        """What tool retrieval embeds for each: its description, its parameters."""
        self._client: mcp.Client | None = None
        self._slots = asyncio.Semaphore(server.max_concurrency)
        self._signals, self._inbox = anyio.create_memory_object_stream[bool](math.inf)
        """`True`: list the tools again; `False`: stop."""
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        """Done once the server answered the handshake and the tool list (or failed to)."""
        self._settled = asyncio.Event()
        """Clear while a changed tool list is still to be read."""
        self._settled.set()
        self._ended: str | None = None
        """Why the connection ended, once it has while the agent still runs."""
        self._stderr: IO[bytes] | None = None

    async def start(self) -> None:
        """Start the server (stdio) or connect to it (HTTP), and list its tools.

        :raises MCPServerError: it could not start or answer in `start_timeout`
        """
        loop = asyncio.get_running_loop()
        self._ready = ready = loop.create_future()
        self._task = loop.create_task(self._serve(ready))
        try:
            async with asyncio.timeout(self.server.start_timeout):
                await asyncio.shield(ready)
        except TimeoutError:
            await self.stop()
            msg = (
                f"MCP server {self.server.name!r} did not answer the handshake and the tool "
                f"list within {self.server.start_timeout:g} s (start_timeout){self._tail()}"
            )
            raise MCPServerError(msg) from None
        except MCPServerError:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Close the connection; a stdio server's process is stopped (the SDK closes its
        stdin, then terminates it and its children if it does not exit)."""
        self._signals.send_nowait(False)
        if self._task is not None:
            if self._ready is not None and not self._ready.done():
                self._task.cancel()  # in the handshake, where the signal is not read
            await asyncio.wait({self._task})
        if self._stderr is not None:
            self._stderr.close()

    async def _serve(self, ready: asyncio.Future[None]) -> None:
        from mcp import Client
        from mcp_types import Implementation

        try:
            async with contextlib.AsyncExitStack() as stack:
                client = Client(
                    await self._transport(stack),
                    mode="legacy",
                    message_handler=self._on_message,
                    client_info=Implementation(name="agentrt", version=__version__),
                    cache=None,
                )
                self._client = await stack.enter_async_context(client)
                await self._list()
                ready.set_result(None)
                async for relist in self._inbox:
                    if not relist:
                        break
                    await self._list()
                    self.on_change()
                    if not self._inbox.statistics().current_buffer_used:
                        self._settled.set()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(self._start_error(exc))
            else:
                self._ended = f"{type(_leaf(exc)).__name__}: {_leaf(exc)}"
                log.warning(
                    "MCP server connection ended", server=self.server.name, error=self._ended
                )
        finally:
            self._client = None
            self._settled.set()  # nothing will be read again: runs must not wait for it
            if not ready.done():  # cancelled while starting
                ready.cancel()

    async def settled(self) -> None:
        """Wait until a tool list the server said changed has been read again."""
        await self._settled.wait()

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        """The SDK's transport for the server: a subprocess (its stderr kept in a temporary
        file, quoted if it fails to start: agentrt writes nothing to the terminal), or HTTP
        (its client closed with `stack`)."""
        server = self.server
        if server.command is not None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
            params = StdioServerParameters(
                command=server.command, args=server.args, env=server.env, cwd=server.cwd
            )
            return stdio_client(params, errlog=self._stderr)  # type: ignore[arg-type]
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        assert server.url is not None
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=server.headers))
        return streamable_http_client(server.url, http_client=http)

    async def _on_message(self, message: Any) -> None:
        """The SDK's handler of what the server sends unasked: a changed tool list is read
        again by `_serve` (a request sent from here would wait on this very handler)."""
        from mcp_types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self._settled.clear()
            self._signals.send_nowait(True)
        await anyio.lowlevel.checkpoint()

    async def _list(self) -> None:
        """Read the server's tool list (every page) into `tools` and `metadata`."""
        assert self._client is not None
        specs: list[mcp_types.Tool] = []
        cursor: str | None = None
        while True:
            page = await self._client.list_tools(cursor=cursor)
            specs += page.tools
            cursor = page.next_cursor
            if cursor is None:
                break
        tools, metadata = [], []
        for spec in specs:
            tool = self._tool(spec)
            tools.append(tool)
            metadata.append(schema_metadata(tool.name, tool.description, spec.input_schema))
        self.tools, self.metadata = tools, metadata

    def _tool(self, spec: mcp_types.Tool) -> Tool:
        name = self.server.prefix + spec.name
        server, remote = self.server.name, spec.name

        async def call(**arguments: Any) -> Any:
            return await self.call(remote, arguments)

        call.__name__ = name
        annotations = spec.annotations
        return Tool(
            call,
            name=name,
            description=inspect.cleandoc(spec.description or spec.title or "")
            or f"{remote} (MCP server {server})",
            timeout=self.server.timeout,
            limit=self._slots,
            args_model=_arguments_model(name, dict(spec.input_schema)),
            # A result may change between calls unless the server says the tool only reads.
            cache=bool(annotations is not None and annotations.read_only_hint),
        )

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Call `tool` (the server's own name for it) and return its result: the structured
        content when there is some, else the text (or the content blocks, if not all text).

        :raises ToolError: the server is not running, failed, or answered with an error or a
            result that is not MCP (the model reads the message)
        """
        where = f"MCP server {self.server.name!r}"
        client = self._client
        if client is None:
            msg = f"{where} is not running ({self._ended or 'it was stopped'})"
            raise ToolError(msg)
        try:
            result = await client.call_tool(tool, arguments)
        except ValidationError as exc:
            problem = describe_errors(exc, root=None, quote=False, limit=3)
            msg = f"{where} returned an invalid result for {tool!r}: {problem}"
            raise ToolError(msg) from None
        except RuntimeError as exc:  # the SDK's check of a result against its schema
            msg = f"{where} returned an invalid result for {tool!r}: {exc}"
            raise ToolError(msg) from None
        except Exception as exc:
            leaf = _leaf(exc)
            msg = f"{where} failed on {tool!r}: {type(leaf).__name__}: {leaf}"
            if "Connection closed" in str(leaf):  # the SDK's word for a server gone
                msg = f"{where} closed the connection during {tool!r}: it may have exited"
            raise ToolError(msg) from None
        text = [getattr(c, "text", None) for c in result.content]
        if result.is_error:
            msg = "\n".join(t for t in text if t) or f"{where}: {tool!r} failed (no message)"
            raise ToolError(msg)
        if result.structured_content is not None:
            return result.structured_content
        if all(isinstance(t, str) for t in text):
            return "\n".join(t for t in text if t is not None)
        return [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in result.content]

    def _start_error(self, exc: BaseException) -> MCPServerError:
        """What went wrong at start, said so that the user knows what to fix."""
        leaf = _leaf(exc)
        server = self.server
        where = f"MCP server {server.name!r}"
        if isinstance(leaf, FileNotFoundError) and server.command is not None:
            msg = f"{where}: command {server.command!r} not found (is it installed, on PATH?)"
        elif isinstance(leaf, OSError) and server.command is not None:
            msg = f"{where}: command {server.command!r} cannot be started: {leaf}"
        elif isinstance(leaf, RuntimeError) and "protocol version" in str(leaf):
            version, latest = str(leaf).rsplit(":", 1)[-1].strip(), _latest_handshake_version()
            how = "newer than" if version > latest else "not one"
            msg = (
                f"{where} speaks MCP protocol version {version}, {how} this agentrt's client "
                f"supports (up to {latest}): upgrade agentrt's mcp package, or use a release "
                "of the server that speaks an older version"
            )
        elif server.url is not None:
            msg = f"{where} at {server.url} cannot be reached: {type(leaf).__name__}: {leaf}"
        else:
            msg = (
                f"{where} ({server.command} {' '.join(server.args)}) exited or closed the "
                f"connection while starting: {type(leaf).__name__}: {leaf}{self._tail()}"
            )
        return MCPServerError(msg)

    def _tail(self) -> str:
        """The end of a stdio server's stderr, for an error message."""
        if self._stderr is None or self._stderr.closed:
            return ""
        self._stderr.seek(0)
        text = self._stderr.read().decode("utf-8", "replace").strip()
        return f"; its stderr ends: {text[-_STDERR_TAIL:]}" if text else ""


def _leaf(exc: BaseException) -> BaseException:
    """The first error inside the task groups' exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _latest_handshake_version() -> str:
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    return max(HANDSHAKE_PROTOCOL_VERSIONS)


class MCPTools:
    """The MCP servers of an agent, connected: every server's tools, under unique names.

    :param servers: the servers, as declared
    :param taken: the names of the agent's other tools (a clash with one is an error)
    :param on_change: called when a server's tool list changed and was read again
    """

    def __init__(
        self,
        servers: Sequence[MCPServer],
        taken: Sequence[str],
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        names = [s.name for s in servers]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            msg = f"two MCP servers are named {twice[0]!r}: give each a name of its own"
            raise MCPServerError(msg)
        self.taken = list(taken)
        self.connections = [MCPConnection(s, on_change) for s in servers]

    async def start(self) -> None:
        """Start every server (at once), then check their tool names.

        :raises MCPServerError: a server could not start, or names a tool that another tool
            has; every server started is stopped again
        """
        try:
            async with asyncio.TaskGroup() as tg:
                for connection in self.connections:
                    tg.create_task(connection.start())
            self.check()
        except BaseException as exc:
            await self.stop()
            if isinstance(exc, BaseExceptionGroup):
                raise _leaf(exc) from None
            raise

    async def stop(self) -> None:
        """Stop every server."""
        await asyncio.gather(*(c.stop() for c in self.connections))

    async def settled(self) -> None:
        """Wait until every tool list a server said changed has been read again: a run that
        starts after the notification came sees the new tools."""
        for connection in self.connections:
            await connection.settled()

    def check(self) -> None:
        """:raises MCPServerError: a tool name clashes with another tool's"""
        owners = dict.fromkeys(self.taken, "")
        for connection in self.connections:
            server = connection.server
            for tool in connection.tools:
                owner = owners.get(tool.name)
                if owner is not None:
                    other = f"MCP server {owner!r}'s" if owner else "the workspace's"
                    msg = (
                        f"MCP server {server.name!r}: its tool {tool.name!r} clashes with "
                        f"{other} tool of that name: give the server a prefix "
                        f"(prefix: {server.name}_ names it {server.name}_{tool.name})"
                    )
                    raise MCPServerError(msg)
                owners[tool.name] = server.name

    @property
    def tools(self) -> dict[str, list[Tool]]:
        """Server name → its tools."""
        return {c.server.name: c.tools for c in self.connections}

    @property
    def metadata(self) -> list[ToolMetadata]:
        return [m for c in self.connections for m in c.metadata]


def describe_changes(
    recorded: Mapping[str, Mapping[str, str]], current: Mapping[str, Mapping[str, str]]
) -> list[str]:
    """How the MCP servers' tools differ between a recorded run and today (each a trajectory
    header's `mcp_servers`): one line per server that is new, gone, or whose tools were
    added, removed or changed their schema."""
    lines = []
    for server in sorted({*recorded, *current}):
        old, new = recorded.get(server), current.get(server)
        if old is None or new is None:
            lines.append(f"MCP server {server!r} {'is new' if old is None else 'is gone'}")
            continue
        parts = [
            f"{what}: {', '.join(sorted(names))}"
            for what, names in (
                ("added", set(new) - set(old)),
                ("removed", set(old) - set(new)),
                ("schema changed", {n for n in set(old) & set(new) if old[n] != new[n]}),
            )
            if names
        ]
        if parts:
            lines.append(f"MCP server {server!r} changed its tools: {'; '.join(parts)}")
    return lines
