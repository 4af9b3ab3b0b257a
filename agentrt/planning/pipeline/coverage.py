"""Internal. The coverage gate of a `pipeline` run: every requirement has a step whose tool can
serve it, every step serves a requirement (see `registry/capabilities.yaml`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from agentrt.catalog.metadata import Registry
from agentrt.events import PipelineStep
from agentrt.planning.pipeline.adaptation import filter_params
from agentrt.planning.pipeline.requirements import Requirements
from agentrt.strategy import PipelineVocabulary

__all__ = ["Coverage", "check_coverage"]


@dataclass(frozen=True, slots=True)
class Coverage:
    """The gate's verdict on a plan."""

    covered: list[str]
    missing: list[str]
    """Uncovered requirements, as the payload names them: `group_by=[region]`."""
    unjustified: list[str]
    """Step ids no requirement justifies."""
    problems: list[str]
    """Other faults: unknown steps' tools, tools not offered."""

    @property
    def ok(self) -> bool:
        return not (self.missing or self.unjustified or self.problems)

    def payload(self, steps: Sequence[PipelineStep]) -> str:
        """The exact message the model's retry gets."""
        lines = []
        if self.missing:
            lines.append(f"Missing coverage: {', '.join(self.missing)}")
        if self.unjustified:
            tools = {s.id: s.tool for s in steps}
            lines.append(
                f"Remove unjustified steps: {', '.join(tools[i] for i in self.unjustified)}"
            )
        lines += self.problems
        return "\n".join(lines)


def check_coverage(
    steps: Sequence[PipelineStep],
    requirements: Requirements,
    registry: Registry,
    offered: Sequence[str],
    vocabulary: PipelineVocabulary,
) -> Coverage:
    """The deterministic gate: every requirement has a step whose tool can satisfy it; every
    step serves a requirement; a grouping is computed before anything is plotted, and by the
    time column too when the question asks for one ("by quarter"); a trend is
    served by a step that works on the time column, and so is a total when the question
    names a period ("which month"); the filters by a step that keeps exactly
    the rows they name, before any step that reads the data (other than loading and parsing
    it)."""
    labels = requirements.labels()
    plots = [i for i, s in enumerate(steps) if _is_plot(registry, s.tool)]
    rules = _Rules(
        first_plot=min(plots, default=len(steps)),
        first_reader=_first_reader(steps, registry),
        wanted=frozenset(c.lower() for c in requirements.group_by),
        time=(requirements.time.column or "").lower(),
        per_period=requirements.time.grain != "unknown",
        kept=_kept(filter_params(requirements)),
        vocabulary=vocabulary,
    )
    covered: list[str] = []
    missing: list[str] = []
    for label in labels:
        serving = [
            i
            for i, s in enumerate(steps)
            if label in s.satisfies and registry.serves(s.tool, label) and rules.hold(i, s, label)
        ]
        (covered if serving else missing).append(label)
    idle = _unread(
        steps,
        {
            s.id
            for s in steps
            if not any(label in labels and registry.serves(s.tool, label) for label in s.satisfies)
        },
    )
    # A filter that keeps other rows than the question names, or filters what was computed
    # already, changes the analysis: no requirement justifies it.
    unjustified = [
        s.id
        for i, s in enumerate(steps)
        if s.id in idle or (registry.serves(s.tool, "filters") and not rules.hold(i, s, "filters"))
    ]
    problems = [
        f"Step {s.id} uses {s.tool}, which is not offered: use one of {', '.join(offered)}"
        for s in steps
        if s.tool not in offered
    ]
    return Coverage(
        covered=covered,
        missing=[_name_missing(label, requirements) for label in missing],
        unjustified=unjustified,
        problems=problems,
    )


def _unread(steps: Sequence[PipelineStep], idle: set[str]) -> set[str]:
    """Of the steps that serve no requirement (`idle`), those whose frame (`name`) no needed
    step after them reads (`data`): a grouping that only a chart plots serves through the
    chart. Taking it out had the chart and the table read the raw rows (issue 24)."""
    idle = set(idle)
    while needed := {
        s.id
        for i, s in enumerate(steps)
        if s.id in idle
        and isinstance(made := s.params.get("name"), str)
        and any(t.id not in idle and t.params.get("data") == made for t in steps[i + 1 :])
    }:
        idle -= needed
    return idle


@dataclass(frozen=True, slots=True)
class _Rules:
    """Where in the plan, and with what parameters, a step serves a label."""

    first_plot: int
    first_reader: int
    wanted: frozenset[str]
    """The columns the question groups by (lowercase)."""
    time: str
    """The time column the question asks for (lowercase), or empty."""
    per_period: bool
    """Whether the question names a period ("which month", "daily"): its totals are per
    period."""
    kept: tuple[frozenset[tuple[str, str]], str]
    """What the question's filters keep (`_kept`)."""
    vocabulary: PipelineVocabulary

    def hold(self, i: int, step: PipelineStep, label: str) -> bool:
        """Whether step `i`, whose tool serves `label`, serves it here and so."""
        columns = self.vocabulary.column_params
        if label == "group_by":
            return (
                i < self.first_plot
                and self.wanted <= _grouped_by(step, self.vocabulary.grouping_params)
                and (not self.time or self.time in _columns(step, columns))
            )
        if label == "analysis.trend":
            return bool(self.time) and self.time in _columns(step, columns)
        if label == "analysis.total" and self.time and self.per_period:
            # "Which month had the highest revenue?" is read off totals per month, not one
            # grand total (the 1.5B's plans, issue 24).
            return self.time in _columns(step, columns)
        if label == "filters":
            return i < self.first_reader and _kept(step.params) == self.kept
        return True


def _is_plot(registry: Registry, tool: str) -> bool:
    return registry.serves(tool, "outputs.chart")


def _columns(step: PipelineStep, params: frozenset[str]) -> set[str]:
    """The column names a step's parameters (those of `params`) mention (lowercase)."""
    names: set[str] = set()
    for key in params & set(step.params):
        value = step.params[key]
        values = value if isinstance(value, list) else [value]
        names |= {v.lower() for v in values if isinstance(v, str)}
    return names


def _grouped_by(step: PipelineStep, params: Sequence[str]) -> set[str]:
    columns: set[str] = set()
    for key in params:
        value = step.params.get(key)
        if isinstance(value, str):
            columns.add(value.lower())
        elif isinstance(value, list):
            columns |= {str(v).lower() for v in value}
    return columns


def _first_reader(steps: Sequence[PipelineStep], registry: Registry) -> int:
    """The index of the first step that reads the data (not one loading, parsing or
    filtering it): a filter must come before it."""
    before = ("data", "time.column", "filters")
    readers = [
        i
        for i, s in enumerate(steps)
        if not any(registry.serves(s.tool, label) for label in before)
    ]
    return min(readers, default=len(steps))


def _kept(params: dict[str, JsonValue]) -> tuple[frozenset[tuple[str, str]], str]:
    """What a filter step's parameters keep, spelling aside: (column, value) pairs and the
    period."""
    where = params.get("where")
    pairs: set[tuple[str, str]] = set()
    if isinstance(where, dict):
        for column, values in where.items():
            listed = values if isinstance(values, list) else [values]
            pairs |= {(column.strip().lower(), str(v).strip().lower()) for v in listed}
    period = params.get("period")
    return frozenset(pairs), str(period).strip().upper() if period else ""


def _name_missing(label: str, r: Requirements) -> str:
    if label == "group_by":
        return f"group_by=[{', '.join(r.group_by)}]"
    if label == "time.column":
        return f"time.column={r.time.column}"
    if label == "filters":
        return f"filters={json.dumps(filter_params(r), ensure_ascii=False)}"
    return label
