"""Internal. What a planner receives and returns. Every planner uses the same executor and
events."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agentrt.catalog.toolbox import Toolbox
from agentrt.events import RunStatus
from agentrt.execution import Executor
from agentrt.models.base import Message
from agentrt.run import RunContext
from agentrt.settings import AgentSettings
from agentrt.strategy import Strategy
from agentrt.workspace import Workspace

__all__ = ["Planner", "PlannerInput", "PlannerResult"]


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
    settings: AgentSettings
    """Limits the planner applies: token budget, turn retries."""
    strategy: Strategy
    """The strategy running: its policies for plans (`dag`, `vm`, `pipeline`)."""
    workspace: Workspace
    """Its templates (for `pipeline`), registry and tools."""
    retrieve: Callable[[list[str], int], Awaitable[list[tuple[str, float]]]]
    """`retrieve(queries, k)`: the workspace's tools that best match the queries, with scores
    (builds the tool index on first use)."""


@dataclass(slots=True)
class PlannerResult:
    status: RunStatus
    answer: str | None
    steps: int


Planner = Callable[[PlannerInput], Awaitable[PlannerResult]]
"""A planner drives the run from the query to an answer, emitting events through `ctx`."""
