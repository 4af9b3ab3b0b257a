"""Internal. The agent: one async generator per run, from the query to `run_finished`.

    run(query) ──► producer task ─────────────────────────────────────────► event feed ──► caller
                   classify → strategy → tools → planner (→ executor)      (in seq order)

The producer runs in its own task and owns every task group of the run; the generator only
reads the feed (`agentrt.run.EventFeed`). So the caller may stop iterating at any point
(`aclose()`, `break`, a cancelled request): the generator's `finally` cancels the producer,
waits until it has cancelled its tools and written `run_finished` to the trajectory, and leaves
nothing behind.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import secrets
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, get_origin

import anyio
from pydantic import JsonValue, ValidationError
from typing_extensions import TypeVar

from agentrt.catalog.builtins import BUILTINS
from agentrt.catalog.index import Retrieval, ToolIndex, narrow
from agentrt.catalog.metadata import Registry
from agentrt.catalog.toolbox import Toolbox
from agentrt.classify import Unclassified, classify
from agentrt.events import (
    AnswerDoubt,
    ApprovalRequestedEvent,
    ClassifiedEvent,
    Decision,
    Event,
    NarrowedTool,
    RunFinishedEvent,
    RunStartedEvent,
    RunStatus,
    StrategySelectedEvent,
    Timings,
    TurnStartedEvent,
)
from agentrt.exceptions import AgentrtError, SessionConflict, TokenLimitReached, UserError
from agentrt.execution import ApprovalPolicy, Executor
from agentrt.logs import get_logger
from agentrt.mcp.client import MCPTools
from agentrt.mcp.config import MCPServer
from agentrt.models.base import Message, Model, ToolDefinition
from agentrt.models.formats import ToolFormat, format_for_name
from agentrt.output import FINAL_RESULT, OutputSpec, structured_output
from agentrt.parsing.answers import JSONProblem
from agentrt.planning import PlannerInput, PlannerResult, Progress, run_planner
from agentrt.result import AgentRun, RunResult
from agentrt.resume import (
    RecordedAnswers,
    RecordedResults,
    ResumingModel,
    ResumingTools,
    Resumption,
    check_resumable,
    read_recording,
)
from agentrt.run import EventFeed, RunContext, TokenLimits
from agentrt.sessions.history import fit_history
from agentrt.sessions.results import frames_of, restored
from agentrt.sessions.store import (
    RunRecord,
    Scope,
    Session,
    SessionStore,
    Turn,
    open_store,
    redact_url,
)
from agentrt.settings import AgentSettings, cache_dir
from agentrt.strategy import PipelineStrategy, Strategy, VmStrategy
from agentrt.tool import Tool, ToolRunner, ToolStorage, run_tool
from agentrt.trajectory.format import TrajectoryHeader
from agentrt.trajectory.writer import TrajectoryWriter, trajectory_path
from agentrt.vectors.embedder import load_embedder
from agentrt.workspace import Workspace

if TYPE_CHECKING:
    from agentrt.otel.instrument import Instrumentation, InstrumentationSettings

__all__ = ["Agent"]

_log = get_logger("agentrt.agent")

DepsT = TypeVar("DepsT", default=None)
OutputT = TypeVar("OutputT", default=str)

_NO_DEPS = type(None)


@dataclass(frozen=True, slots=True)
class _Request:
    query: str
    session_id: str | None
    strategy: str | None
    """Forced, or None to classify."""
    scope: Scope | None
    history: list[Message] | None
    """Given by the caller (`message_history`), or None for the session's."""
    deps: Any
    run_id: str | None = None
    """Given by the caller, or None for a new one."""
    resume: Resumption | None = None
    """The earlier attempt this run carries on (`Agent.resume`)."""
    decisions: Mapping[str, Decision] = field(default_factory=dict)
    """A person's decisions on calls that need approval, by call id."""


# A run id names its trajectory file: no slash and no leading dot (the server's `ID_PATTERN`).
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


@dataclass(slots=True)
class _Outcome:
    """How a run is ending, gathered as it goes: `run_finished` and the result tell it."""

    status: RunStatus = "cancelled"
    answer: str | None = None
    error: str | None = None
    output: Any = None
    """The typed output (or the answer, for `str`)."""
    dumped: JsonValue = None
    """A typed output as JSON, for `run_finished`; None for `str`."""
    history: list[Message] = field(default_factory=list)
    new: list[Message] = field(default_factory=list)
    """This run's messages: the question, tool calls and results, the answer."""
    record: RunRecord | None = None
    """The run as the store has it, when the agent records runs."""
    answer_needs: list[str] = field(default_factory=list)
    """The strategy's `answer_needs`: tools one of whose calls an answer must rest on."""


class Agent(Generic[DepsT, OutputT]):
    """An agent: a model, tools, and what to do with a query.

    Code first, `Agent(model, tools=[fn, ...], instructions="...")` runs one `react` strategy
    over the tools, held in memory. A workspace folder (`workspace=`) brings strategies, a
    classifier choosing among them, tool retrieval and the other planners; tools given in code
    join its own.

    :param model: the model every step of a run calls
    :param workspace: a workspace folder or a loaded `Workspace`; None for none (code first)
    :param tools: functions (made tools with `Tool(fn)`) and `Tool`s
    :param instructions: the system instructions of a code-first agent: a jinja2 template,
        which may use `tools` (a workspace's strategies carry their own)
    :param min_fit: a code-first agent offers its tools only when tool retrieval's fit for the
        query reaches this (0, the default, always offers them; needs the `retrieval` extra);
        below it the model is told no tool fits. A workspace's strategies set their own
        (`min_fit:`); see the README's tool retrieval section for what values mean
    :param output_type: what a run's answer must be: `str`, or any type pydantic validates
        (a model, a dataclass, a TypedDict, a primitive, a union); see `agentrt.output`
    :param deps_type: the type of what runs give their tools (`run(..., deps=...)`), which
        tools read as `ctx.deps` (`ctx: ToolContext[D]`)
    :param output_retries: how often an invalid final answer goes back to the model
    :param settings: timeouts, limits, where trajectories go
    :param tool_runner: what invokes the tools the model calls; the default runs them, a
        replay passes one that answers from a recording
    :param instrument: trace runs as OpenTelemetry GenAI spans (`agentrt.otel`; needs the
        `otel` extra): True for the global tracer provider, or `InstrumentationSettings`
    :param mcp_servers: MCP servers whose tools join the workspace's (beside those its
        `mcp.yaml` declares): started by `async with agent:` (or `await agent.start()`),
        stopped when it ends (`aclose()`)
    :param approval: `approval(tool_name, arguments) -> bool`: True holds the call for a
        person's approval (as `Tool(requires_approval=True)` does for every call of a tool):
        the run ends `needs_approval`, and `resume` carries the decision on
    :raises UserError: a tool or output type that cannot be described to a model, two tools of
        one name, a tool whose `ToolContext[D]` does not fit `deps_type`
    """

    def __init__(
        self,
        model: Model,
        *,
        workspace: str | Path | Workspace | None = None,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        instructions: str | None = None,
        min_fit: float = 0.0,
        output_type: type[OutputT] = str,  # type: ignore[assignment]
        deps_type: type[DepsT] = _NO_DEPS,  # type: ignore[assignment]
        output_retries: int = 1,
        settings: AgentSettings | None = None,
        tool_runner: ToolRunner = run_tool,
        instrument: bool | InstrumentationSettings = False,
        mcp_servers: Sequence[MCPServer] = (),
        approval: ApprovalPolicy | None = None,
    ) -> None:
        self.model = model
        self.approval = approval
        self._instrumentation = _instrumentation(instrument)
        self.settings = settings or AgentSettings()
        self.tool_runner = tool_runner
        self.workspace = _workspace(
            workspace, [_as_tool(t) for t in tools], instructions=instructions, min_fit=min_fit
        )
        self.output = OutputSpec(output_type)
        """The output type, checked: its validator and JSON schema."""
        as_tool = getattr(model, "final_result_tool", False) and not self.output.is_text
        self._final = self.output.final_tool() if as_tool else None
        """What a native tool-calling model ends a typed `react` run with (`agentrt.output`)."""
        self.output_retries = output_retries
        self.deps_type = deps_type
        # Deps are for running tools: a replay answering calls from a recording needs none.
        needing = _tools_needing_deps(self.workspace, deps_type)
        self._needs_deps = needing if tool_runner is run_tool else []
        _check_default_strategy(self.workspace, self.settings.default_strategy)
        self.sessions: SessionStore = open_store(self.settings.session_store or "memory:")
        """Every session's turns and named results, and (when `session_store` is set) every
        run's status: opened on first use, or by `start()`."""
        self._sessions_open = asyncio.Lock()
        self._artifacts: dict[str, dict[str, object]] = {}
        self._prompts: dict[tuple[str, str, tuple[str, ...]], str] = {}
        self._settings_json = _recorded_settings(self.settings)
        self._index: ToolIndex | None = None
        self._index_of: Registry | None = None
        """The registry `_index` was built from."""
        self._index_lock = asyncio.Lock()
        chosen = self.settings.tool_format
        self._tool_format: ToolFormat | None = None if chosen == "auto" else chosen
        """The tool-call format prompts ask for; with `auto`, known from the first run on."""
        # A workspace whose MCP tools are in already (a replay's) has its servers running.
        declared = [] if self.workspace.served_tools else self.workspace.mcp_servers
        self._mcp_servers = [*declared, *mcp_servers]
        self._mcp: MCPTools | None = None
        self._base_workspace = self.workspace

    async def start(self) -> None:
        """Open the agent's session store (runs open it on first use otherwise), start its MCP
        servers and add their tools to its catalog (`async with agent:` does this). Starts no
        server without servers, or when they run already.

        :raises StoreUnavailable: the session store's database cannot be reached
        :raises MCPServerError: a server could not start, or names a tool another tool has
            (the message names the server); none is left running
        """
        await self._open_sessions()
        if self._mcp is not None or not self._mcp_servers:
            return
        mcp = MCPTools(self._mcp_servers, list(self._base_workspace.tools), self._mcp_changed)
        await mcp.start()
        self._mcp = mcp
        self._mcp_changed()

    async def aclose(self) -> None:
        """Stop the agent's MCP servers (no process is left) and close its session store. It
        may be started again."""
        mcp, self._mcp = self._mcp, None
        if mcp is not None:
            self.workspace = self._base_workspace
            await mcp.stop()
        async with self._sessions_open:
            await self.sessions.close()

    def artifacts(self, session_id: str) -> dict[str, object]:
        """What the session's tools keep by name between runs, in this process: the store's
        named results (data frames) as of the session's last run here, and what cannot be
        stored (a connection, an index). A value put here is seen by the session's next run."""
        return self._artifacts.setdefault(session_id, {})

    async def _open_sessions(self) -> SessionStore:
        """The session store, opened the first time (once, however many runs ask at once)."""
        async with self._sessions_open:
            await self.sessions.open()
        return self.sessions

    async def __aenter__(self) -> Agent[DepsT, OutputT]:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _mcp_changed(self) -> None:
        """Put the MCP servers' current tools in the catalog; runs already going keep theirs."""
        assert self._mcp is not None
        try:
            self._mcp.check()
            self.workspace = self._base_workspace.with_served_tools(
                self._mcp.tools, self._mcp.metadata
            )
        except UserError as exc:  # a new tool list that clashes: keep the last good one
            _log.warning("MCP tools not updated", error=str(exc))
            return
        self._prompts.clear()

    def run(
        self,
        query: str,
        *,
        deps: DepsT = None,  # type: ignore[assignment]
        message_history: Sequence[Message] | None = None,
        session_id: str | None = None,
        strategy: str | None = None,
        scope: Sequence[str] | None = None,
        run_id: str | None = None,
        decisions: Mapping[str, Decision] | None = None,
    ) -> AgentRun[OutputT]:
        """Run the agent on `query`: `await` it for the `RunResult`, or iterate it for every
        event, the last `run_finished` (see `AgentRun`).

        :param deps: what the run's tools get as `ctx.deps` (of the agent's `deps_type`)
        :param message_history: the conversation so far (an earlier result's `messages`)
        :param session_id: runs of one session see the session's earlier conversation, and
            the tools its earlier runs created (instead of `message_history`)
        :param strategy: skip classification and use this strategy
        :param scope: restrict retrieval to these contexts (`"context"`) or items
            (`"context/item"`); tools receive it, and the model is told
        :param run_id: the run's id (it names the trajectory file), for a caller that has one
            already (an AG-UI client's `runId`); a new one by default. Keeping ids unique is
            the caller's part
        :param decisions: a person's decisions on calls that need approval, by call id, made
            in advance (a replay of a resumed run passes those it was resumed with); a call
            needing approval without one is held, and the run ends `needs_approval`
        :raises UserError: the query is empty, the strategy unknown, the scope malformed, the
            deps missing or of the wrong type, the run id not one a file can be named by
            (before anything runs)
        """
        request = self._request(query, session_id, strategy, scope, message_history, deps)
        if run_id is not None:
            if not _RUN_ID.fullmatch(run_id):
                msg = (
                    f"run id {run_id!r} cannot name a trajectory file: 1 to 128 letters, digits "
                    "and `._:-`, starting with a letter or digit"
                )
                raise UserError(msg)
            request = replace(request, run_id=run_id)
        if decisions:
            request = replace(request, decisions=dict(decisions))
        return self._agent_run(request)

    def resume(
        self,
        run_id: str,
        decisions: Mapping[str, Decision] | None = None,
        *,
        deps: DepsT = None,  # type: ignore[assignment]
    ) -> AgentRun[OutputT]:
        """Carry on run `run_id` from its trajectory, as `run` does a new one (await it or
        iterate it): a run that ended `needs_approval`, with a decision per held call, or one
        whose process died before `run_finished` (see `agentrt.resume`). Its recorded model
        answers are not asked again and its completed tool calls not run again.

        :param decisions: by call id, `Approve()`, `Approve(arguments={...})` (edited) or
            `Reject(reason)` (the model reads the reason as the call's error)
        :param deps: what the run's tools get as `ctx.deps` (never recorded)
        :raises UserError: no trajectory folder is set, or no run has this id; the run
            finished; it awaits approval and no decision is given; a decision names a call
            that is not pending, or edits its arguments into ones its tool refuses
        """
        path, recording = read_recording(self.settings.trajectory_dir, run_id)
        given = dict(decisions or {})
        kept = check_resumable(run_id, recording, given, self.workspace.tools)
        header = recording.header
        # As a replay does: a strategy the model chose is chosen again from its recorded answer.
        forced = next(
            (
                e.query_type
                for e in recording.events
                if isinstance(e, ClassifiedEvent) and e.method == "forced"
            ),
            None,
        )
        request = self._request(header.query, header.session_id, forced, header.scope, None, deps)
        resumption = Resumption(
            path=path,
            recording=recording,
            decisions=kept,
            answers=RecordedAnswers(recording),
            tools=ResumingTools(RecordedResults(recording, completed_only=True), self.tool_runner),
        )
        request = replace(request, run_id=run_id, resume=resumption, decisions=kept)
        return self._agent_run(request)

    async def prepare(self) -> None:
        """Do now the set-up that the first run needing it would do: build (or load from the
        cache) the tool index, if any strategy retrieves tools. Servers call it at start-up."""
        if any(
            not isinstance(s, PipelineStrategy) and s.retrieve
            for s in self.workspace.strategies.values()
        ):
            await self._tool_index()

    def _request(
        self,
        query: str,
        session_id: str | None,
        strategy: str | None,
        scope: Sequence[str] | None,
        history: Sequence[Message] | None,
        deps: Any,
    ) -> _Request:
        if not query.strip():
            msg = "the query is empty"
            raise UserError(msg)
        if strategy is not None and strategy not in self.workspace.strategies:
            msg = f"no strategy {strategy!r} (known: {', '.join(self.workspace.strategies)})"
            raise UserError(msg)
        if history is not None and session_id is not None:
            msg = "give message_history or session_id, not both: a session keeps its own"
            raise UserError(msg)
        self._check_deps(deps)
        try:
            parsed = Scope.parse(scope) if scope is not None else None
        except ValueError as exc:
            raise UserError(str(exc)) from None
        listed = list(history) if history is not None else None
        return _Request(query, session_id, strategy, parsed, listed, deps)

    def _check_deps(self, deps: Any) -> None:
        if deps is None and self._needs_deps:
            msg = (
                f"tool {self._needs_deps[0]!r} needs deps (its ToolContext[...] says so), and "
                "the run was given none: run(query, deps=...)"
            )
            raise UserError(msg)
        checkable = _plain_class(self.deps_type) and self.deps_type is not _NO_DEPS
        if deps is not None and checkable and not isinstance(deps, self.deps_type):
            msg = (
                f"deps is a {type(deps).__name__}, not the agent's deps_type "
                f"{self.deps_type.__name__}"
            )
            raise UserError(msg)

    def _result(self, ctx: RunContext, outcome: _Outcome, end: RunFinishedEvent) -> RunResult[Any]:
        return RunResult(
            status=end.status,
            answer=end.answer,
            error=end.error,
            doubt=end.doubt,
            messages=[*outcome.history, *outcome.new],
            usage=end.usage,
            path=ctx.writer.path,
            _recorded=functools.partial(ctx.writer.recorded, ctx.header),
            _output=outcome.output,
        )

    def _new_run(self, request: _Request) -> RunContext:
        # From time.gmtime, not an aware datetime: CPython 3.11 keeps some of what an aware
        # datetime's strftime allocates (bounded, ~100 blocks, but it read as a leak per run).
        run_id = request.run_id or (
            time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + secrets.token_hex(4)
        )
        resume = request.resume
        path = None
        if resume is not None:
            path = resume.path  # beside the earlier attempt
        elif self.settings.trajectory_dir is not None:
            path = trajectory_path(self.settings.trajectory_dir, run_id)
        header = self._header(run_id, request.query, request.session_id)
        header.scope = request.scope.ids() if request.scope is not None else None
        limits = TokenLimits(self.settings.token_budget, self.settings.max_turn_tokens)
        model: Model = self.model
        if resume is not None:
            header.resumed_from = resume.previous.name
            model = ResumingModel(self.model, resume.answers, resume.caught_up)
        ctx = RunContext(run_id, model, header, TrajectoryWriter(path), limits)
        if resume is not None:
            resume.ctx = ctx
        if self._instrumentation is not None:
            ctx.observe = self._instrumentation.observer(header, self.model)
        return ctx

    def _executor(self, ctx: RunContext, toolbox: Toolbox, request: _Request) -> Executor:
        """The run's executor, its tools' storage built from the run's session: the session's
        artifacts (the run's own outside a session), and files beside the run's trajectory
        (in the cache when none is kept)."""
        output_dir = (
            ctx.writer.path.with_suffix("")
            if ctx.writer.path is not None
            else (self.settings.cache_dir or cache_dir()) / "outputs" / ctx.run_id
        )
        session_id = request.session_id
        artifacts = self.artifacts(session_id) if session_id else {}
        return Executor(
            ctx,
            toolbox,
            scope=request.scope,
            timeout=self.settings.tool_timeout,
            max_concurrency=self.settings.max_concurrency,
            max_observation_chars=self.settings.max_observation_chars,
            storage=ToolStorage(artifacts, output_dir, request.deps),
            runner=request.resume.tools if request.resume is not None else self.tool_runner,
            approval=self.approval,
            decisions=request.decisions,
        )

    def _agent_run(self, request: _Request) -> AgentRun[Any]:
        ctx = self._new_run(request)
        outcome = _Outcome()
        feed = EventFeed()
        return AgentRun(
            self._events(ctx, feed, request, outcome),
            functools.partial(self._result, ctx, outcome),
            ctx.divert,
            feed,
        )

    async def _events(
        self, ctx: RunContext, feed: EventFeed, request: _Request, outcome: _Outcome
    ) -> AsyncGenerator[Event, None]:
        if self._mcp_servers and self._mcp is None:
            # Checked when the run begins, not when it is made: `agentrt run` makes the run
            # (checking its arguments) before it starts the servers.
            names = ", ".join(s.name for s in self._mcp_servers)
            msg = (
                f"the agent's MCP servers ({names}) are not started: run it inside "
                "`async with agent:` (or after `await agent.start()`)"
            )
            raise UserError(msg)
        cancel = anyio.CancelScope()
        ctx.attach(feed)
        producer = asyncio.get_running_loop().create_task(
            self._produce(ctx, cancel, request, outcome)
        )
        try:
            while (event := await feed.get()) is not None:
                yield event
        finally:
            feed.leave()
            if not producer.done():  # the reader left early
                # Not when the run has ended: anyio's `cancel` writes the calling task's repr
                # into its reason, and with the shielded wait that was 23 µs of a one-turn
                # run's ~225 (measured).
                cancel.cancel()
                with anyio.CancelScope(shield=True):
                    await asyncio.wait({producer})
            if not producer.cancelled() and producer.exception() is not None:
                ctx.log.error("run failed after finishing", exc_info=producer.exception())

    async def _produce(
        self, ctx: RunContext, cancel: anyio.CancelScope, request: _Request, outcome: _Outcome
    ) -> None:
        progress = Progress()
        if request.history is not None:
            outcome.history = request.history
        try:
            with cancel:
                try:
                    session = await self._begin(ctx, request, outcome)
                    # What the run read: its tools may add session tools as it goes.
                    read = (session.version, set(session.tools)) if session is not None else None
                    await self._produce_answer(ctx, request, session, progress, outcome)
                    if session is not None and read is not None:
                        # Shielded: an answer given is stored whole (or the run fails), even
                        # when its reader leaves now: never `ok` with its turn rolled back.
                        with anyio.CancelScope(shield=True):
                            await self._keep(ctx, session, read, outcome)
                except Exception as exc:
                    outcome.status, outcome.error = "error", f"{type(exc).__name__}: {exc}"
                    if not isinstance(exc, AgentrtError):  # ours explain themselves; log bugs
                        ctx.log.exception("run failed")
        finally:
            if outcome.status == "cancelled":
                outcome.error = "the run was cancelled"
            if request.resume is not None:
                request.resume.caught_up()  # a resume that never reached the live model
            await self._record_end(ctx, outcome)
            try:
                ctx.emit(
                    RunFinishedEvent,
                    status=outcome.status,
                    answer=outcome.answer,
                    output=outcome.dumped,
                    error=outcome.error,
                    doubt=self._doubt(ctx, outcome),
                    steps=progress.steps,
                    usage=ctx.usage,
                    timings=Timings(
                        total=round(ctx.elapsed(), 6),
                        model=round(ctx.model_time, 6),
                        tools=round(ctx.tool_time, 6),
                    ),
                )
            finally:
                ctx.close()  # a reader must never wait forever

    def _doubt(self, ctx: RunContext, outcome: _Outcome) -> AnswerDoubt | None:
        """Why the answer of a run ending `ok` is not taken for one (`agentrt.doubt`)."""
        if outcome.status != "ok" or outcome.answer is None:
            return None
        tools = self.workspace.tools
        ending = {
            name
            for name, _ in ctx.calls.outcomes
            if (tool := tools.get(name)) is not None and (tool.ends_run or tool.asks_user)
        }
        answer = outcome.answer if self.output.is_text else None
        return ctx.calls.doubt(answer, ending=ending, needed=outcome.answer_needs)

    async def _begin(self, ctx: RunContext, request: _Request, outcome: _Outcome) -> Session | None:
        """Record the run as `running` (when runs are recorded), and read its session: its
        history, its tools, its named results (into `artifacts`)."""
        if self.settings.session_store is None and request.session_id is None:
            return None
        store = await self._open_sessions()
        if self.settings.session_store is not None:
            outcome.record = RunRecord(
                run_id=ctx.run_id,
                session_id=request.session_id,
                query=request.query,
                trajectory=str(ctx.writer.path) if ctx.writer.path is not None else None,
            )
            await store.put_run(outcome.record)
        if request.session_id is None:
            return None
        session = await store.load(request.session_id)
        self.artifacts(session.id).update(restored(session.results))
        if request.history is None:
            outcome.history = list(session.messages)
        return session

    async def _keep(
        self, ctx: RunContext, session: Session, read: tuple[int, set[str]], outcome: _Outcome
    ) -> None:
        """Append the run's turn to its session (its messages, the session tools it made)
        and keep its named results. A question asked (`needs_input`) joins the history too:
        the reply is the session's next query, read against it. Another writer's turn
        appended since the session was read goes first: this one follows it, its
        `base_version` telling what it read."""
        store = self.sessions
        base, tools_read = read
        if outcome.status in ("ok", "needs_input") and outcome.answer is not None:
            made = {n: t for n, t in session.tools.items() if n not in tools_read}
            turn = Turn(run_id=ctx.run_id, messages=outcome.new, tools=made, base_version=base)
            version = base
            while True:  # each conflict is another writer's progress: this ends
                try:
                    await store.append(session.id, turn, version)
                    break
                except SessionConflict as exc:
                    ctx.log.warning(
                        "session turn follows another writer's",
                        session_id=session.id,
                        base_version=base,
                        version=exc.actual,
                    )
                    version = exc.actual
        frames = frames_of(self.artifacts(session.id))
        if frames:
            await store.put_results(session.id, frames)

    async def _record_end(self, ctx: RunContext, outcome: _Outcome) -> None:
        """Record the run's final status. Shielded: a run cancelled still records its end. A
        store that fails here fails the run (unless it failed already)."""
        if outcome.record is None:
            return
        record = outcome.record.model_copy(
            update={"status": outcome.status, "updated": datetime.now(UTC)}
        )
        with anyio.CancelScope(shield=True):
            try:
                await self.sessions.put_run(record)
            except Exception as exc:
                ctx.log.exception("run's end not recorded")
                if outcome.status != "error":
                    outcome.status, outcome.error = "error", f"{type(exc).__name__}: {exc}"

    async def _produce_answer(
        self,
        ctx: RunContext,
        request: _Request,
        session: Session | None,
        progress: Progress,
        outcome: _Outcome,
    ) -> None:
        """Classify, plan and answer; then make the answer the output type."""
        if request.resume is not None:
            request.resume.set_aside()
        tool_format = await self._resolve_tool_format()
        if self._mcp is not None:
            await self._mcp.settled()
        ctx.header = ctx.header.model_copy(
            update={
                "tool_format": tool_format,
                "mcp_servers": self.workspace.served,
            }
        )
        ctx.emit(
            RunStartedEvent,
            started_at=ctx.header.created,
            query=request.query,
            session_id=request.session_id,
            model=self.model.name,
            tool_format=tool_format,
        )
        strategy, suggested = await self._choose_strategy(ctx, request.query, request.strategy)
        if not isinstance(strategy, PipelineStrategy):
            outcome.answer_needs = strategy.answer_needs
        history = fit_history(outcome.history, self.settings.history_tokens)
        result = await self._plan(ctx, strategy, request, session, history, suggested, progress)
        outcome.status, outcome.answer, outcome.error = result.status, result.answer, result.error
        outcome.new = _conversation(request.query, result)
        outcome.output = outcome.answer
        if outcome.status != "ok" or self.output.is_text or outcome.answer is None:
            return
        try:
            value = self.output.parse(outcome.answer)
        except (JSONProblem, ValidationError):
            progress.steps += 1
            ctx.emit(TurnStartedEvent, step=progress.steps)
            try:
                value = await structured_output(
                    ctx,
                    self.output,
                    [*history, *outcome.new],
                    step=progress.steps,
                    retries=self.output_retries,
                )
            except TokenLimitReached as exc:  # recorded already, as in a planner's turn
                outcome.status, outcome.error = "budget_exhausted", str(exc)
                return
        outcome.output, outcome.dumped = value, self.output.dump(value)
        dumped = outcome.dumped
        outcome.answer = (
            dumped if isinstance(dumped, str) else json.dumps(dumped, ensure_ascii=False)
        )
        outcome.new[-1] = Message(role="assistant", content=outcome.answer)

    async def _resolve_tool_format(self) -> ToolFormat:
        """`settings.tool_format`, with `auto` made the model's family's format: the backend's
        own answer (`detect_tool_format`, the embedded model's chat template), else its name's."""
        if self._tool_format is None:
            detect = getattr(self.model, "detect_tool_format", None)
            try:
                found: ToolFormat = await detect() if detect else format_for_name(self.model.name)
            except (AgentrtError, OSError):
                # A model that cannot load fails the run at its first call, with its own error;
                # until then its name is as good a guess as any.
                found = format_for_name(self.model.name)
            self._tool_format = found
        return self._tool_format

    async def _choose_strategy(
        self, ctx: RunContext, query: str, forced: str | None
    ) -> tuple[Strategy, list[str]]:
        """The strategy for `query`, and the contexts the classifier suggests searching first."""
        strategies = self.workspace.strategies
        if forced is not None:
            ctx.emit(ClassifiedEvent, query_type=forced, method="forced")
            return strategies[forced], []
        if len(strategies) == 1:  # nothing to choose: no model call
            (only,) = strategies.values()
            ctx.emit(ClassifiedEvent, query_type=only.name, method="only")
            return only, []
        c = await classify(ctx, self.workspace, query)
        if isinstance(c, Unclassified):
            fallback = self.settings.default_strategy
            ctx.log.warning("classification failed", reason=c.reason)
            ctx.emit(ClassifiedEvent, query_type=fallback, method="fallback", reason=c.reason)
            return strategies[fallback], []
        ctx.emit(
            ClassifiedEvent,
            query_type=c.query_type,
            language=c.language,
            suggested_contexts=c.suggested_contexts,
            method="model",
        )
        return strategies[c.query_type], c.suggested_contexts

    async def _plan(
        self,
        ctx: RunContext,
        strategy: Strategy,
        request: _Request,
        session: Session | None,
        history: list[Message],
        suggested: list[str],
        progress: Progress,
    ) -> PlannerResult:
        offered, found, no_fit = await self._narrow(strategy, request.query, history)
        tools: Mapping[str, Tool] = self.workspace.tools
        if self._final is not None and strategy.planner == "react":
            tools = {**tools, FINAL_RESULT: self._final}
            offered = [
                NarrowedTool(name=FINAL_RESULT, source="builtin") if t.name == "finish" else t
                for t in offered
            ]
        ctx.header = ctx.header.model_copy(
            update={
                "strategy": strategy.name,
                "tools": {t.name: tools[t.name].schema_hash for t in offered},
            }
        )
        ctx.durable = True  # the header is complete: the file may start
        ctx.emit(
            StrategySelectedEvent,
            strategy=strategy.name,
            planner=strategy.planner,
            step_budget=strategy.step_budget,
        )
        toolbox = Toolbox(ctx, tools, offered, session, fit=found.fit, no_fit=no_fit)
        executor = self._executor(ctx, toolbox, request)
        task = PlannerInput(
            ctx=ctx,
            executor=executor,
            tools=toolbox,
            prompt=functools.partial(self._prompt, strategy),
            notes=self._notes(request.scope, no_fit, suggested),
            query=request.query,
            history=history,
            step_budget=strategy.step_budget,
            settings=self.settings,
            progress=progress,
        )
        try:
            result = await run_planner(task, strategy, self.workspace, self._retrieve)
        finally:
            executor.close()
        if executor.pending:
            ctx.emit(ApprovalRequestedEvent, calls=executor.pending)
            result.status, result.answer = "needs_approval", None
        return result

    def _notes(self, scope: Scope | None, no_fit: bool, suggested: list[str]) -> list[str]:
        """What the planner is told besides its prompt: the run's scope, that no tool fits,
        the contexts the classifier suggests."""
        notes = [] if scope is None else [self.workspace.render("scope.j2", scope=scope)]
        if no_fit:
            notes.append(self.workspace.render("no_tool_fits.j2"))
        if suggested:
            # A priority, not a filter: the classifier sees only the question.
            notes.append(self.workspace.render("suggested_contexts.j2", contexts=suggested))
        return notes

    async def _narrow(
        self, strategy: Strategy, query: str, history: Sequence[Message]
    ) -> tuple[list[NarrowedTool], Retrieval, bool]:
        """The tools a run of `strategy` offers for `query` (see `agentrt.catalog.index.narrow`),
        what retrieval found, and whether no tool fits (then only the tools the strategy lists
        by name are offered, see `ReactStrategy.min_fit`). A tool on request (`on_request`) is
        offered when the query or an earlier user message of `history` asks for it: a reply to
        `ask_user` ("Alice") goes on with the question it answers."""
        template = (
            [n for n in self.workspace.tools if n not in BUILTINS]
            if strategy.tools == "all"
            else [
                *strategy.tools,
                *(n for n in self.workspace.code_tools if n not in strategy.tools),
            ]
        )
        found, no_fit = Retrieval(), False
        if isinstance(strategy, PipelineStrategy):
            # The pipeline narrows per requirement itself; the run offers its template.
            offered = narrow(template=template, retrieved=[], safety=[], cap=len(template))
        else:
            if strategy.retrieve or strategy.min_fit:
                # One tool is enough for the fit when the strategy adds none (`retrieve: 0`).
                found = await self._retrieve([query], max(strategy.retrieve, 1))
                no_fit = found.fit is not None and found.fit < strategy.min_fit
            if no_fit:
                # Only what the strategy names goes: not `all`, not the tools given in code.
                template = [] if strategy.tools == "all" else strategy.tools
            offered = narrow(
                template=template,
                retrieved=[] if no_fit else found.tools[: strategy.retrieve],
                safety=strategy.safety,
                cap=strategy.max_tools,
                duplicates=found.duplicates,
            )
        # Beside a strategy's own tool that ends the run (`finish_retrieval`), the built-in one
        # (`finish`) is a way to end it without what that tool asks for (cited chunks): offer
        # it only when listed.
        tools = self.workspace.tools
        ends_own_way = any(tools[n].ends_run for n in template if n not in BUILTINS)
        builtin = [n for n in BUILTINS if tools[n].ends_run and (n in template or not ends_own_way)]
        if isinstance(strategy, VmStrategy):
            builtin += strategy.vm.builtins
        unasked: set[str] = set()
        if not isinstance(strategy, PipelineStrategy) and strategy.on_request:
            said = " ".join([*(m.content for m in history if m.role == "user"), query])
            unasked = strategy.unasked(said)
        offered = [t for t in offered if t.name not in builtin and t.name not in unasked]
        return [*(NarrowedTool(name=n, source="builtin") for n in builtin), *offered], found, no_fit

    async def _retrieve(self, queries: list[str], k: int) -> Retrieval:
        index = await self._tool_index()
        return await index.query(queries, k)

    async def _tool_index(self) -> ToolIndex:
        async with self._index_lock:
            # MCP servers' tools change the registry (`_mcp_changed`): index the current one.
            if self._index is None or self._index_of is not self.workspace.registry:
                self._index_of = self.workspace.registry
                embedder = await anyio.to_thread.run_sync(
                    load_embedder, self.settings.embedding_model
                )
                self._index = await ToolIndex.abuild(
                    self.workspace.registry, embedder, self.settings.cache_dir or cache_dir()
                )
        return self._index

    def _prompt(
        self, strategy: Strategy, template: str, tools: list[ToolDefinition], **variables: Any
    ) -> str:
        """A planner's prompt: `template` rendered with the strategy's instructions and the
        tools. Those without per-run variables (system prompts) are rendered once."""
        key = (strategy.name, template, tuple(t.name for t in tools))
        prompt = None if variables else self._prompts.get(key)
        if prompt is None:
            instructions = self.workspace.render(strategy.instructions, tools=tools)
            prompt = self.workspace.render(
                template,
                instructions=instructions,
                tools=tools,
                native_tools=self.model.native_tools,
                calls_in_text=getattr(self.model, "calls_in_text", False),
                tool_format=self._tool_format or "hermes",
                **variables,
            )
            if not variables:
                self._prompts[key] = prompt
        return prompt

    def _header(self, run_id: str, query: str, session_id: str | None) -> TrajectoryHeader:
        return TrajectoryHeader(
            run_id=run_id,
            created=datetime.now(UTC),
            query=query,
            session_id=session_id,
            model=self.model.name,
            workspace=str(self.workspace.root) if self.workspace.root is not None else None,
            workspace_fingerprint=self.workspace.fingerprint,
            settings=self._settings_json,
            deps_type=None if self.deps_type is _NO_DEPS else _type_name(self.deps_type),
            output_type=None if self.output.is_text else self.output.name,
        )


def _recorded_settings(settings: AgentSettings) -> dict[str, Any]:
    """The settings as a trajectory header records them: the store's URL without its password
    (anyone who reads trajectories reads the header)."""
    recorded = settings.model_dump(mode="json")
    if settings.session_store is not None:
        recorded["session_store"] = redact_url(str(settings.session_store))
    return recorded


def _plain_class(t: Any) -> bool:
    """Whether `isinstance` can check against `t` (a class, not `list[int]` or a union)."""
    return isinstance(t, type) and get_origin(t) is None


def _type_name(t: Any) -> str:
    return f"{t.__module__}.{t.__qualname__}" if isinstance(t, type) else repr(t)


def _as_tool(t: Tool | Callable[..., Any]) -> Tool:
    return t if isinstance(t, Tool) else Tool(t)


def _instrumentation(instrument: bool | InstrumentationSettings) -> Instrumentation | None:
    """The agent's tracing, or None: OpenTelemetry is imported only when it is switched on."""
    if instrument is False:
        return None
    try:
        from agentrt.otel.instrument import Instrumentation, InstrumentationSettings
    except ImportError as exc:
        msg = f"instrument= needs the otel extra: pip install 'agentrt[otel]' ({exc})"
        raise UserError(msg) from None
    if instrument is True:
        instrument = InstrumentationSettings()
    if not isinstance(instrument, InstrumentationSettings):
        msg = f"instrument= takes True, False or InstrumentationSettings, not {instrument!r}"
        raise UserError(msg)
    return Instrumentation(instrument)


def _workspace(
    workspace: str | Path | Workspace | None,
    tools: list[Tool],
    *,
    instructions: str | None,
    min_fit: float,
) -> Workspace:
    """The agent's workspace: in memory (code first), or a folder with `tools` added."""
    if workspace is None:
        return Workspace.from_code(tools, instructions, min_fit=min_fit)
    code_first = {"instructions=": instructions is not None, "min_fit=": min_fit != 0.0}
    for given in (name for name, is_set in code_first.items() if is_set):
        msg = (
            f"{given} is for an agent without a workspace: a workspace's strategies "
            f"carry their own (`{given[:-1]}:` in each strategy file)"
        )
        raise UserError(msg)
    if isinstance(workspace, Workspace):
        return workspace.with_tools(tools) if tools else workspace
    return Workspace(workspace, tools=tools)


def _check_default_strategy(workspace: Workspace, name: str) -> None:
    """:raises UserError: `name` is not a strategy of a workspace that has several"""
    strategies = workspace.strategies
    if len(strategies) > 1 and name not in strategies:
        msg = (
            f"default_strategy {name!r} is not a strategy of {workspace.root} "
            f"(it has: {', '.join(strategies)})"
        )
        raise UserError(msg)


def _tools_needing_deps(workspace: Workspace, deps_type: Any) -> list[str]:
    """The tools that read `ctx.deps`, after checking each wants what `deps_type` gives.

    :raises UserError: a tool's `ToolContext[D]` names a `D` that `deps_type` is not
    """
    needing = []
    for tool in workspace.tools.values():
        wanted = tool.deps_type
        if wanted is None:
            continue
        needing.append(tool.name)
        comparable = _plain_class(wanted) and _plain_class(deps_type)
        if comparable and not issubclass(deps_type, wanted):
            msg = (
                f"tool {tool.name!r} reads deps of type {wanted.__name__} (its "
                f"ToolContext[{wanted.__name__}]), but the agent's deps_type is "
                f"{deps_type.__name__}"
            )
            raise UserError(msg)
    return needing


def _conversation(query: str, result: PlannerResult) -> list[Message]:
    """This run's messages: the planner's conversation from the question on (or just the
    question), ending with the answer as an assistant message."""
    messages = list(result.messages) if result.messages else [Message(role="user", content=query)]
    last = messages[-1]
    if result.answer is not None and not (
        last.role == "assistant" and last.content == result.answer
    ):
        messages.append(Message(role="assistant", content=result.answer))
    return messages
