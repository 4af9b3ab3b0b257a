"""Strategies: what to do for each kind of query, kept as YAML data in `strategies/`.

A strategy file is named for the query type it serves (`strategies/aggregate.yaml` serves
`aggregate`) and gives the planner, the step budget, the tools the model may call, the
prompt file with its instructions and, optionally, what the model is told after its tool
results. The classifier chooses among the strategies it finds, so a new file is a new query
type.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentrt.events import PipelineStep
from agentrt.exceptions import WorkspaceError
from agentrt.models.base import TOOL_RESULTS_NUDGE

__all__ = [
    "DagPolicy",
    "PipelinePolicy",
    "Strategy",
    "Template",
    "VmPolicy",
    "load_strategies",
    "load_templates",
]


class DagPolicy(BaseModel):
    """How a `dag` run handles bad plans and failed nodes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    on_failure: Literal["retry", "skip", "replan"] = "skip"
    """A failed node: run it again (`retries` times, then as `skip`); skip the nodes that
    depend on it; or skip them and plan again with the failure in the prompt."""
    retries: int = Field(1, ge=0, le=5)
    repairs: int = Field(2, ge=0, le=5)
    """How often an invalid plan is sent back to the model to be fixed; past that the run
    falls back to the `react` planner."""
    replans: int = Field(1, ge=0, le=5)
    """How often the run plans again (after the joiner asks, or a failure with `replan`)."""


class VmPolicy(BaseModel):
    """How a `vm` run handles bad programs and loops."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_instructions: int = Field(200, ge=1)
    """Instructions a program may execute; a loop past it ends the run `budget_exhausted`."""
    repairs: int = Field(2, ge=0, le=5)
    """How often an invalid program is sent back to be fixed before the run falls back to
    `react`."""


class PipelinePolicy(BaseModel):
    """What a `pipeline` run works on, and how far it lets the model try."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str = "sales"
    """What `load_dataset` loads first (a name in the workspace's data/, or a path)."""
    retrieve: int = Field(3, ge=0)
    """Tools retrieved for each requirement (and for all of them together)."""
    safety: list[str] = ["aggregate", "plot_line", "compute_summary_stats"]
    max_tools: int = Field(10, ge=1)
    adaptations: int = Field(2, ge=1, le=5)
    """Model adaptations of the plan: the first, and retries carrying the coverage payload."""
    replans: int = Field(1, ge=0, le=5)
    """Adaptations after a step failed or a repair was refused while the plan ran."""
    fallback_template: str = "summary"
    """The template when the intent cannot be read."""


class Template(BaseModel):
    """A plan skeleton for one intent: its curated tools and ordered steps, with placeholders
    (`{metrics}`, `{metrics[0]}`, `{group_by}`, `{group_by[0]}`, `{time.column}`,
    `{time.grain}`) filled from the question's requirements."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = Field(min_length=1)
    tools: list[str]
    steps: list[PipelineStep]


class Strategy(BaseModel):
    """One strategy file: how a run of its query type proceeds, and what the model is offered."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """The query type this strategy serves: the file's name without `.yaml`."""
    description: str = Field(min_length=1)
    """When to choose it; the classifier reads this."""
    planner: Literal["react", "dag", "vm", "pipeline"] = "react"
    """How the run proceeds; the planners are in `agentrt.planning`."""
    dag: DagPolicy = DagPolicy()
    vm: VmPolicy = VmPolicy()
    pipeline: PipelinePolicy = PipelinePolicy()
    step_budget: int = Field(gt=0, le=100)
    """Most model turns a run may take."""
    tools: list[str] | Literal["all"] = "all"
    """The strategy's own tools, always offered; `all` offers every tool of the workspace.
    The built-in `finish` is offered too, unless one of these tools ends the run itself
    (`finish_retrieval`): then only if listed here."""
    retrieve: int = Field(0, ge=0)
    """Also offer up to this many tools retrieved from the workspace for the query."""
    safety: list[str] = []
    """Tools offered whatever retrieval finds (they may exceed `max_tools` by two)."""
    max_tools: int = Field(10, ge=1)
    """The cap on the tools offered: retrieved tools are dropped, worst first, to keep it."""
    instructions: str
    """The prompt file (in `prompts/`) with this strategy's instructions."""
    results_nudge: str = Field(TOOL_RESULTS_NUDGE, min_length=1, max_length=500)
    """What a model that takes tool results as text (the embedded model, a text-mode server) is
    told after them, at the end of the one user message that lists them: by default, to answer
    in plain text. A strategy that must end with a tool of its own says so here."""


def load_strategies(folder: Path) -> dict[str, Strategy]:
    """Load every `*.yaml` in `folder`; a bad file raises `WorkspaceError` naming file and field."""
    return {path.stem: _load(path, Strategy) for path in sorted(folder.glob("*.yaml"))}


def load_templates(folder: Path) -> dict[str, Template]:
    """Load every `*.yaml` in `folder` (a workspace's `strategies/templates/`)."""
    return {path.stem: _load(path, Template) for path in sorted(folder.glob("*.yaml"))}


M = TypeVar("M", Strategy, Template)


def _load(path: Path, model: type[M]) -> M:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        msg = f"{path}: not valid YAML: {exc}"
        raise WorkspaceError(msg) from exc
    if not isinstance(data, dict):
        msg = f"{path}: expected a mapping of fields, got {type(data).__name__}"
        raise WorkspaceError(msg)
    if "name" in data and data["name"] != path.stem:
        msg = f"{path}: field 'name': {data['name']!r} differs from the file name {path.stem!r}"
        raise WorkspaceError(msg)
    try:
        return model.model_validate({**data, "name": path.stem})
    except ValidationError as exc:
        problems = "; ".join(
            f"field '{'.'.join(map(str, e['loc']))}': {e['msg']}" for e in exc.errors()
        )
        msg = f"{path}: {problems}"
        raise WorkspaceError(msg) from None
