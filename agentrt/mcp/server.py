"""agentrt as an MCP server: the agent offered as tools to any MCP host (Claude Desktop, an
IDE, another agent), over stdio (`agentrt mcp`) or streamable HTTP (`/mcp` on `agentrt serve`).

Tools, named so that a host can tell them apart:

- `ask`, always: the agent answers the question, choosing its strategy as `agent.run` does
  (by classification when the workspace has several; a code-first agent has one);
- `ask_<strategy>`, one per strategy when the workspace has several: the same, with that
  strategy forced, described by the strategy's own description.

Each takes `question` and an optional `session_id` (runs of one session see its earlier
questions and answers) and returns the answer as text, and as structured content an
`AnswerResult`: the status, the answer, the error, the run id and the trajectory file.

While a run goes on, each of its events (but the text, reasoning and output deltas) is sent
as a progress notification with a readable message, when the client asked for progress (sent a
progress token). Cancelling the request (`notifications/cancelled`) cancels the run, its tools
too; its trajectory ends with `run_finished: cancelled`.

Needs the `mcp` extra (`pip install 'agentrt[mcp]'`).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import TaskStatus
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from agentrt._version import __version__
from agentrt.agent import Agent
from agentrt.events import (
    AnswerDoubt,
    AskEvent,
    ClassifiedEvent,
    Event,
    GuardEvent,
    ModelErrorEvent,
    ModelResponseEvent,
    OutputDeltaEvent,
    PlanCreatedEvent,
    ReasoningDeltaEvent,
    RunFinishedEvent,
    RunStartedEvent,
    RunStatus,
    StrategySelectedEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolCallInvalidEvent,
    ToolFinishedEvent,
    ToolsNarrowedEvent,
    ToolStartedEvent,
    TurnStartedEvent,
)
from agentrt.exceptions import UserError

__all__ = [
    "ASK",
    "AnswerResult",
    "AskArguments",
    "HTTPSessions",
    "mcp_server",
    "progress_message",
    "serve_stdio",
]

ASK = "ask"
"""The tool that asks the agent, letting it choose the strategy."""

_FAILED: frozenset[RunStatus] = frozenset({"error", "cancelled", "budget_exhausted"})
"""Statuses whose result is flagged `isError`: the host's model should not take the text for
an answer."""

_UNSENT = (TextDeltaEvent, ReasoningDeltaEvent, OutputDeltaEvent, ToolStartedEvent)
"""Events not sent: the deltas, too many and too small for a notification each (the answer
carries the text), and a tool's start, which follows its `tool_call` at once."""


class AskArguments(BaseModel):
    """A tool's arguments: what the agent is asked."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=20_000)
    """The question, in plain language."""
    session_id: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$",
        description="Continue this conversation: runs of one session see its earlier questions "
        "and answers. Any id of your choosing (letters, digits, . _ : -).",
    )
    """Continue this session (as the server's `session_id`: no slash, no leading dot)."""


class AnswerResult(BaseModel):
    """A tool's structured result: how the run ended."""

    status: RunStatus
    """`ok`; `needs_input` when the agent asks a question back (answer it in the same session);
    `needs_approval` when a tool call awaits a person (the agent's owner resumes it,
    `Agent.resume`); `budget_exhausted`, `cancelled` or `error` otherwise."""
    answer: str | None
    """The answer (a typed output as its JSON text); for `needs_input`, the question."""
    output: JsonValue = None
    """A typed output as JSON, when the agent has an output type and the run ended `ok`."""
    error: str | None = None
    """Why a run that did not end `ok` ended as it did."""
    doubt: AnswerDoubt | None = None
    """Why the answer of a run that ended `ok` is not taken for one (`AnswerDoubt`)."""
    run_id: str
    session_id: str | None = None
    trajectory: str | None = None
    """The run's trajectory file, when the agent records them."""


def mcp_server(agent: Agent, *, name: str = "agentrt", max_runs: int | None = None) -> Server[Any]:
    """The MCP server (the SDK's low-level `Server`) whose tools run `agent`.

    Serve it over any transport the SDK has; `serve_stdio` and `HTTPSessions` do for stdio and
    streamable HTTP. A call is refused (a tool error saying why) while its session has a run
    in progress, so that the next question sees the answer, and while `max_runs` runs are.

    :param name: the server's name, as hosts show it
    :param max_runs: runs in progress at once, over every client; None for no limit
    :raises UserError: two strategies whose tool names would be the same
    """
    tools = _tools(agent)
    live = _Live(max_runs)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool for tool, _ in tools.values()])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name not in tools:
            msg = f"no tool {params.name!r} (this server has: {', '.join(tools)})"
            raise MCPError(types.INVALID_PARAMS, msg)
        try:
            arguments = AskArguments.model_validate(params.arguments or {})
        except ValidationError as exc:
            return _error(f"invalid arguments for {params.name}: {_summary(exc)}")
        refusal = live.refusal(arguments.session_id)
        if refusal is not None:
            return _error(refusal)
        with live.holding(arguments.session_id):
            return await _answer(agent, ctx, arguments, tools[params.name][1])

    return Server(
        name,
        version=__version__,
        instructions=_instructions(agent),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


class _Live:
    """The runs in progress on one server: how many, and in which sessions."""

    def __init__(self, max_runs: int | None) -> None:
        self.max_runs = max_runs
        self.runs = 0
        self.sessions: set[str] = set()

    def refusal(self, session_id: str | None) -> str | None:
        """Why a run may not start now, or None if it may."""
        if self.max_runs is not None and self.runs >= self.max_runs:
            return (
                f"the server's runs in progress are at its limit ({self.max_runs}); "
                "retry when one has finished"
            )
        if session_id in self.sessions:
            return (
                f"session {session_id!r} has a run in progress: wait for its answer, so that "
                "the next question sees it"
            )
        return None

    @contextmanager
    def holding(self, session_id: str | None) -> Iterator[None]:
        self.runs += 1
        if session_id is not None:
            self.sessions.add(session_id)
        try:
            yield
        finally:
            self.runs -= 1
            if session_id is not None:
                self.sessions.discard(session_id)


def _tools(agent: Agent) -> dict[str, tuple[types.Tool, str | None]]:
    """Each tool by name, with the strategy it forces (None: the agent chooses)."""
    strategies = agent.workspace.strategies
    ask = "Ask the agent a question; it answers using its tools."
    if len(strategies) > 1:
        listed = "; ".join(f"{n}: {s.description.strip()}" for n, s in strategies.items())
        ask = f"{ask} It chooses how to answer among its strategies ({listed})."
    tools: dict[str, tuple[types.Tool, str | None]] = {ASK: (_tool(ASK, ask), None)}
    if len(strategies) == 1:
        return tools
    for strategy_name, strategy in strategies.items():
        tool_name = "ask_" + re.sub(r"[^A-Za-z0-9_.-]", "_", strategy_name)[:124]
        if tool_name in tools:
            msg = (
                f"strategies {strategy_name!r} and {tools[tool_name][1]!r} would both be the MCP "
                f"tool {tool_name!r}: rename one of them"
            )
            raise UserError(msg)
        description = f"Ask the agent, with its {strategy_name!r} strategy: {strategy.description}"
        tools[tool_name] = (_tool(tool_name, description.strip()), strategy_name)
    return tools


def _tool(name: str, description: str) -> types.Tool:
    return types.Tool(
        name=name,
        description=description,
        input_schema=AskArguments.model_json_schema(),
        output_schema=AnswerResult.model_json_schema(),
        annotations=types.ToolAnnotations(read_only_hint=False, open_world_hint=True),
    )


def _instructions(agent: Agent) -> str:
    return (
        f"An agentrt agent on {agent.model.name}. Call `{ASK}` with a question; pass a "
        "session_id to continue a conversation. A result with status needs_input is a question "
        "back: answer it with the same session_id."
    )


async def _answer(
    agent: Agent, ctx: ServerRequestContext[Any], arguments: AskArguments, strategy: str | None
) -> types.CallToolResult:
    """Run the agent, each event a progress notification; its end as the tool's result."""
    try:
        run = agent.run(arguments.question, session_id=arguments.session_id, strategy=strategy)
    except UserError as exc:
        return _error(str(exc))
    end: RunFinishedEvent | None = None
    # Leaving the block, also when the request is cancelled, closes the run: its producer is
    # cancelled and records `run_finished: cancelled`.
    async with run:
        async for event in run:
            if isinstance(event, RunFinishedEvent):
                end = event
            message = progress_message(event)
            if message is not None:
                await ctx.session.report_progress(event.seq, message=message)
    assert end is not None  # a run always ends with one
    path = run.result.path
    result = AnswerResult(
        status=end.status,
        answer=end.answer,
        output=end.output,
        error=end.error,
        doubt=end.doubt,
        run_id=end.run_id,
        session_id=arguments.session_id,
        trajectory=str(path.resolve()) if path is not None else None,
    )
    text = end.answer or f"the run ended {end.status}: {end.error}"
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=result.model_dump(mode="json"),
        is_error=end.status in _FAILED,
    )


def _error(message: str) -> types.CallToolResult:
    """A call that could not start a run, told to the host's model (`isError`), which may
    correct it: bad arguments, an empty question."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


def _summary(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors()
    )


def progress_message(event: Event) -> str | None:
    """What a progress notification says of `event`; None for those not sent: the deltas (text,
    reasoning, output) and `tool_started`."""
    if isinstance(event, _UNSENT):
        return None
    if isinstance(event, RunStartedEvent):
        return f"run {event.run_id} started on {event.model}"
    if isinstance(event, ClassifiedEvent):
        return f"classified as {event.query_type} ({event.method})"
    if isinstance(event, StrategySelectedEvent):
        return (
            f"strategy {event.strategy}: planner {event.planner}, budget {event.step_budget} steps"
        )
    if isinstance(event, ToolsNarrowedEvent):
        return _short(
            f"{len(event.tools)} tools on offer: " + ", ".join(t.name for t in event.tools)
        )
    if isinstance(event, TurnStartedEvent):
        return f"step {event.step} started"
    if isinstance(event, ToolCallEvent):
        return f"calling {event.name} {_short(json.dumps(event.arguments, ensure_ascii=False))}"
    if isinstance(event, ToolFinishedEvent):
        return _finished(event)
    return _other_message(event)


def _other_message(event: Event) -> str:
    if isinstance(event, ToolCallInvalidEvent):
        return f"invalid tool call: {_short(event.reason)}"
    if isinstance(event, ModelResponseEvent):
        tokens = event.usage.completion_tokens
        return f"model answered ({event.purpose}): {tokens} tokens in {event.duration:.2f} s"
    if isinstance(event, ModelErrorEvent):
        return f"model error{' (asking again)' if event.retrying else ''}: {_short(event.error)}"
    if isinstance(event, GuardEvent):
        return f"guard ({event.kind}): {_short(event.detail)}"
    if isinstance(event, PlanCreatedEvent):
        return f"plan of {len(event.nodes)} steps"
    if isinstance(event, AskEvent):
        return f"asks: {_short(event.question)}"
    if isinstance(event, RunFinishedEvent):
        why = f": {_short(event.error)}" if event.error else ""
        return f"run finished {event.status}{why} after {event.steps} steps"
    return event.type.replace("_", " ")


def _finished(event: ToolFinishedEvent) -> str:
    took = f"{event.duration * 1000:.0f} ms"
    if event.status == "ok":
        return f"{event.name} returned in {took}"
    return f"{event.name} {event.status} after {took}: {_short(event.error or '')}"


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def serve_stdio(server: Server[Any]) -> None:
    """Serve `server` (`mcp_server(agent)`) over stdin and stdout until stdin closes: how MCP
    hosts start a server.

    While it serves, file descriptor 1 points at stderr (the SDK's doing): nothing but
    protocol frames reaches stdout, whatever a tool prints."""
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


class HTTPSessions:
    """`agent`'s MCP sessions over streamable HTTP: an ASGI app (the SDK's session manager) to
    route an endpoint to, served while `running()` is held (the app's lifespan).

    Host names, tokens and body sizes are for the app around it to check, as `agentrt serve`
    does (`agentrt.server`).

    :param name: the server's name, as hosts show it
    :param max_runs: runs in progress at once, over every session; None for no limit
    :raises UserError: two strategies whose tool names would be the same
    """

    def __init__(self, agent: Agent, *, name: str = "agentrt", max_runs: int | None = None) -> None:
        server = mcp_server(agent, name=name, max_runs=max_runs)
        self._manager = StreamableHTTPSessionManager(app=server)
        self._closed = anyio.Event()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve sessions until the block ends or `close()` is called; then every session
        ends, its runs cancelled."""
        async with anyio.create_task_group() as tg:
            await tg.start(self._serve)
            try:
                yield
            finally:
                self.close()

    async def _serve(self, *, task_status: TaskStatus[None]) -> None:
        async with self._manager.run():
            task_status.started()
            await self._closed.wait()

    def close(self) -> None:
        """End every session now, its runs cancelled: a server stopping does not wait for
        clients that keep a stream open (each does, in the 2025 protocol versions)."""
        self._closed.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._closed.is_set():
            response = JSONResponse({"detail": "the server is shutting down"}, status_code=503)
            await response(scope, receive, send)
            return
        await self._manager.handle_request(scope, receive, send)
