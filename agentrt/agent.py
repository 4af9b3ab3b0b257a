"""The agent: one async generator per run, from the query to `run_finished`.

    run(query) ──► producer task ─────────────────────────────────────────► memory stream ──► caller
                   classify → strategy → tools → planner (→ executor)      (events, in seq order)

The producer runs in its own task and owns every task group of the run; the generator only
reads the stream. So the caller may stop iterating at any point (`aclose()`, `break`, a
cancelled request): the generator's `finally` cancels the producer, waits until it has
cancelled its tools and written `run_finished` to the trajectory, and leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import math
import secrets
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import anyio

from agentrt.catalog import ToolCatalog
from agentrt.classify import ClassificationFailed, classify
from agentrt.context import RunContext
from agentrt.events import (
    ClassifiedEvent,
    Event,
    NarrowedTool,
    RunFinishedEvent,
    RunStartedEvent,
    RunStatus,
    StrategySelectedEvent,
    Timings,
    ToolsNarrowedEvent,
)
from agentrt.exceptions import ModelError, UserError
from agentrt.execution import Executor
from agentrt.models.base import Message, Model
from agentrt.planning import PLANNERS, PlannerInput
from agentrt.settings import AgentSettings
from agentrt.strategy import Strategy
from agentrt.tool import finish_tool
from agentrt.trajectory import Trajectory, TrajectoryHeader, TrajectoryWriter, trajectory_path
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
class _Setup:
    tools: ToolCatalog
    narrowed: list[NarrowedTool]
    system_prompt: str
    tool_hashes: dict[str, str]


class Agent:
    """An agent over a workspace and a model.

    :param workspace: a workspace folder or a loaded `Workspace`; None takes the default one
    :param model: the model every step of a run calls
    :param settings: timeouts, limits, where trajectories go
    """

    def __init__(
        self,
        workspace: str | Path | Workspace | None = None,
        *,
        model: Model,
        settings: AgentSettings | None = None,
    ) -> None:
        self.workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
        self.model = model
        self.settings = settings or AgentSettings()
        if self.settings.default_strategy not in self.workspace.strategies:
            msg = (
                f"default_strategy {self.settings.default_strategy!r} is not a strategy of "
                f"{self.workspace.root} (it has: {', '.join(self.workspace.strategies)})"
            )
            raise UserError(msg)
        self._sessions: dict[str, list[Message]] = {}
        self._setups: dict[str, _Setup] = {}
        self._settings_json = self.settings.model_dump(mode="json")

    def run(
        self,
        query: str,
        *,
        session_id: str | None = None,
        strategy: str | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Run the agent on `query`: an async generator of every event, the last `run_finished`.

        Stop early with `aclose()` (or `contextlib.aclosing`): the run is cancelled, its tools
        too, and its trajectory still ends with `run_finished`.

        :param session_id: runs of one session see the session's earlier questions and answers
        :param strategy: skip classification and use this strategy
        :raises UserError: the query is empty or the strategy unknown (before anything runs)
        """
        ctx = self._new_run(query, session_id, strategy)
        return self._events(ctx, query, session_id, strategy)

    async def run_to_completion(
        self,
        query: str,
        *,
        session_id: str | None = None,
        strategy: str | None = None,
    ) -> RunResult:
        """Run the agent on `query` and return the answer with the whole trajectory."""
        ctx = self._new_run(query, session_id, strategy)
        events = [e async for e in self._events(ctx, query, session_id, strategy)]
        end = events[-1]
        assert isinstance(end, RunFinishedEvent)
        return RunResult(
            answer=end.answer,
            status=end.status,
            trajectory=Trajectory(header=ctx.header, events=events),
            path=ctx.writer.path if ctx.writer is not None else None,
        )

    def _new_run(self, query: str, session_id: str | None, strategy: str | None) -> RunContext:
        if not query.strip():
            msg = "the query is empty"
            raise UserError(msg)
        if strategy is not None and strategy not in self.workspace.strategies:
            msg = f"no strategy {strategy!r} (known: {', '.join(self.workspace.strategies)})"
            raise UserError(msg)
        run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)
        writer = None
        if self.settings.trajectory_dir is not None:
            writer = TrajectoryWriter(trajectory_path(self.settings.trajectory_dir, run_id))
        header = self._header(run_id, query, session_id)
        return RunContext(run_id, self.model, header, writer)

    async def _events(
        self, ctx: RunContext, query: str, session_id: str | None, strategy: str | None
    ) -> AsyncGenerator[Event, None]:
        send, receive = anyio.create_memory_object_stream[Event](math.inf)
        scope = anyio.CancelScope()
        ctx.attach(send)
        producer = asyncio.get_running_loop().create_task(
            self._produce(ctx, scope, query, session_id, strategy)
        )
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
            scope.cancel()
            with anyio.CancelScope(shield=True):
                await asyncio.wait({producer})
            if not producer.cancelled() and producer.exception() is not None:
                ctx.log.error("run failed after finishing", exc_info=producer.exception())

    async def _produce(
        self,
        ctx: RunContext,
        scope: anyio.CancelScope,
        query: str,
        session_id: str | None,
        forced: str | None,
    ) -> None:
        status: RunStatus = "cancelled"
        answer: str | None = None
        error: str | None = None
        history = list(self._sessions.get(session_id, ())) if session_id else []
        try:
            with scope:
                try:
                    ctx.emit(
                        RunStartedEvent,
                        started_at=ctx.header.created,
                        query=query,
                        session_id=session_id,
                        model=self.model.name,
                    )
                    strategy = await self._choose_strategy(ctx, query, forced)
                    status, answer = await self._plan(ctx, strategy, query, history)
                except Exception as exc:
                    status, error = "error", f"{type(exc).__name__}: {exc}"
                    if not isinstance(exc, ModelError):
                        ctx.log.exception("run failed")
        finally:
            if status == "cancelled":
                error = "the run was cancelled"
            ctx.emit(
                RunFinishedEvent,
                status=status,
                answer=answer,
                error=error,
                steps=ctx.steps,
                usage=ctx.usage,
                timings=Timings(
                    total=round(ctx.elapsed(), 6),
                    model=round(ctx.model_time, 6),
                    tools=round(ctx.tool_time, 6),
                ),
            )
            ctx.close()
        if session_id and status == "ok" and answer is not None:
            self._sessions.setdefault(session_id, []).extend(
                [Message(role="user", content=query), Message(role="assistant", content=answer)]
            )

    async def _choose_strategy(self, ctx: RunContext, query: str, forced: str | None) -> Strategy:
        strategies = self.workspace.strategies
        if forced is not None:
            ctx.emit(ClassifiedEvent, query_type=forced, method="forced")
            return strategies[forced]
        try:
            c = await classify(ctx, self.workspace, query)
        except ClassificationFailed as exc:
            fallback = self.settings.default_strategy
            ctx.log.warning("classification failed", reason=str(exc))
            ctx.emit(ClassifiedEvent, query_type=fallback, method="fallback", reason=str(exc))
            return strategies[fallback]
        ctx.emit(
            ClassifiedEvent,
            query_type=c.query_type,
            language=c.language,
            suggested_contexts=c.suggested_contexts,
            method="model",
        )
        return strategies[c.query_type]

    async def _plan(
        self,
        ctx: RunContext,
        strategy: Strategy,
        query: str,
        history: list[Message],
    ) -> tuple[RunStatus, str | None]:
        setup = self._setup(strategy)
        ctx.header = ctx.header.model_copy(
            update={"strategy": strategy.name, "tools": setup.tool_hashes}
        )
        ctx.emit(
            StrategySelectedEvent,
            strategy=strategy.name,
            planner=strategy.planner,
            step_budget=strategy.step_budget,
        )
        ctx.emit(ToolsNarrowedEvent, tools=setup.narrowed)
        executor = Executor(
            ctx,
            setup.tools,
            timeout=self.settings.tool_timeout,
            max_concurrency=self.settings.max_concurrency,
            max_observation_chars=self.settings.max_observation_chars,
        )
        result = await PLANNERS[strategy.planner].run(
            PlannerInput(
                ctx=ctx,
                executor=executor,
                tools=setup.tools,
                system_prompt=setup.system_prompt,
                query=query,
                history=history,
                step_budget=strategy.step_budget,
                settings=self.settings,
            )
        )
        return result.status, result.answer

    def _setup(self, strategy: Strategy) -> _Setup:
        """What runs of a strategy share, built on its first run: prompts are rendered once."""
        setup = self._setups.get(strategy.name)
        if setup is None:
            tools = self.workspace.tools_for(strategy)
            definitions = [t.definition for t in tools.values()]
            instructions = self.workspace.render(strategy.instructions, tools=definitions)
            setup = self._setups[strategy.name] = _Setup(
                tools=tools,
                narrowed=[
                    NarrowedTool(name=name, source="builtin" if t is finish_tool() else "strategy")
                    for name, t in tools.items()
                ],
                system_prompt=self.workspace.render(
                    PLANNERS[strategy.planner].prompt,
                    instructions=instructions,
                    tools=definitions,
                    native_tools=self.model.native_tools,
                ),
                tool_hashes={name: t.schema_hash for name, t in tools.items()},
            )
        return setup

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
