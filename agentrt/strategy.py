"""Strategies: what to do for each kind of query, kept as YAML data in `strategies/`.

A strategy file is named for the query type it serves (`strategies/aggregate.yaml` serves
`aggregate`) and gives the planner, the step budget, the tools the model may call and the
prompt file with its instructions. The classifier chooses among the strategies it finds, so a
new file is a new query type.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentrt.exceptions import WorkspaceError

__all__ = ["DagPolicy", "Strategy", "VmPolicy", "load_strategies"]


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


class Strategy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """The query type this strategy serves: the file's name without `.yaml`."""
    description: str = Field(min_length=1)
    """When to choose it; the classifier reads this."""
    planner: Literal["react", "dag", "vm"] = "react"
    """How the run proceeds; the planners are in `agentrt.planning`."""
    dag: DagPolicy = DagPolicy()
    vm: VmPolicy = VmPolicy()
    step_budget: int = Field(gt=0, le=100)
    """Most model turns a run may take."""
    tools: list[str] | Literal["all"] = "all"
    """The strategy's own tools, always offered; `all` offers every tool of the workspace."""
    retrieve: int = Field(0, ge=0)
    """Also offer up to this many tools retrieved from the workspace for the query."""
    safety: list[str] = []
    """Tools offered whatever retrieval finds (they may exceed `max_tools` by two)."""
    max_tools: int = Field(10, ge=1)
    """The cap on the tools offered: retrieved tools are dropped, worst first, to keep it."""
    instructions: str
    """The prompt file (in `prompts/`) with this strategy's instructions."""


def load_strategies(folder: Path) -> dict[str, Strategy]:
    """Load every `*.yaml` in `folder`; a bad file raises `WorkspaceError` naming file and field."""
    import yaml

    strategies: dict[str, Strategy] = {}
    for path in sorted(folder.glob("*.yaml")):
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
            strategies[path.stem] = Strategy.model_validate({**data, "name": path.stem})
        except ValidationError as exc:
            problems = "; ".join(
                f"field '{'.'.join(map(str, e['loc']))}': {e['msg']}" for e in exc.errors()
            )
            msg = f"{path}: {problems}"
            raise WorkspaceError(msg) from None
    return strategies
