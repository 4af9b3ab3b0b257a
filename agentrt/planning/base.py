"""Internal. What every planner receives and returns. Each planner takes its own policy
beside these (see `agentrt.planning.run_planner`); every one uses the same executor and
events."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from agentrt.catalog.index import Retrieval
from agentrt.catalog.toolbox import Toolbox
from agentrt.events import RunStatus
from agentrt.execution import Executor
from agentrt.models.base import Message
from agentrt.run import RunContext
from agentrt.settings import AgentSettings

__all__ = ["PlannerInput", "PlannerResult", "Progress", "Retrieve"]


@dataclass(slots=True)
class Progress:
    """How far a planner has got, kept by its kernel as it goes. The agent reads it for
    `run_finished` however the run ends: a cancelled run returns no result to read."""

    steps: int = 0
    """Steps started: turns, plans, programs or pipeline phases."""


@dataclass(slots=True)
class PlannerInput:
    ctx: RunContext
    executor: Executor
    tools: Toolbox
    """The tools the model may call in this run; it may grow (session tools)."""
    prompt: Callable[..., str]
    """`prompt(template, tools, **variables)`: a workspace prompt rendered with the strategy's
    instructions, these tools, whether the model takes tools natively, and `variables`."""
    notes: list[str]
    """More system text for this run only (e.g. the scope it is restricted to)."""
    query: str
    history: list[Message]
    """Earlier turns of the session, oldest first."""
    step_budget: int
    """Most steps the run may take (the strategy's `step_budget`)."""
    settings: AgentSettings
    """Limits the planner applies: token budget, turn retries."""
    progress: Progress = field(default_factory=Progress)


@dataclass(slots=True)
class PlannerResult:
    status: RunStatus
    answer: str | None
    error: str | None = None
    """Why a run that ended `error` failed."""
    messages: list[Message] | None = None
    """The planner's conversation from the question on, for planners that keep one (`react`);
    the run's messages are the question and the answer otherwise."""


Retrieve = Callable[[list[str], int], Awaitable[Retrieval]]
"""`retrieve(queries, k)`: the workspace's tools that best match the queries, with scores."""
