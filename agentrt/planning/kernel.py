"""Internal. What every planner does the same way: open the conversation, take a model turn (asked
again when its stream breaks off), ask for one JSON answer, call a tool a plan names, and keep
the step and token budgets: checked before each step, and while an answer streams (the run's
`RunContext.stream` cuts it; `run` ends the run `budget_exhausted`).

One `Kernel` serves one planner run. A planner counts its steps with `next_step()`, which says
when either budget is spent, and ends with `result(...)`, which carries the step count to
`run_finished`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

from pydantic import BaseModel, JsonValue, ValidationError

from agentrt._validation import describe_errors
from agentrt.events import ModelErrorEvent, PendingCall, RunStatus, TurnStartedEvent
from agentrt.exceptions import AgentrtError, ModelError, StreamInterrupted, TokenLimitReached
from agentrt.execution import PreparedCall, ToolOutcome
from agentrt.models.base import Message, ModelRequest
from agentrt.parsing import CallPiece
from agentrt.parsing.answers import JSONProblem, find_json
from agentrt.planning.base import PlannerInput, PlannerResult
from agentrt.tool import Tool

__all__ = ["Invalid", "Kernel", "plan_tools"]

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Invalid:
    """An answer that is not the JSON asked for."""

    text: str
    """The answer as the model wrote it."""
    error: JSONProblem | ValidationError

    def describe(self) -> str:
        """What is wrong, as `loc: message; …` (or the JSON problem), for the model."""
        if isinstance(self.error, ValidationError):
            return describe_errors(self.error, root="value", quote=False)
        return str(self.error)


def plan_tools(task: PlannerInput) -> dict[str, Tool]:
    """The tools a plan's steps may call: not those that end the run, which is the planner's
    business (its joiner, its final answer), not a step's."""
    return {n: t for n, t in task.tools.items() if not t.ends_run}


class _Held(Exception):
    """A plan's call awaits a person's approval: the plan stops, the run ends `needs_approval`
    (`agent.resume` runs the plan again from its recording, the decision made)."""


class Kernel:
    """The turn machinery and the budgets of one planner run."""

    def __init__(self, task: PlannerInput) -> None:
        self.task = task
        self.ctx = task.ctx
        self.progress = task.progress

    def opening(self, system: str) -> list[Message]:
        """The conversation a run starts from: the system prompt, the run's notes, the
        session's history and the query."""
        task = self.task
        return [
            Message(role="system", content=system),
            *(Message(role="system", content=note) for note in task.notes),
            *task.history,
            Message(role="user", content=task.query),
        ]

    @property
    def steps(self) -> int:
        """Steps started so far: turns, plans, programs or pipeline phases."""
        return self.progress.steps

    @property
    def tokens_spent(self) -> bool:
        """The run has used `settings.token_budget` tokens (never, without one)."""
        budget = self.task.settings.token_budget
        return budget is not None and self.ctx.usage.total_tokens >= budget

    @property
    def budget_left(self) -> bool:
        """Another step may start: neither the step budget nor the token budget is spent."""
        return self.steps < self.task.step_budget and not self.tokens_spent

    def next_step(self) -> int | None:
        """Start the next step and return its number; None when the step budget or the token
        budget is spent (the run then ends `budget_exhausted`)."""
        if not self.budget_left:
            return None
        self.progress.steps += 1
        return self.progress.steps

    def count_step(self) -> int:
        """Count a step that asks the model nothing (a pipeline running its plan): the budgets,
        which hold back model calls, do not hold it back."""
        self.progress.steps += 1
        return self.progress.steps

    def hold(self, calls: Sequence[PendingCall]) -> NoReturn:
        """Stop the plan: `calls` await a person's approval (the run ends `needs_approval`)."""
        self.task.executor.pending.extend(calls)
        raise _Held

    def result(self, status: RunStatus, answer: str | None = None) -> PlannerResult:
        return PlannerResult(status, answer)

    async def run(self, body: Callable[[], Awaitable[PlannerResult]]) -> PlannerResult:
        """The planner's `body`, its run-time failures (a model that fails, a plan that cannot
        run) ending the run `error` with the steps taken so far, a model answer cut by the
        token budget or the per-call cap ending it `budget_exhausted`, and a plan's call held
        for approval ending it `needs_approval`."""
        try:
            return await body()
        except (_Held, ExceptionGroup) as exc:
            # A plan's nodes run in a task group, which wraps what they raise.
            if isinstance(exc, ExceptionGroup) and exc.split(_Held)[1] is not None:
                raise
            return PlannerResult("needs_approval", None)
        except TokenLimitReached as exc:
            # The partial answer and why it was cut are already recorded (`RunContext.stream`).
            return PlannerResult("budget_exhausted", None, str(exc))
        except AgentrtError as exc:
            return PlannerResult("error", None, f"{type(exc).__name__}: {exc}")

    async def turn(self, step: int, attempt: Callable[[], Awaitable[R]]) -> R:
        """One model turn of `step`: `attempt()`, asked again (`settings.turn_retries` times)
        when its stream breaks off; every failure is a `model_error` event.

        :raises ModelError: the turn failed for good
        """
        retried = 0
        while True:
            self.ctx.checkpoint()
            self.ctx.emit(TurnStartedEvent, step=step)
            try:
                return await attempt()
            except ModelError as exc:
                retrying = (
                    isinstance(exc, StreamInterrupted) and retried < self.task.settings.turn_retries
                )
                self.ctx.emit(
                    ModelErrorEvent,
                    step=step,
                    error=f"{type(exc).__name__}: {exc}",
                    retrying=retrying,
                )
                if not retrying:
                    raise
                # Calls the broken turn ran are not run again when the retry repeats them.
                self.task.executor.keep_for_retry(step)
                retried += 1

    async def ask_json(
        self, request: ModelRequest, model: type[M], *, step: int | None
    ) -> M | Invalid:
        """One model call whose whole answer must be one JSON object fitting `model`."""
        text = await self.ctx.complete(request, step=step)
        try:
            return model.model_validate(find_json(text, object_only=True))
        except (JSONProblem, ValidationError) as exc:
            return Invalid(text, exc)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | dict[str, JsonValue],
        *,
        raw: str,
        step: int,
        call_id: str,
        depends_on: Sequence[str] = (),
        fresh: bool = False,
    ) -> ToolOutcome:
        """Call the tool a plan names, to its end (a refused call is an outcome too).

        :param raw: the plan's text for the call, shown if the call is refused
        :param fresh: run it even if an identical call is in the run's cache (a retry)
        """
        piece = CallPiece(name, dict(arguments), raw, "plan")
        executor = self.task.executor
        prepared = executor.admit(piece, step=step, call_id=call_id, depends_on=depends_on)
        if not isinstance(prepared, PreparedCall):
            return prepared
        outcome = await executor.execute(prepared, fresh=fresh)
        if outcome.pending:
            raise _Held
        return outcome
