"""Internal. The HTTP app: runs streamed as SSE or NDJSON, their trajectories, sessions, and a web
page.

    POST /runs                      start a run, stream its events (SSE or NDJSON by Accept;
                                    AG-UI or the Vercel AI SDK's stream by ?protocol=)
    GET  /runs/{run_id}             its state and trajectory (events so far, or the file)
    GET  /runs/{run_id}/events      stream it again, after Last-Event-ID; live runs are followed
    POST /runs/{run_id}/cancel      cancel it; answers once it has ended
    GET  /sessions/{session_id}     the session's runs
    POST /sessions/{session_id}/messages   continue the session: a run, streamed as above
    POST /ag-ui                     an AG-UI `RunAgentInput` (what `HttpAgent` posts): a run
                                    in the thread's session, streamed as AG-UI events
    GET  /trajectories              the trajectory files the server can open
    GET  /                          the web page; /static/… its script and styles
    GET  /openapi.json              the schema
    POST|GET|DELETE /mcp            the agent as an MCP server, over streamable HTTP (with the
                                    `mcp` extra; `agentrt.mcp.server`)

Built on the Agent API only: `agent.run(query, session_id=, strategy=)`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, NoReturn

import anyio
from ag_ui.core import Event as AgUiEvent
from ag_ui.core import RunAgentInput
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi import Path as PathParam
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.security import HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from agentrt._version import __version__
from agentrt.agent import Agent
from agentrt.events import event_adapter
from agentrt.exceptions import SessionConflict, StoreUnavailable, UserError
from agentrt.models.base import Message
from agentrt.server.ag_ui_endpoint import InputError, read_input
from agentrt.server.auth import Caller, CallerDep, authenticate, token_keys
from agentrt.server.guard import RequestGuard
from agentrt.server.runs import Refusal, RunRegistry
from agentrt.server.schemas import (
    ID_PATTERN,
    ApprovalRequest,
    ErrorBody,
    FieldError,
    LimitErrorBody,
    MessageRequest,
    RunInfo,
    RunRequest,
    RunSummary,
    SessionInfo,
    TrajectoryList,
    ValidationErrorBody,
)
from agentrt.server.streams import (
    NDJSON,
    SSE,
    EventStream,
    StreamFormat,
    file_chunks,
    negotiate,
    relay_chunks,
    run_chunks,
)
from agentrt.server.trajectories import find_trajectory, list_trajectories, read_run
from agentrt.sessions.store import Turn

if TYPE_CHECKING:
    from agentrt.mcp.server import HTTPSessions
    from agentrt.server.relay import Relay, RelayedRun

__all__ = ["ServerSettings", "create_app"]

STATIC = Path(__file__).parent / "static"


class ServerSettings(BaseModel):
    """How a server admits and keeps runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tokens: tuple[str, ...] = ()
    """Bearer tokens accepted; empty means no token is asked for (loopback only, see
    `check_exposure`)."""
    max_runs: int = Field(32, ge=1)
    """Runs in progress at once on this server; one more is refused with 429."""
    max_runs_per_token: int = Field(8, ge=1)
    """Runs in progress at once for one token (when the server has tokens)."""
    keep_finished: int = Field(100, ge=0)
    """Finished runs kept in memory; older ones are served from their trajectory files."""
    keepalive: float = Field(15.0, gt=0)
    """Seconds of silence after which an SSE stream gets a comment line (within half as long
    again: one clock per server strikes every half of it)."""
    list_limit: int = Field(200, ge=1)
    """Most trajectory files `GET /trajectories` lists."""
    max_body: int = Field(1 << 20, ge=1024)
    """Most bytes of a request body read; a larger one is refused with 413 (a run's query is at
    most 20,000 characters)."""
    store: str | None = None
    """The database the workers of a deployment share (by default the agent's
    `session_store`). A `postgresql://…` URL relays every run's events through it
    (`agentrt.server.relay`, with the `postgres` extra): any worker then streams, reads and
    cancels a run another one holds. None, or another store: this server alone."""
    owner_check: float = Field(2.0, gt=0)
    """Seconds a stream of another worker's run waits without news before it checks that the
    worker is still there (its stream ends with `run_finished: error` if not)."""
    relay_keep: float = Field(86400.0, gt=0)
    """Seconds the relay keeps a run's events (from its start); after that, only the
    trajectory files of the worker that ran it have them."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names (a `Host` header's, without the port) answered besides localhost, 127.0.0.1
    and [::1]; `*` for any. Without it a server without tokens answers to the loopback names
    only (421 otherwise: DNS rebinding), and one with tokens to any."""


RunId = Annotated[str, PathParam(pattern=ID_PATTERN, description="A run id.")]
SessionId = Annotated[str, PathParam(pattern=ID_PATTERN, description="A session id.")]
WireProtocol = Literal["agentrt", "ag-ui", "vercel"]
"""What a stream speaks (`?protocol=`): agentrt's own events, or a UI protocol's frames."""
StreamProtocol = Annotated[
    WireProtocol,
    Query(
        description="What the stream speaks: agentrt's own events (SSE or NDJSON, by `Accept`), "
        "AG-UI events (`ag-ui`) or the Vercel AI SDK's UI message stream (`vercel`), both SSE."
    ),
]

_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "No bearer token, or not one this server accepts."},
    403: {
        "model": ErrorBody,
        "description": "The server has no token and the request reached it beyond loopback.",
    },
    413: {"model": ErrorBody, "description": "The body is larger than the server reads."},
    421: {"model": ErrorBody, "description": "The Host is not one this server answers to."},
    422: {
        "model": ValidationErrorBody,
        "description": "The request does not validate (a body that is not JSON included).",
    },
}
_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "No such run or session here."}
}
_PROTOCOL_FRAME = {
    "type": "object",
    "description": "A frame of a UI protocol (`?protocol=ag-ui` or `vercel`): no `event`, and an "
    "`id` (the seq of the agentrt event it came from) on the last frame each event gives.",
    "required": ["data"],
    "properties": {
        "id": {"type": "string", "pattern": "^[0-9]+$"},
        "data": {
            "anyOf": [
                {"const": "[DONE]", "description": "The Vercel stream's last frame."},
                {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": {
                        "anyOf": [
                            {"$ref": "#/components/schemas/AgUiEvent"},
                            {"$ref": "#/components/schemas/UiMessageChunk"},
                        ]
                    },
                },
            ]
        },
    },
}
_STREAM_CONTENT = {
    SSE: {
        # One event of the stream (Open API 3.1 reads `schema` of an event stream that way).
        "schema": {
            "anyOf": [
                {
                    "type": "object",
                    "required": ["event", "id", "data"],
                    "properties": {
                        "event": {"type": "string", "description": "The event's `type`."},
                        "id": {
                            "type": "string",
                            "pattern": "^[0-9]+$",
                            "description": "The event's `seq`: send it as `Last-Event-ID` to "
                            "resume.",
                        },
                        "data": {
                            "type": "string",
                            "contentMediaType": "application/json",
                            "contentSchema": {"$ref": "#/components/schemas/Event"},
                        },
                    },
                },
                _PROTOCOL_FRAME,
            ]
        },
        "example": 'event: run_started\nid: 0\ndata: {"run_id":…,"seq":0,…}\n\n',
    },
    NDJSON: {
        "schema": {"type": "string", "description": "One `Event` as JSON per line."},
        "example": '{"run_id":…,"seq":0,"t":0.0,"type":"run_started",…}\n',
    },
}
_STREAM: dict[int | str, dict[str, Any]] = {
    200: {
        "description": (
            "The run's events, each as the JSON of one `Event` (see `RunInfo.events`): SSE "
            "(`event: <type>`, `id: <seq>`, `data: <json>`) or NDJSON, by `Accept`. The stream "
            "ends with `run_finished`. With `?protocol=ag-ui` or `vercel`, the same run as that "
            "protocol's SSE frames (`AgUiEvent`s, or `UiMessageChunk`s then `[DONE]`)."
        ),
        "content": _STREAM_CONTENT,
    },
    406: {
        "model": ErrorBody,
        "description": "`Accept` allows neither SSE nor NDJSON (nor SSE, for a UI protocol).",
    },
}
_START: dict[int | str, dict[str, Any]] = {
    **_STREAM,
    409: {"model": ErrorBody, "description": "The session has a run in progress."},
    429: {"model": LimitErrorBody, "description": "Too many runs in progress; says which limit."},
}
_LAST_EVENT_ID = {
    "name": "Last-Event-ID",
    "in": "header",
    "required": False,
    "description": "Send only the events after this `seq`, e.g. to resume a stream.",
    "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"},
}
_STARTED_HEADER = {"X-Run-Id": {"description": "The run's id.", "schema": {"type": "string"}}}


def create_app(agent: Agent, settings: ServerSettings | None = None) -> FastAPI:
    """The server's app over `agent`. Serve it with its lifespan on (uvicorn does).

    :raises UserError: the agent records no trajectories, which the server reads from; or two
        of its strategies would be one MCP tool (`agentrt.mcp.server`)
    """
    settings = settings or ServerSettings()
    trajectory_dir = agent.settings.trajectory_dir
    if trajectory_dir is None:
        msg = (
            "the server reads runs back from their trajectories, and this agent records none: "
            "give it AgentSettings(trajectory_dir=…)"
        )
        raise UserError(msg)
    registry = RunRegistry(
        trajectory_dir,
        max_runs=settings.max_runs,
        max_runs_per_token=settings.max_runs_per_token,
        keep_finished=settings.keep_finished,
        keepalive=settings.keepalive,
    )

    mcp = _mcp_sessions(agent, settings.max_runs)
    relay = _relay(settings.store or agent.settings.session_store, settings, registry)

    app = _App(
        title="agentrt",
        version=__version__,
        summary="Stream agent runs as SSE or NDJSON; read their trajectories.",
        lifespan=_lifespan(agent, registry, relay, mcp),
        # The interactive docs load their scripts from a CDN; the schema is at /openapi.json.
        docs_url=None,
        redoc_url=None,
    )
    app.state.server = _Server(agent, registry, settings, trajectory_dir, mcp, relay)
    app.state.strategies = list(agent.workspace.strategies)
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    if relay is not None:
        from agentrt.server.relay import RelayLost

        app.add_exception_handler(RelayLost, _relay_lost)
    app.state.token_keys = token_keys(settings.tokens)
    app.add_middleware(
        RequestGuard,
        token_keys=app.state.token_keys,
        allowed_hosts=settings.allowed_hosts,
        max_body=settings.max_body,
    )
    app.include_router(_api)
    app.get("/", include_in_schema=False)(_page)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    if mcp is not None:
        app.router.routes.append(
            Route("/mcp", _MCPEndpoint(mcp), methods=["GET", "POST", "DELETE"])
        )
    return app


def _mcp_sessions(agent: Agent, max_runs: int) -> HTTPSessions | None:
    """The MCP sessions `/mcp` serves, their runs limited as the API's are (apart from them);
    None without the `mcp` extra (no `/mcp` then)."""
    try:
        from agentrt.mcp.server import HTTPSessions
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in ("mcp", "mcp_types"):
            raise  # not the extra missing: a bug
        return None
    return HTTPSessions(agent, max_runs=max_runs)


def _lifespan(
    agent: Agent, registry: RunRegistry, relay: Relay | None, mcp: HTTPSessions | None
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(agent)  # its MCP servers run as long as the app
            if relay is not None:
                # Entered before the registry, left after it: the runs cancelled at shutdown
                # still have their ends relayed.
                await stack.enter_async_context(relay.running())
                registry.relay = relay.publish
            await stack.enter_async_context(registry.running())
            if mcp is not None:
                await stack.enter_async_context(mcp.running())
            yield

    return lifespan


def _relay(
    store: str | Path | None, settings: ServerSettings, registry: RunRegistry
) -> Relay | None:
    """The relay to the other workers, when the store is Postgres (None otherwise)."""
    if not isinstance(store, str) or not store.startswith("postgres"):
        return None
    from agentrt.server.relay import Relay, is_postgres

    if not is_postgres(store):
        return None
    return Relay(
        store,
        on_cancel=registry.cancel,
        owner_check=settings.owner_check,
        keep=settings.relay_keep,
    )


_bearer = HTTPBearer(auto_error=False)


class _MCPEndpoint:
    """`/mcp`: the MCP SDK's streamable-HTTP app, behind the API's token. `RequestGuard` has
    checked the Host, the body's size, and the token of requests with a body; a GET (the
    stream of server messages) has none, so the token is checked here for every request."""

    def __init__(self, sessions: HTTPSessions) -> None:
        self.sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            await authenticate(request, await _bearer(request))
        except HTTPException as exc:
            response = await http_exception_handler(request, exc)
            await response(scope, receive, send)
            return
        await self.sessions(scope, receive, send)


@dataclass(frozen=True, slots=True)
class _Server:
    """What the routes of one app work with (kept in `app.state.server`)."""

    agent: Agent
    registry: RunRegistry
    settings: ServerSettings
    trajectory_dir: Path
    mcp: HTTPSessions | None
    """What `/mcp` serves (None without the `mcp` extra)."""
    relay: Relay | None
    """The relay to the other workers (None when this server is alone)."""

    async def relayed(self, run_id: str) -> RelayedRun | None:
        """A run another worker holds (or this one held), as the relay has it."""
        return None if self.relay is None else await self.relay.find(run_id)


async def _server(request: Request) -> _Server:
    # A coroutine, as `authenticate` is: FastAPI would run a function in a worker thread.
    server: _Server = request.app.state.server
    return server


ServerDep = Annotated[_Server, Depends(_server)]

# The same dependency as `CallerDep`: FastAPI checks the token once per request.
_api = APIRouter(dependencies=[Depends(authenticate)], responses=_ERRORS)


async def _page() -> FileResponse:
    return FileResponse(STATIC / "index.html")


@dataclass(frozen=True, slots=True)
class _Given:
    """What an AG-UI client gives besides the question (`POST /ag-ui`)."""

    run_id: str
    history: list[Message]
    """What the session starts from, if it is new."""


async def _start(
    request: Request,
    server: _Server,
    caller: Caller,
    query: str,
    session_id: str | None,
    strategy: str | None,
    protocol: WireProtocol,
    given: _Given | None = None,
) -> Response:
    fmt = _stream_format(request, protocol, ("protocol",) if given is None else ())
    agent, registry = server.agent, server.registry
    if strategy is not None and strategy not in agent.workspace.strategies:
        known = ", ".join(agent.workspace.strategies)
        _invalid(("body", "strategy"), f"no strategy {strategy!r} (known: {known})")
    if session_id is not None:
        await _session_free(server, session_id)
    refusal = registry.admit(caller, session_id)
    if refusal is not None:
        return _refused(refusal)
    run_id = None
    if given is not None:
        assert session_id is not None
        await _seed(agent, session_id, given)
        run_id = _claim(server, given, session_id)
    try:
        events = agent.run(query, session_id=session_id, strategy=strategy, run_id=run_id)
    except UserError as exc:
        _invalid(("body",), str(exc))
    handle = registry.start(
        events, query=query, session_id=session_id, caller=caller, run_id=run_id
    )
    await handle.started.wait()
    # Cancelled before its first event: only at shutdown.
    if handle.run_id is None or not (handle.events or handle.evicted):
        raise HTTPException(503, "the server is shutting down")
    if server.relay is not None:  # known to the other workers before its stream starts
        await server.relay.claim(handle.run_id, query, session_id)
    return EventStream(
        run_chunks(handle, -1, fmt),
        fmt,
        on_close=handle.abandon,
        headers={"X-Run-Id": handle.run_id},
    )


async def _session_free(server: _Server, session_id: str) -> None:
    """409 if the session has a run in progress on another worker (this one's are checked by
    `RunRegistry.admit`). Checked before the run is claimed, not with it: two workers asked at
    the same moment may both start one, which the session store then orders."""
    if server.relay is None:
        return
    busy = await server.relay.session_busy(session_id)
    if busy is not None and server.registry.get(busy) is None:
        msg = (
            f"session {session_id!r} has a run in progress on another worker ({busy}): wait "
            "for it to finish or cancel it, so that the next message sees its answer"
        )
        raise HTTPException(409, msg)


async def _seed(agent: Agent, session_id: str, given: _Given) -> None:
    """A new session starts from the AG-UI thread's history: its first turn."""
    if not given.history:
        return
    try:
        if (await agent.sessions.load(session_id)).version == 0:
            first = Turn(run_id=given.run_id, messages=given.history)
            with suppress(SessionConflict):  # another request seeded it first
                await agent.sessions.append(session_id, first, 0)
    except StoreUnavailable as exc:
        raise HTTPException(503, str(exc)) from None


def _claim(server: _Server, given: _Given, session_id: str) -> str:
    """The run id an AG-UI client gave, once known to be new (409 if not). Called with no
    await until the run is registered."""
    run_id = given.run_id
    if server.registry.get(run_id) or find_trajectory(server.trajectory_dir, run_id):
        msg = f"run id {run_id!r} is taken: a run's id names its trajectory, give a new one"
        raise HTTPException(409, msg)
    return run_id


def _stream_format(
    request: Request, protocol: WireProtocol, params: tuple[str, ...] = ("protocol",)
) -> StreamFormat:
    """The stream format of `protocol` the request accepts (406 when it accepts none)."""
    for name in request.query_params:
        # Refused, not ignored: `?protocl=vercel` would otherwise stream agentrt's own events.
        if name not in params:
            takes = "a stream takes only `protocol`" if params else "this endpoint takes none"
            _invalid(("query", name), f"unknown query parameter: {takes}")
    accept = request.headers.get("accept")
    if protocol != "agentrt":
        if negotiate(accept, ("sse",)) is None:
            msg = f"cannot stream as {accept!r}: the {protocol} protocol streams as {SSE}"
            raise HTTPException(406, msg)
        return protocol
    fmt = negotiate(accept)
    if fmt is None:
        msg = f"cannot stream as {accept!r}: accept {SSE} or {NDJSON}"
        raise HTTPException(406, msg)
    return fmt


@_api.post(
    "/runs",
    response_class=Response,
    responses={**_START, 200: {**_START[200], "headers": _STARTED_HEADER}},
    summary="Start a run and stream its events",
)
async def post_run(
    request: Request,
    body: RunRequest,
    caller: CallerDep,
    server: ServerDep,
    protocol: StreamProtocol = "agentrt",
) -> Response:
    """Start a run and stream its events as they happen.

    The request owns the run: if the client disconnects before the run ends, the run is
    cancelled (its tools too) and its trajectory ends with `run_finished: cancelled`.
    """
    return await _start(
        request, server, caller, body.query, body.session_id, body.strategy, protocol
    )


@_api.get("/runs/{run_id}", responses=_NOT_FOUND, summary="A run's state and trajectory")
async def get_run(run_id: RunId, server: ServerDep) -> RunInfo:
    """The run's state and trajectory: the events so far while it runs on this server,
    its recorded file once it has ended (or for any run the trajectory folder holds)."""
    handle = server.registry.get(run_id)
    if handle is not None and handle.live:
        return RunInfo(**handle.summary().model_dump(), events=list(handle.events))
    relayed = await server.relayed(run_id)
    if relayed is not None and server.relay is not None:
        return await server.relay.info(relayed)
    path = find_trajectory(server.trajectory_dir, run_id)
    if path is not None:
        try:
            return await anyio.to_thread.run_sync(read_run, path)
        except ValueError as exc:
            _invalid(("path", "run_id"), f"the trajectory of run {run_id!r} is broken: {exc}")
    if handle is not None and not handle.evicted:  # ended, its file not written
        return RunInfo(**handle.summary().model_dump(), events=list(handle.events))
    raise HTTPException(404, _no_run(run_id, server.trajectory_dir))


@_api.get(
    "/runs/{run_id}/events",
    response_class=Response,
    responses={**_STREAM, **_NOT_FOUND},
    summary="Stream a run's events again, or follow it",
    # Read by hand (see `_last_event_id`) for an error that says what the header is for.
    openapi_extra={"parameters": [_LAST_EVENT_ID]},
)
async def get_run_events(
    request: Request, run_id: RunId, server: ServerDep, protocol: StreamProtocol = "agentrt"
) -> Response:
    """The run's events with `seq` after `Last-Event-ID` (all of them without it), from
    memory while it runs (then followed until it ends) or from its trajectory file.

    Unlike the stream that started it, a client leaving this one does not cancel the run.
    """
    fmt = _stream_format(request, protocol)
    after = _last_event_id(request.headers.get("last-event-id"))
    handle = server.registry.get(run_id)
    if handle is not None and not handle.evicted:
        return EventStream(run_chunks(handle, after, fmt), fmt)
    relayed = await server.relayed(run_id)
    if relayed is not None and server.relay is not None:
        batches = server.relay.follow(relayed)
        return EventStream(relay_chunks(batches, after, fmt, server.settings.keepalive), fmt)
    path = find_trajectory(server.trajectory_dir, run_id)
    if path is None:
        raise HTTPException(404, _no_run(run_id, server.trajectory_dir))
    return EventStream(file_chunks(path, after, fmt), fmt)


@_api.post(
    "/runs/{run_id}/cancel",
    responses={
        **_NOT_FOUND,
        409: {"model": ErrorBody, "description": "The run has already ended."},
    },
    summary="Cancel a run",
)
async def cancel_run(run_id: RunId, server: ServerDep) -> RunSummary:
    """Cancel a run in progress, its tools too; answers once it has ended (its streams
    end with `run_finished: cancelled`)."""
    handle = server.registry.get(run_id)
    if handle is None:
        relayed = await server.relayed(run_id)
        if relayed is not None and server.relay is not None:
            return await _cancel_elsewhere(server.relay, relayed)
        if find_trajectory(server.trajectory_dir, run_id) is not None:
            msg = f"run {run_id!r} has already ended"
            raise HTTPException(409, msg)
        raise HTTPException(404, _no_run(run_id, server.trajectory_dir))
    if not handle.live:
        msg = f"run {run_id!r} has already ended ({handle.state})"
        raise HTTPException(409, msg)
    handle.cancel()
    await handle.finished.wait()
    return handle.summary()


@_api.post(
    "/runs/{run_id}/approvals",
    response_class=Response,
    responses={
        **_START,
        **_NOT_FOUND,
        409: {"model": ErrorBody, "description": "The run is in progress, or has finished."},
        200: {**_START[200], "headers": _STARTED_HEADER},
    },
    summary="Decide on a run's held calls and stream the resumed run",
)
async def post_approvals(
    request: Request,
    run_id: RunId,
    body: ApprovalRequest,
    caller: CallerDep,
    server: ServerDep,
    protocol: StreamProtocol = "agentrt",
) -> Response:
    """Resume a run that ended `needs_approval` with a decision per held call (`Agent.resume`),
    and stream it as `POST /runs` does: the recorded turns are replayed, not asked again."""
    fmt = _stream_format(request, protocol)
    handle = server.registry.get(run_id)
    if handle is not None and handle.live:
        raise HTTPException(409, f"run {run_id!r} is in progress")
    path = find_trajectory(server.trajectory_dir, run_id)
    if path is None:
        raise HTTPException(404, _no_run(run_id, server.trajectory_dir))
    recorded = await anyio.to_thread.run_sync(read_run, path)
    if recorded.state not in ("needs_approval", "unfinished"):
        raise HTTPException(409, f"run {run_id!r} has finished ({recorded.state})")
    refusal = server.registry.admit(caller, recorded.session_id)
    if refusal is not None:
        return _refused(refusal)
    try:
        events = await anyio.to_thread.run_sync(server.agent.resume, run_id, body.decisions)
    except UserError as exc:
        _invalid(("body", "decisions"), str(exc))
    if server.relay is not None:
        # Before the run starts: its events (from seq 0 again) replace the earlier attempt's.
        await server.relay.claim(run_id, recorded.query, recorded.session_id, resumed=True)
    handle = server.registry.start(
        events,
        query=recorded.query,
        session_id=recorded.session_id,
        caller=caller,
        run_id=run_id,
    )
    await handle.started.wait()
    return EventStream(
        run_chunks(handle, -1, fmt),
        fmt,
        on_close=handle.abandon,
        headers={"X-Run-Id": run_id},
    )


async def _cancel_elsewhere(relay: Relay, run: RelayedRun) -> RunSummary:
    """Cancel a run another worker holds: its owner is asked through the relay."""
    info = await relay.info(run)
    if info.state != "running":
        msg = f"run {run.run_id!r} has already ended ({info.state})"
        raise HTTPException(409, msg)
    end = await relay.cancel(run)
    return RunSummary(
        run_id=run.run_id,
        state=end.status,
        query=run.query,
        session_id=run.session_id,
        answer=end.answer,
    )


@_api.get("/sessions/{session_id}", responses=_NOT_FOUND, summary="A session's runs")
async def get_session(session_id: SessionId, server: ServerDep) -> SessionInfo:
    """The runs of a session, oldest first: with a session store, every run it recorded (of
    any worker, before a restart too); without one, this server's since it started."""
    handles = server.registry.session(session_id) or []
    live = {h.run_id: h.summary() for h in handles if h.run_id is not None}
    runs = list(live.values())
    if server.agent.settings.session_store is not None:
        try:
            records = await server.agent.sessions.list_runs(session_id=session_id)
        except StoreUnavailable as exc:
            raise HTTPException(503, str(exc)) from None
        recorded = [
            live.pop(r.run_id)
            if r.run_id in live
            else RunSummary(run_id=r.run_id, state=r.status, query=r.query, session_id=session_id)
            for r in reversed(records)  # the store lists the newest first
        ]
        runs = [*recorded, *live.values()]
    if not runs:
        raise HTTPException(404, f"no session {session_id!r} on this server")
    return SessionInfo(session_id=session_id, runs=runs)


@_api.post(
    "/sessions/{session_id}/messages",
    response_class=Response,
    responses={**_START, 200: {**_START[200], "headers": _STARTED_HEADER}},
    summary="Continue a session: start a run in it and stream its events",
)
async def post_message(
    request: Request,
    session_id: SessionId,
    body: MessageRequest,
    caller: CallerDep,
    server: ServerDep,
    protocol: StreamProtocol = "agentrt",
) -> Response:
    """A run in the session (which starts with its first message): it sees the session's
    earlier questions and answers. Streams and cancels as `POST /runs` does."""
    return await _start(request, server, caller, body.query, session_id, body.strategy, protocol)


@_api.post(
    "/ag-ui",
    response_class=Response,
    responses={
        **_START,
        200: {**_START[200], "headers": _STARTED_HEADER},
        409: {
            "model": ErrorBody,
            "description": "The thread has a run in progress, or the run id is taken.",
        },
        422: {
            "model": ValidationErrorBody,
            "description": "The body is not a `RunAgentInput`, or one agentrt cannot run: a "
            "`threadId` or `runId` that is not an agentrt id, no user message last, a question "
            "empty or not text, an unknown `forwardedProps.strategy`, or non-empty `tools`, "
            "`context` or `resume`.",
        },
    },
    summary="Run an AG-UI RunAgentInput in its thread and stream AG-UI events",
)
async def post_ag_ui(
    request: Request, body: RunAgentInput, caller: CallerDep, server: ServerDep
) -> Response:
    """What `@ag-ui/client`'s `HttpAgent` posts, as it posts it: the last message (a user's)
    is the question, `threadId` the session (its earlier messages seed a new one), `runId`
    the run's id, `forwardedProps.strategy` a strategy to use. Non-empty `tools`, `context` or
    `resume` are refused: agentrt cannot call a client's tools, take ambient context or resume
    an interrupt. Streams the run as `POST /runs?protocol=ag-ui` does, and a client that leaves
    cancels it."""
    try:
        run = read_input(body, server.agent.workspace.strategies)
    except InputError as exc:
        _invalid(exc.loc, exc.msg)
    given = _Given(run.run_id, run.history)
    return await _start(
        request, server, caller, run.query, run.session_id, run.strategy, "ag-ui", given
    )


@_api.get("/trajectories", summary="The trajectory files the server can open")
async def get_trajectories(server: ServerDep) -> TrajectoryList:
    """The most recent trajectory files in the server's trajectory folder, newest first;
    open one with `GET /runs/{run_id}`."""
    files = await anyio.to_thread.run_sync(
        list_trajectories, server.trajectory_dir, server.settings.list_limit
    )
    return TrajectoryList(directory=str(server.trajectory_dir), files=files)


class _App(FastAPI):
    def openapi(self) -> dict[str, Any]:
        """The schema, with `Event` (the union every stream carries) among its components and
        the workspace's strategies listed where a request names one."""
        if self.openapi_schema is None:
            schema = super().openapi()
            for model in schema.get("components", {}).get("schemas", {}).values():
                for field in model.get("properties", {}).values():
                    if field.pop("x-strategy", False):
                        for choice in field.get("anyOf", [field]):
                            if choice.get("type") == "string":
                                choice["enum"] = self.state.strategies
            event = event_adapter.json_schema(
                mode="serialization", ref_template="#/components/schemas/{model}"
            )
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for name, definition in event.pop("$defs", {}).items():
                components.setdefault(name, definition)
            components["Event"] = event
            components.update(_ui_protocol_schemas())
        assert self.openapi_schema is not None
        return self.openapi_schema


def _ui_protocol_schemas() -> dict[str, Any]:
    """The frames of the UI protocols, for the schema: AG-UI's events as its package defines
    them (named `AgUi…`, apart from agentrt's), the AI SDK's chunks by their `type` only."""
    ag_ui = TypeAdapter(AgUiEvent).json_schema(
        by_alias=True, mode="serialization", ref_template="#/components/schemas/AgUi{model}"
    )
    schemas = {f"AgUi{name}": definition for name, definition in ag_ui.pop("$defs", {}).items()}
    schemas["AgUiEvent"] = ag_ui
    schemas["UiMessageChunk"] = {
        "type": "object",
        "description": "A chunk of the Vercel AI SDK's UI message stream (its `ai` package "
        "defines them).",
        "required": ["type"],
        "properties": {"type": {"type": "string"}},
    }
    return schemas


def _invalid(loc: tuple[str | int, ...], msg: str) -> NoReturn:
    """Refuse a request as its validation would (422, `ValidationErrorBody`)."""
    raise RequestValidationError([{"loc": loc, "msg": msg, "type": "value_error"}])


def _last_event_id(value: str | None) -> int:
    """The `seq` a stream resumes after; -1 (from the start) without the header."""
    if value is None:
        return -1
    if not re.fullmatch(r"[0-9]{1,18}", value.strip()):
        msg = f"must be the seq of an event the client has, an integer ≥ 0 (got {value!r})"
        _invalid(("header", "Last-Event-ID"), msg)
    return int(value)


def _no_run(run_id: str, directory: Path) -> str:
    return f"no run {run_id!r}: none in progress here and no trajectory file for it in {directory}"


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = []
    for e in exc.errors():
        loc, msg = list(e["loc"]), e["msg"]
        if e["type"] == "json_invalid":  # FastAPI puts the character position in `loc`
            position = loc[1:]
            reason = e.get("ctx", {}).get("error", msg)
            loc, msg = (
                ["body"],
                f"not JSON: {reason} (at character {position[0] if position else 0})",
            )
        errors.append(FieldError(loc=loc, msg=msg, type=e["type"]))
    return _unprocessable(errors)


def _unprocessable(errors: list[FieldError]) -> JSONResponse:
    summary = "; ".join(f"{'.'.join(map(str, e.loc))}: {e.msg}" for e in errors)
    body = ValidationErrorBody(detail=f"invalid request: {summary}", errors=errors)
    return JSONResponse(body.model_dump(), status_code=422)


async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
    # FastAPI answers a body it cannot decode as text with a bare 400 ("There was an error
    # parsing the body"): say what is wrong, as for any other body that is not JSON.
    cause = exc.__cause__
    if isinstance(cause, UnicodeDecodeError):
        msg = f"not JSON: not UTF-8 text ({cause.reason} at byte {cause.start})"
        return _unprocessable([FieldError(loc=["body"], msg=msg, type="json_invalid")])
    return await http_exception_handler(request, exc)


async def _relay_lost(request: Request, exc: Exception) -> JSONResponse:
    """A request that needs the relay while it is reconnecting to Postgres: 503, saying so."""
    return JSONResponse(ErrorBody(detail=str(exc)).model_dump(), status_code=503)


def _refused(refusal: Refusal) -> JSONResponse:
    if refusal.limit is not None:
        body: ErrorBody = LimitErrorBody(detail=refusal.detail, limit=refusal.limit)
    else:
        body = ErrorBody(detail=refusal.detail)
    return JSONResponse(body.model_dump(), status_code=refusal.status)
