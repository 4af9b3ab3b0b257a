"""What a planner receives and returns. Every planner uses the same executor and events."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agentrt.catalog import ToolCatalog
from agentrt.context import RunContext
from agentrt.events import RunStatus
from agentrt.execution import Executor
from agentrt.models.base import Message
from agentrt.settings import AgentSettings

__all__ = ["Planner", "PlannerInput", "PlannerResult", "PlannerSpec"]


@dataclass(slots=True)
class PlannerInput:
    ctx: RunContext
    executor: Executor
    tools: ToolCatalog
    """The tools the model may call in this run."""
    system_prompt: str
    """The planner's prompt template, rendered with the strategy's instructions and tools."""
    query: str
    history: list[Message]
    """Earlier turns of the session, oldest first."""
    step_budget: int
    settings: AgentSettings
    """Limits the planner applies: token budget, turn retries."""


@dataclass(slots=True)
class PlannerResult:
    status: RunStatus
    answer: str | None
    steps: int


Planner = Callable[[PlannerInput], Awaitable[PlannerResult]]
"""A planner drives the run from the query to an answer, emitting events through `ctx`."""


@dataclass(frozen=True, slots=True)
class PlannerSpec:
    run: Planner
    prompt: str
    """Its system prompt template (in `prompts/`), rendered with `instructions` and `tools`."""
