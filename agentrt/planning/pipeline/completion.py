"""Internal. The plan completed by the planner itself: steps no requirement justifies taken out,
and a step from the workspace's templates put in for each requirement no step covers.

A small model asked to add the one step a requirement lacks often cannot: the 1.5B, asked for a
total over a summary template, proposed `compute_summary_stats` three times and the run fell
back to turn-by-turn answers with an invented figure (issue 24). The templates already hold a
step for every requirement they serve (an aggregate for a total, a histogram for a
distribution), with placeholders filled from the requirements; a step whose placeholders all
fill, whose tool the run has, and whose insertion makes the gate count the requirement covered
is a safe completion. Nothing is invented: a requirement no template step can serve stays missing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from pydantic import JsonValue

from agentrt.catalog.metadata import Registry
from agentrt.events import PipelineStep
from agentrt.planning.pipeline.adaptation import fill
from agentrt.planning.pipeline.coverage import Coverage
from agentrt.planning.pipeline.requirements import Requirements
from agentrt.strategy import Template
from agentrt.tool import Tool

__all__ = ["complete"]

Check = Callable[[Sequence[PipelineStep]], Coverage]


def complete(
    steps: Sequence[PipelineStep],
    r: Requirements,
    templates: Sequence[Template],
    registry: Registry,
    tools: Mapping[str, Tool],
    check: Check,
) -> tuple[list[PipelineStep], list[str], list[str]]:
    """`steps` without those no requirement justifies and with a template step for each
    requirement none covers; and the ids removed and added.

    :param templates: where steps are taken from, first the one the plan was made from (its
        grouping keeps the time column its chart plots)
    :param tools: the tools steps may use (the run's, offered to the model or not)
    :param check: the coverage gate over a plan
    """
    removed = list(check(steps).unjustified)
    plan = [s for s in steps if s.id not in removed]
    added: list[str] = []
    for label in r.labels():
        if label in check(plan).covered:
            continue
        for candidate in _candidates(label, r, templates, tools):
            step = _unique(candidate, {s.id for s in plan})
            trial = _insert(plan, step, registry)
            if label in check(trial).covered:
                plan = trial
                added.append(step.id)
                break
    return plan, removed, added


def _candidates(
    label: str, r: Requirements, templates: Sequence[Template], tools: Mapping[str, Tool]
) -> Iterable[PipelineStep]:
    """The templates' steps that serve `label`, bound to `r`, in template order: only those
    whose tool the run has and whose every required single-value placeholder is filled (a
    chart's `x` of `{group_by[0]}` with no grouping is not this step; its optional `color` is
    left out, as an empty `{group_by}` list is: a trend with no grouping is one line)."""
    for template in templates:
        for step in template.steps:
            tool = tools.get(step.tool)
            if label not in step.satisfies or tool is None:
                continue
            required = tool.definition.parameters.get("required", ())
            params: dict[str, JsonValue] = {}
            for key, value in step.params.items():
                filled = fill(value, r)
                if filled is None and key in required:
                    break
                if filled is not None and filled != []:
                    params[key] = filled
            else:
                yield step.model_copy(update={"params": params})


def _unique(step: PipelineStep, ids: set[str]) -> PipelineStep:
    if step.id not in ids:
        return step
    n = 2
    while f"{step.id}_{n}" in ids:
        n += 1
    return step.model_copy(update={"id": f"{step.id}_{n}"})


_PREPARES = frozenset({"data", "time.column", "filters"})
"""Labels of the steps that make the data the others read: loading, parsing, filtering."""


def _insert(
    plan: Sequence[PipelineStep], step: PipelineStep, registry: Registry
) -> list[PipelineStep]:
    """`plan` with `step`: a step that prepares the data (parses dates) after those that
    prepare it already, an output at the end, a step that computes before the first output
    (a grouping must come before anything is plotted, a table written out after what it
    shows is made)."""

    def is_output(s: PipelineStep) -> bool:
        """A chart, or a step serving outputs only (a table written out)."""
        return registry.serves(s.tool, "outputs.chart") or all(
            label.startswith("outputs.") for label in s.satisfies
        )

    if set(step.satisfies) <= _PREPARES:
        at = next((i for i, s in enumerate(plan) if not set(s.satisfies) <= _PREPARES), len(plan))
    elif is_output(step):
        at = len(plan)
    else:
        at = next((i for i, s in enumerate(plan) if is_output(s)), len(plan))
    return [*plan[:at], step, *plan[at:]]
