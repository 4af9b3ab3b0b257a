"""Internal. The plan of a `pipeline` run: a template bound to the question's requirements, then
the model's changes applied to it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, JsonValue

from agentrt.events import PipelineStep
from agentrt.planning.pipeline.requirements import Requirements
from agentrt.strategy import Template

__all__ = [
    "Adaptation",
    "Change",
    "apply_changes",
    "bind",
    "fill",
    "filter_params",
    "is_placeholder",
    "restore",
    "with_filter",
]

FILTER_STEP = "filter"
"""The id of the step `with_filter` adds."""
_BEFORE_FILTER = frozenset({"data", "time.column"})
"""Labels of the steps a filter comes after: loading the data, parsing its dates."""

PLACEHOLDER = re.compile(r"^\{(metrics|group_by|time\.column|time\.grain)(?:\[(\d+)\])?\}$")
"""A template parameter filled from the requirements: `{metrics}`, `{group_by[0]}`, …"""


def is_placeholder(value: JsonValue) -> bool:
    return PLACEHOLDER.match(str(value)) is not None


class Change(BaseModel):
    """One edit of the plan, as the model proposes it."""

    model_config = ConfigDict(extra="forbid")

    op: Literal["add", "remove", "modify"]
    step: str
    """The step's id (a new one for `add`)."""
    tool: str | None = None
    params: dict[str, JsonValue] | None = None
    """For `modify`, only the parameters that change."""
    after: str | None = None
    """For `add`: the step it comes after (None: at the end)."""
    rationale: str = ""
    satisfies: list[str] | None = None


class Adaptation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    changes: list[Change] = []


def bind(template: Template, requirements: Requirements) -> list[PipelineStep]:
    """The template's steps with their placeholders filled from the requirements. A parameter
    whose placeholder has no value (no time column, no second grouping) is left out."""
    steps = []
    for step in template.steps:
        params: dict[str, JsonValue] = {}
        for key, value in step.params.items():
            filled = fill(value, requirements)
            if filled is not None and filled != []:
                params[key] = filled
        steps.append(step.model_copy(update={"params": params}))
    return steps


def filter_params(r: Requirements) -> dict[str, JsonValue]:
    """The parameters of a step that keeps the rows `r.filters` names (a filter tool takes
    the `filters` vocabulary as it is: `where`, `period`)."""
    params: dict[str, JsonValue] = {}
    if r.filters.where:
        params["where"] = {c: list[JsonValue](v) for c, v in r.filters.where.items()}
    if r.filters.period is not None:
        params["period"] = r.filters.period
    return params


def with_filter(
    steps: Sequence[PipelineStep], r: Requirements, tool: str | None
) -> list[PipelineStep]:
    """The bound template with a step of `tool` keeping only the rows the requirements'
    filters name, after loading and parsing and before everything else (so every later step
    reads the kept rows); the steps as they are when there is nothing to filter, no filter
    tool, or a step that filters already."""
    plan = list(steps)
    if not r.filters or tool is None or any("filters" in s.satisfies for s in plan):
        return plan
    at = next((i for i, s in enumerate(plan) if not set(s.satisfies) <= _BEFORE_FILTER), len(plan))
    step = PipelineStep(
        id=FILTER_STEP,
        tool=tool,
        params=filter_params(r),
        satisfies=["filters"],
        rationale="keep only the rows the question is about",
    )
    return [*plan[:at], step, *plan[at:]]


def fill(value: JsonValue, r: Requirements) -> JsonValue:
    """`value` with its placeholder filled from `r`: None (or `[]`) when `r` has no value
    for it."""
    if not isinstance(value, str):
        return value
    match = PLACEHOLDER.match(value)
    if match is None:
        return value
    values: dict[str, JsonValue] = {
        "metrics": list[JsonValue](r.metrics),
        "group_by": list[JsonValue](r.group_by),
        "time.column": r.time.column,
        "time.grain": r.time.grain,
    }
    source = values[match.group(1)]
    if match.group(2) is None:
        return source
    index = int(match.group(2))
    return source[index] if isinstance(source, list) and index < len(source) else None


def apply_changes(
    steps: Sequence[PipelineStep], changes: Sequence[Change]
) -> tuple[list[PipelineStep], list[str]]:
    """The plan after the model's changes, and the changes that could not apply (named)."""
    plan = list(steps)
    problems: list[str] = []
    for change in changes:
        ids = [s.id for s in plan]
        if change.op == "remove":
            if change.step not in ids:
                problems.append(f"cannot remove step {change.step!r}: there is no such step")
                continue
            plan.pop(ids.index(change.step))
        elif change.op == "modify" or (
            # Small models restate the template's steps as additions: the same step and tool
            # again is a modification, not a clash worth a retry.
            change.step in ids and change.tool == plan[ids.index(change.step)].tool
        ):
            if change.step not in ids:
                problems.append(f"cannot modify step {change.step!r}: there is no such step")
                continue
            i = ids.index(change.step)
            old = plan[i]
            satisfies = change.satisfies if change.satisfies is not None else old.satisfies
            if change.tool in (None, old.tool):
                # The same tool serves what it served: a restatement that names fewer labels
                # (small models do) does not uncover them.
                satisfies = list(dict.fromkeys([*old.satisfies, *satisfies]))
            plan[i] = old.model_copy(
                update={
                    "tool": change.tool or old.tool,
                    "params": {**old.params, **(change.params or {})},
                    "satisfies": satisfies,
                    "rationale": change.rationale or old.rationale,
                }
            )
        else:
            if change.step in ids:
                problems.append(f"cannot add step {change.step!r}: a step has that id")
                continue
            if change.tool is None:
                problems.append(f"cannot add step {change.step!r}: it names no tool")
                continue
            new = PipelineStep(
                id=change.step,
                tool=change.tool,
                params=change.params or {},
                satisfies=change.satisfies or [],
                rationale=change.rationale,
            )
            at = ids.index(change.after) + 1 if change.after in ids else len(plan)
            plan.insert(at, new)
    return plan, problems


def restore(
    steps: list[PipelineStep],
    before: Sequence[PipelineStep],
    labels: Sequence[str],
    covered: Sequence[str],
) -> tuple[list[PipelineStep], list[str]]:
    """The plan with the steps the model removed put back where they were, when they were
    the ones covering a requirement the plan now misses (small models delete template steps
    they were meant to keep); and the ids put back."""
    uncovered = set(labels) - set(covered)
    plan = list(steps)
    restored: list[str] = []
    for i, step in enumerate(before):
        present = {s.id for s in plan}
        if step.id in present or not uncovered & set(step.satisfies):
            continue
        # After the nearest earlier step of the old plan that is still there.
        anchor = next((b.id for b in reversed(before[:i]) if b.id in present), None)
        at = [s.id for s in plan].index(anchor) + 1 if anchor is not None else 0
        plan.insert(at, step)
        restored.append(step.id)
    return plan, restored
