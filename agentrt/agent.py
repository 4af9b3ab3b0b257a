"""Internal. The agent: one async generator per run, from the query to `run_finished`.

    run(query) ──► producer task ─────────────────────────────────────────► memory stream ──► caller
                   classify → strategy → tools → planner (→ executor)      (events, in seq order)

The producer runs in its own task and owns every task group of the run; the generator only
reads the stream. So the caller may stop iterating at any point (`aclose()`, `break`, a
cancelled request): the generator's `finally` cancels the producer, waits until it has
cancelled its tools and written `run_finished` to the trajectory, and leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import functools
import math
import secrets
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from agentrt.catalog.builtins import BUILTINS
from agentrt.catalog.index import ToolIndex, narrow
from agentrt.catalog.toolbox import Toolbox
from agentrt.classify import Unclassified, classify
from agentrt.events import (
    ClassifiedEvent,
    Event,
    NarrowedTool,
    RunFinishedEvent,
    RunStartedEvent,
    RunStatus,
    StrategySelectedEvent,
    Timings,
)
from agentrt.exceptions import AgentrtError, UserError
from agentrt.execution import Executor
from agentrt.models.base import Message, Model, ToolDefinition
from agentrt.planning import PlannerInput, PlannerResult, Progress, run_planner
from agentrt.run import RunContext, TokenLimits
from agentrt.sessions.history import fit_history
from agentrt.sessions.sqlite import SqliteSessionStore
from agentrt.sessions.store import Scope, Session, SessionStore
from agentrt.settings import AgentSettings, cache_dir
from agentrt.strategy import PipelineStrategy, Strategy, VmStrategy
from agentrt.tool import ToolRunner, ToolStorage, run_tool
from agentrt.trajectory.format import Trajectory, TrajectoryHeader
from agentrt.trajectory.writer import TrajectoryWriter, trajectory_path
from agentrt.vectors.embedder import load_embedder
from agentrt.workspace import Workspace

__all__ = ["Agent", "RunResult"]


@dataclass(frozen=True, slots=True)
class RunResult:
    """What `Agent.run_to_completion` returns."""

    answer: str | None
    status: RunStatus
    trajectory: Trajectory
    path: Path | None
    """The trajectory file, when trajectories are recorded."""


@dataclass(frozen=True, slots=True)
class _Request:
    query: str
    session_id: str | None
    strategy: str | None
    """Forced, or None to classify."""
    scope: Scope | None


class Agent:
    """An agent over a workspace and a model.

    :param workspace: a workspace folder or a loaded `Workspace`; None takes the default one
    :param model: the model every step of a run calls
    :param settings: timeouts, limits, where trajectories go
    :param tool_runner: what invokes the tools the model calls; the default runs them, a
        replay passes one that answers from a recording
    """

    def __init__(
        self,
        workspace: str | Path | Workspace | None = None,
        *,
        model: Model,
        settings: AgentSettings | None = None,
        tool_runner: ToolRunner = run_tool,
    ) -> None:
        self.workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
        self.model = model
        self.settings = settings or AgentSettings()
        self.tool_runner = tool_runner
        if self.settings.default_strategy not in self.workspace.strategies:
            msg = (
                f"default_strategy {self.settings.default_strategy!r} is not a strategy of "
                f"{self.workspace.root} (it has: {', '.join(self.workspace.strategies)})"
            )
            raise UserError(msg)
        self.sessions = (
            SessionStore()
            if self.settings.session_store is None
            else SqliteSessionStore(self.settings.session_store)
        )
        """Every session's conversation, tools and named results."""
        self._prompts: dict[tuple[str, str, tuple[str, ...]], str] = {}
        self._settings_json = self.settings.model_dump(mode="json")
        self._index: ToolIndex | None = None
        self._index_lock = asyncio.Lock()

    def run(
        self,
        query: str,
        *,
        session_id: str | None = None,
        strategy: str | None = None,
        scope: Sequence[str] | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Run the agent on `query`: an async generator of every event, the last `run_finished`.

        Stop early with `aclose()` (or `contextlib.aclosing`): the run is cancelled, its tools
        too, and its trajectory still ends with `run_finished`.

        :param session_id: runs of one session see the session's earlier questions and answers,
            and the tools its earlier runs created
        :param strategy: skip classification and use this strategy
        :param scope: restrict retrieval to these contexts (`"context"`) or items
            (`"context/item"`); tools receive it, and the model is told
        :raises UserError: the query is empty, the strategy unknown or the scope malformed
            (before anything runs)
        """
        request = self._request(query, session_id, strategy, scope)
        return self._events(self._new_run(request), request)

    async def run_to_completion(
        self,
        query: str,
        *,
        session_id: str | None = None,
        strategy: str | None = None,
        scope: Sequence[str] | None = None,
    ) -> RunResult:
        """Run the agent on `query` and return the answer with the whole trajectory."""
        request = self._request(query, session_id, strategy, scope)
        ctx = self._new_run(request)
        events = [e async for e in self._events(ctx, request)]
        end = events[-1]
        assert isinstance(end, RunFinishedEvent)
        return RunResult(
            answer=end.answer,
            status=end.status,
            trajectory=Trajectory(header=ctx.header, events=events),
            path=ctx.writer.path if ctx.writer is not None else None,
        )

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
    ) -> _Request:
        if not query.strip():
            msg = "the query is empty"
            raise UserError(msg)
        if strategy is not None and strategy not in self.workspace.strategies:
            msg = f"no strategy {strategy!r} (known: {', '.join(self.workspace.strategies)})"
            raise UserError(msg)
        try:
            parsed = Scope.parse(scope) if scope is not None else None
        except ValueError as exc:
            raise UserError(str(exc)) from None
        return _Request(query, session_id, strategy, parsed)

    def _new_run(self, request: _Request) -> RunContext:
        run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)
        writer = None
        if self.settings.trajectory_dir is not None:
            writer = TrajectoryWriter(trajectory_path(self.settings.trajectory_dir, run_id))
        header = self._header(run_id, request.query, request.session_id)
        limits = TokenLimits(self.settings.token_budget, self.settings.max_turn_tokens)
        return RunContext(run_id, self.model, header, writer, limits)

    def _executor(self, ctx: RunContext, toolbox: Toolbox, request: _Request) -> Executor:
        """The run's executor, its tools' storage built from the run's session: the session's
        artifacts (the run's own outside a session), and files beside the run's trajectory
        (in the cache when none is kept)."""
        output_dir = (
            ctx.writer.path.with_suffix("")
            if ctx.writer is not None
            else (self.settings.cache_dir or cache_dir()) / "outputs" / ctx.run_id
        )
        session_id = request.session_id
        artifacts = self.sessions.artifacts(session_id) if session_id else {}
        return Executor(
            ctx,
            toolbox,
            scope=request.scope,
            timeout=self.settings.tool_timeout,
            max_concurrency=self.settings.max_concurrency,
            max_observation_chars=self.settings.max_observation_chars,
            storage=ToolStorage(artifacts, output_dir),
            runner=self.tool_runner,
        )

    async def _events(self, ctx: RunContext, request: _Request) -> AsyncGenerator[Event, None]:
        send, receive = anyio.create_memory_object_stream[Event](math.inf)
        cancel = anyio.CancelScope()
        ctx.attach(send)
        producer = asyncio.get_running_loop().create_task(self._produce(ctx, cancel, request))
        try:
            with receive:
                while True:
                    try:
                        # Take what is ready without a trip through the event loop.
                        event = receive.receive_nowait()
                    except anyio.WouldBlock:
                        try:
                            event = await receive.receive()
                        except anyio.EndOfStream:
                            return
                    except anyio.EndOfStream:
                        return
                    yield event
        finally:
            cancel.cancel()
            with anyio.CancelScope(shield=True):
                await asyncio.wait({producer})
            if not producer.cancelled() and producer.exception() is not None:
                ctx.log.error("run failed after finishing", exc_info=producer.exception())

    async def _produce(self, ctx: RunContext, cancel: anyio.CancelScope, request: _Request) -> None:
        status: RunStatus = "cancelled"
        answer: str | None = None
        error: str | None = None
        progress = Progress()
        session = self.sessions.get(request.session_id) if request.session_id else None
        try:
            with cancel:
                try:
                    ctx.emit(
                        RunStartedEvent,
                        started_at=ctx.header.created,
                        query=request.query,
                        session_id=request.session_id,
                        model=self.model.name,
                    )
                    strategy, suggested = await self._choose_strategy(
                        ctx, request.query, request.strategy
                    )
                    result = await self._plan(ctx, strategy, request, session, suggested, progress)
                    status, answer, error = result.status, result.answer, result.error
                except Exception as exc:
                    status, error = "error", f"{type(exc).__name__}: {exc}"
                    if not isinstance(exc, AgentrtError):  # ours explain themselves; log bugs
                        ctx.log.exception("run failed")
        finally:
            if status == "cancelled":
                error = "the run was cancelled"
            ctx.emit(
                RunFinishedEvent,
                status=status,
                answer=answer,
                error=error,
                steps=progress.steps,
                usage=ctx.usage,
                timings=Timings(
                    total=round(ctx.elapsed(), 6),
                    model=round(ctx.model_time, 6),
                    tools=round(ctx.tool_time, 6),
                ),
            )
            ctx.close()
        if session is not None:
            # A question asked (`needs_input`) joins the history too: the reply is the
            # session's next query, read against it.
            if status in ("ok", "needs_input") and answer is not None:
                session.messages += [
                    Message(role="user", content=request.query),
                    Message(role="assistant", content=answer),
                ]
            self.sessions.put(session)

    async def _choose_strategy(
        self, ctx: RunContext, query: str, forced: str | None
    ) -> tuple[Strategy, list[str]]:
        """The strategy for `query`, and the contexts the classifier suggests searching first."""
        strategies = self.workspace.strategies
        if forced is not None:
            ctx.emit(ClassifiedEvent, query_type=forced, method="forced")
            return strategies[forced], []
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
        suggested: list[str],
        progress: Progress,
    ) -> PlannerResult:
        offered = await self._narrow(strategy, request.query)
        tools = self.workspace.tools
        ctx.header = ctx.header.model_copy(
            update={
                "strategy": strategy.name,
                "tools": {t.name: tools[t.name].schema_hash for t in offered},
            }
        )
        ctx.emit(
            StrategySelectedEvent,
            strategy=strategy.name,
            planner=strategy.planner,
            step_budget=strategy.step_budget,
        )
        toolbox = Toolbox(ctx, tools, offered, session)
        executor = self._executor(ctx, toolbox, request)
        notes = (
            []
            if request.scope is None
            else [self.workspace.render("scope.j2", scope=request.scope)]
        )
        if suggested:
            # A priority, not a filter: the classifier sees only the question.
            notes.append(self.workspace.render("suggested_contexts.j2", contexts=suggested))
        task = PlannerInput(
            ctx=ctx,
            executor=executor,
            tools=toolbox,
            prompt=functools.partial(self._prompt, strategy),
            notes=notes,
            query=request.query,
            history=(
                fit_history(session.messages, self.settings.history_tokens)
                if session is not None
                else []
            ),
            step_budget=strategy.step_budget,
            settings=self.settings,
            progress=progress,
        )
        return await run_planner(task, strategy, self.workspace, self._retrieve)

    async def _narrow(self, strategy: Strategy, query: str) -> list[NarrowedTool]:
        """The tools a run of `strategy` offers for `query` (see `agentrt.catalog.index.narrow`)."""
        template = (
            [n for n in self.workspace.tools if n not in BUILTINS]
            if strategy.tools == "all"
            else strategy.tools
        )
        if isinstance(strategy, PipelineStrategy):
            # The pipeline narrows per requirement itself; the run offers its template.
            offered = narrow(template=template, retrieved=[], safety=[], cap=len(template))
        else:
            retrieved = (
                await self._retrieve([query], strategy.retrieve) if strategy.retrieve else []
            )
            offered = narrow(
                template=template,
                retrieved=retrieved,
                safety=strategy.safety,
                cap=strategy.max_tools,
            )
        # Beside a strategy's own tool that ends the run (`finish_retrieval`), the built-in one
        # (`finish`) is a way to end it without what that tool asks for (cited chunks): offer
        # it only when listed.
        tools = self.workspace.tools
        ends_own_way = any(tools[n].ends_run for n in template if n not in BUILTINS)
        builtin = [n for n in BUILTINS if tools[n].ends_run and (n in template or not ends_own_way)]
        if isinstance(strategy, VmStrategy):
            builtin += strategy.vm.builtins
        offered = [t for t in offered if t.name not in builtin]
        return [*(NarrowedTool(name=n, source="builtin") for n in builtin), *offered]

    async def _retrieve(self, queries: list[str], k: int) -> list[tuple[str, float]]:
        index = await self._tool_index()
        return await index.query(queries, k)

    async def _tool_index(self) -> ToolIndex:
        async with self._index_lock:
            if self._index is None:
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
            workspace=str(self.workspace.root),
            workspace_fingerprint=self.workspace.fingerprint,
            settings=self._settings_json,
        )
