"""Internal. The `pipeline` planner: a small model gets a correct plan because deterministic checks,
not the model, hold the line.

    load the dataset ─► intent (JSON) ─► template ─► requirements (JSON, closed labels)
        ─► narrow tools (template ∪ retrieved per requirement ∪ safety)
        ─► bind the template to the requirements ─► adaptation (JSON changes)
        ─► coverage gate (registry/capabilities.yaml) ─► retry with the exact payload
        ─► execute step by step, with safe repairs logged; semantic ones refused → replan

The model answers three narrow questions under JSON schemas: which template, what the
question asks for, what to change in the plan. Everything else is deterministic: binding
the template's placeholders, dropping analysis the question gave no cue for, checking that
every requirement has a step and every step a requirement (group_by by an aggregate before
any plot, trends by a time-aware step), removing unjustified steps, repairing what is safe to
repair (a missing data handle, a column's casing, a parameter the template had), refusing what
would change the analysis (a metric, a grouping, a grain).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agentrt.catalog.index import narrow
from agentrt.catalog.metadata import Registry
from agentrt.events import (
    CoverageEvent,
    IntentEvent,
    NarrowedTool,
    PipelineStep,
    PlanAdaptedEvent,
    RepairEvent,
    RequirementsEvent,
    ToolsNarrowedEvent,
)
from agentrt.exceptions import AgentrtError
from agentrt.execution import PreparedCall, ToolOutcome
from agentrt.models.base import Message, ModelRequest, ToolDefinition
from agentrt.parsing import CallPiece
from agentrt.planning.base import PlannerInput, PlannerResult
from agentrt.strategy import PipelineStrategy, Template

__all__ = [
    "Adaptation",
    "Change",
    "Coverage",
    "Requirements",
    "apply_changes",
    "bind",
    "check_coverage",
    "run_pipeline",
]

Analysis = Literal["total", "compare", "trend", "distribution", "anomaly", "correlation", "summary"]
Output = Literal["chart", "table"]
Grain = Literal["day", "week", "month", "quarter", "year", "unknown"]

# Parameters that name columns: the ones a casing repair may touch.
COLUMN_PARAMS = frozenset(
    {"x", "y", "color", "column", "metric", "by", "metrics", "group_by", "time_column", "columns"}
)
# Parameters that carry the analysis itself: a wrong value is never repaired, the plan is redone.
SEMANTIC_PARAMS = frozenset({"metric", "metrics", "group_by", "by", "grain", "time_column"})
_PLACEHOLDER = re.compile(r"^\{(metrics|group_by|time\.column|time\.grain)(?:\[(\d+)\])?\}$")


class PipelineFailed(AgentrtError):
    """The pipeline could not produce a plan that covers the question, or run it."""


class TimeRequirement(BaseModel):
    model_config = ConfigDict(extra="forbid")

    column: str | None = None
    grain: Grain = "unknown"
    """`unknown` unless the question names one; resolved from the data when the plan runs."""


class Requirements(BaseModel):
    """What a question asks of the data, in the pipeline's closed vocabulary."""

    model_config = ConfigDict(extra="forbid")

    metrics: list[str] = []
    group_by: list[str] = []
    time: TimeRequirement = TimeRequirement()
    analysis: list[Analysis] = []
    outputs: list[Output] = []
    constraints: list[str] = []

    def labels(self) -> list[str]:
        """The requirement labels a plan must cover (keys of the capability map)."""
        labels = ["data", *(f"analysis.{a}" for a in self.analysis)]
        if self.group_by:
            labels.append("group_by")
        if self.time.column:
            labels.append("time.column")
        labels += [f"outputs.{o}" for o in self.outputs]
        return list(dict.fromkeys(labels))


def requirement_labels() -> list[str]:
    """Every label a `Requirements` can produce: each must have an entry in the map."""
    return [
        "data",
        "group_by",
        "time.column",
        *(f"analysis.{a}" for a in get_args(Analysis)),
        *(f"outputs.{o}" for o in get_args(Output)),
    ]


class _Intent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    primary_intent: str
    confidence: float = Field(ge=0, le=1)


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


def bind(template: Template, requirements: Requirements) -> list[PipelineStep]:
    """The template's steps with their placeholders filled from the requirements. A parameter
    whose placeholder has no value (no time column, no second grouping) is left out."""
    steps = []
    for step in template.steps:
        params: dict[str, JsonValue] = {}
        for key, value in step.params.items():
            filled = _fill(value, requirements)
            if filled is not None and filled != []:
                params[key] = filled
        steps.append(step.model_copy(update={"params": params}))
    return steps


def _fill(value: JsonValue, r: Requirements) -> JsonValue:
    if not isinstance(value, str):
        return value
    match = _PLACEHOLDER.match(value)
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
            plan[i] = old.model_copy(
                update={
                    "tool": change.tool or old.tool,
                    "params": {**old.params, **(change.params or {})},
                    "satisfies": change.satisfies
                    if change.satisfies is not None
                    else old.satisfies,
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


def check_coverage(
    steps: Sequence[PipelineStep],
    requirements: Requirements,
    registry: Registry,
    offered: Sequence[str],
) -> Coverage:
    """The deterministic gate: every requirement has a step whose tool can satisfy it; every
    step serves a requirement; a grouping is computed before anything is plotted; a trend is
    served by a step that works on the time column."""
    labels = requirements.labels()
    plots = [i for i, s in enumerate(steps) if _is_plot(registry, s.tool)]
    first_plot = min(plots, default=len(steps))
    wanted = {c.lower() for c in requirements.group_by}
    time = (requirements.time.column or "").lower()
    covered: list[str] = []
    missing: list[str] = []
    for label in labels:
        serving = [
            i
            for i, s in enumerate(steps)
            if label in s.satisfies
            and registry.serves(s.tool, label)
            and (label != "group_by" or (i < first_plot and wanted <= _grouped_by(s)))
            and (label != "analysis.trend" or (bool(time) and time in _columns(s)))
        ]
        (covered if serving else missing).append(label)
    unjustified = [
        s.id
        for s in steps
        if not any(label in labels and registry.serves(s.tool, label) for label in s.satisfies)
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


def _is_plot(registry: Registry, tool: str) -> bool:
    return registry.serves(tool, "outputs.chart")


def _columns(step: PipelineStep) -> set[str]:
    """The column names a step's parameters mention (lowercase)."""
    names: set[str] = set()
    for key in COLUMN_PARAMS & set(step.params):
        value = step.params[key]
        values = value if isinstance(value, list) else [value]
        names |= {v.lower() for v in values if isinstance(v, str)}
    return names


def _grouped_by(step: PipelineStep) -> set[str]:
    columns: set[str] = set()
    for key in ("group_by", "by"):
        value = step.params.get(key)
        if isinstance(value, str):
            columns.add(value.lower())
        elif isinstance(value, list):
            columns |= {str(v).lower() for v in value}
    return columns


def _name_missing(label: str, r: Requirements) -> str:
    if label == "group_by":
        return f"group_by=[{', '.join(r.group_by)}]"
    if label == "time.column":
        return f"time.column={r.time.column}"
    return label


async def run_pipeline(task: PlannerInput) -> PlannerResult:
    pipeline = _Pipeline(task)
    try:
        return await pipeline.run()
    except _OutOfSteps:
        return PlannerResult("budget_exhausted", None, pipeline.phase)


T = TypeVar("T", bound=BaseModel)


@dataclass(slots=True)
class _Execution:
    results: dict[str, ToolOutcome] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)


class _Pipeline:
    def __init__(self, task: PlannerInput) -> None:
        self.task = task
        self.ctx = task.ctx
        strategy = task.strategy
        assert isinstance(strategy, PipelineStrategy), strategy.planner
        self.policy = strategy.pipeline
        self.registry = task.workspace.registry
        self.templates = task.workspace.templates
        self.phase = 0
        self.frames: dict[str, list[str]] = {}
        """Data frames the steps made so far, by name: their columns."""
        self.last_frame: str | None = None

    async def run(self) -> PlannerResult:
        dataset = await self._load()
        template = await self._intent(dataset)
        requirements = await self._requirements(dataset)
        offered = await self._narrow(template, requirements)
        steps = await self._adapt(requirements, dataset, offered, [*bind(template, requirements)])
        for replan in range(self.policy.replans + 1):
            try:
                done = await self._execute(steps)
            except _Refused as refused:
                if replan == self.policy.replans:
                    raise PipelineFailed(str(refused)) from None
                payload = f"The plan failed while it ran: {refused}"
                steps = await self._adapt(requirements, dataset, offered, steps, payload)
                continue
            return PlannerResult("ok", self._answer(requirements, steps, done), self.phase)
        raise AssertionError("unreachable: the last replan returns or raises")

    # ── the model's three questions ─────────────────────────────────────────────────────

    async def _ask(self, purpose: str, prompt: str, model: type[T], schema: dict[str, Any]) -> T:
        if self.phase >= self.task.step_budget:
            raise _OutOfSteps
        self.phase += 1
        self.ctx.steps = self.phase
        request = ModelRequest(
            messages=[
                Message(role="system", content=prompt),
                Message(role="user", content=self.task.query),
            ],
            json_schema=schema,
            purpose=purpose,
        )
        text = await self.ctx.complete(request, step=self.phase)
        return model.model_validate(_json(text))

    def _prompt(
        self,
        template: str,
        dataset: dict[str, Any],
        tools: list[ToolDefinition] | None = None,
        **variables: Any,
    ) -> str:
        return self.task.prompt(template, tools or [], dataset=dataset, **variables)

    async def _intent(self, dataset: dict[str, Any]) -> Template:
        names = sorted(self.templates)
        schema = {
            "type": "object",
            "properties": {
                "primary_intent": {"type": "string", "enum": names},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            },
            "required": ["primary_intent", "confidence"],
            "additionalProperties": False,
        }
        templates = [self.templates[n] for n in names]
        prompt = self._prompt("pipeline_intent.j2", dataset, templates=templates)
        try:
            intent = await self._ask("intent", prompt, _Intent, schema)
            if intent.primary_intent not in self.templates:
                msg = f"unknown template {intent.primary_intent!r}"
                raise ValueError(msg)
        except ValueError as exc:  # pydantic's ValidationError and JSON errors are ValueErrors
            fallback = self.policy.fallback_template
            self.ctx.emit(
                IntentEvent, template=fallback, confidence=0.0, method="fallback", reason=str(exc)
            )
            return self.templates[fallback]
        self.ctx.emit(
            IntentEvent,
            template=intent.primary_intent,
            confidence=intent.confidence,
            method="model",
        )
        return self.templates[intent.primary_intent]

    async def _requirements(self, dataset: dict[str, Any]) -> Requirements:
        schema = Requirements.model_json_schema()
        allowed = {
            "analysis": list(get_args(Analysis)),
            "outputs": list(get_args(Output)),
            "grain": list(get_args(Grain)),
        }
        problem: str | None = None
        for _ in range(2):  # one re-extraction, with the allowed labels spelled out
            prompt = self._prompt(
                "pipeline_requirements.j2", dataset, allowed=allowed, problem=problem
            )
            try:
                found = await self._ask("requirements", prompt, Requirements, schema)
                found = _on_columns(found, list(dataset.get("columns", {})))
                break
            except ValueError as exc:
                problem = str(exc)
        else:
            msg = f"the question's requirements could not be read, twice: {problem}"
            raise PipelineFailed(msg)
        found, dropped = self._without_uncued(found)
        found, filled = _with_time_column(found, dataset)
        self.ctx.emit(
            RequirementsEvent,
            requirements=found.model_dump(mode="json"),
            labels=found.labels(),
            dropped=dropped,
            filled=filled,
        )
        return found

    def _without_uncued(self, r: Requirements) -> tuple[Requirements, list[str]]:
        """Analysis the question holds no cue for is not read into it (small models add
        anomalies and histograms nobody asked for)."""
        question = self.task.query.lower()
        cues = self.registry.cues
        keep = [a for a in r.analysis if a not in cues or any(w in question for w in cues[a])]
        dropped = [f"analysis.{a}" for a in r.analysis if a not in keep]
        return r.model_copy(update={"analysis": keep}), dropped

    async def _adapt(
        self,
        requirements: Requirements,
        dataset: dict[str, Any],
        offered: list[str],
        steps: list[PipelineStep],
        payload: str | None = None,
    ) -> list[PipelineStep]:
        """Let the model change the plan, and hold the result to the gate: retries carry the
        exact payload; then steps no requirement justifies are removed, removed steps that
        covered a requirement are put back, and a requirement still uncovered fails the run."""
        if not steps or steps[0].id != "load":
            source = {"source": self.policy.dataset}
            load = PipelineStep(id="load", tool="load_dataset", params=source, satisfies=["data"])
            steps = [load, *(s for s in steps if s.id != "load")]
        before = steps
        tools = self.task.tools
        for attempt in range(1, self.policy.adaptations + 1):
            prompt = self._prompt(
                "pipeline_adapt.j2",
                dataset,
                requirements=requirements.model_dump(mode="json"),
                labels=requirements.labels(),
                steps=[s.model_dump(mode="json") for s in steps],
                tools=[tools[n].definition for n in offered if n in tools],
                payload=payload,
            )
            try:
                changes = (await self._ask("adapt", prompt, Adaptation, _ADAPTATION)).changes
            except ValueError as exc:
                changes, problems = [], [f"Your answer was not a valid list of changes: {exc}"]
            else:
                steps, problems = apply_changes(steps, changes)
            self.ctx.emit(
                PlanAdaptedEvent,
                attempt=attempt,
                changes=[c.model_dump(mode="json", exclude_none=True) for c in changes],
                steps=steps,
            )
            coverage = check_coverage(steps, requirements, self.registry, offered)
            self._emit_coverage(attempt, coverage)
            if coverage.ok and not problems:
                return steps
            payload = "\n".join([coverage.payload(steps), *problems]).strip()
        final = check_coverage(steps, requirements, self.registry, offered)
        removed = [s.id for s in steps if s.id in final.unjustified or s.tool not in offered]
        steps = [s for s in steps if s.id not in removed]
        steps, restored = _restore(steps, before, requirements.labels(), final.covered)
        final = check_coverage(steps, requirements, self.registry, offered)
        self._emit_coverage(self.policy.adaptations + 1, final, removed, restored)
        if final.missing:
            msg = f"no plan covers the question: {', '.join(final.missing)}"
            raise PipelineFailed(msg)
        return steps

    def _emit_coverage(
        self,
        attempt: int,
        c: Coverage,
        removed: list[str] | None = None,
        restored: list[str] | None = None,
    ) -> None:
        self.ctx.emit(
            CoverageEvent,
            attempt=attempt,
            ok=c.ok,
            covered=c.covered,
            missing=c.missing,
            unjustified=c.unjustified,
            removed=removed or [],
            restored=restored or [],
        )

    # ── deterministic parts ─────────────────────────────────────────────────────────────

    async def _load(self) -> dict[str, Any]:
        """Load the dataset first (a real tool call): its schema informs every prompt."""
        outcome = await self._run_tool("load", "load_dataset", {"source": self.policy.dataset})
        if outcome.status != "ok" or not isinstance(outcome.output, dict):
            msg = f"the dataset {self.policy.dataset!r} could not be loaded: {outcome.error}"
            raise PipelineFailed(msg)
        self._remember_frame(outcome.output)
        return outcome.output

    async def _narrow(self, template: Template, r: Requirements) -> list[str]:
        """Template tools ∪ tools retrieved for each requirement and for the whole question ∪
        the safety set; then, for a requirement none of those covers (a retrieval miss), the
        run's tools that the capability map says cover it."""
        pool = self.task.tools
        retrieved: list[tuple[str, float]] = []
        if self.policy.retrieve:
            queries = [*_requirement_texts(r), self.task.query]
            found = await self.task.retrieve(queries, self.policy.retrieve)
            retrieved = [(n, score) for n, score in found if n in pool]
        offered = narrow(
            template=template.tools,
            retrieved=retrieved,
            safety=[n for n in self.policy.safety if n in pool],
            cap=self.policy.max_tools,
        )
        names = {t.name for t in offered}
        missed = [
            label for label in r.labels() if not any(self.registry.serves(n, label) for n in names)
        ]
        for label in missed:
            for name in pool:
                if name not in names and self.registry.serves(name, label):
                    offered.append(NarrowedTool(name=name, source="capability"))
                    names.add(name)
        self.ctx.emit(ToolsNarrowedEvent, tools=offered, missed=missed)
        return [t.name for t in offered]

    async def _execute(self, steps: list[PipelineStep]) -> _Execution:
        self.phase += 1
        self.ctx.steps = self.phase
        done = _Execution()
        for step in steps:
            if step.id == "load":
                continue  # loaded before planning
            params = self._repair(step, dict(step.params))
            outcome = await self._run_tool(step.id, step.tool, params)
            if outcome.status != "ok":
                raise _Refused(f"step {step.id} ({step.tool}) failed: {outcome.error}")
            done.results[step.id] = outcome
            output = outcome.output
            if isinstance(output, dict):
                self._remember_frame(output)
                if isinstance(file := output.get("file"), str):
                    done.files.append(file)
                if isinstance(preview := output.get("preview"), str):
                    done.tables.append(preview)
        return done

    def _remember_frame(self, output: Mapping[str, JsonValue]) -> None:
        name, columns = output.get("frame"), output.get("columns")
        if isinstance(name, str) and isinstance(columns, dict | list):
            self.frames[name] = [str(c) for c in columns]
            self.last_frame = name

    def _repair(self, step: PipelineStep, params: dict[str, JsonValue]) -> dict[str, JsonValue]:
        """Safe repairs, each logged with before and after; semantic ones are refused."""
        tool = self.task.tools.get(step.tool)
        fields = tool.args_model.model_fields if tool is not None else {}
        data = fields.get("data")
        # A step without a handle means the frame the steps before it made, which is not
        # always the tool's default.
        if (
            data is not None
            and "data" not in params
            and self.last_frame not in (None, data.default)
        ):
            self._log_repair(step, "data", None, self.last_frame, "missing data handle")
            params["data"] = self.last_frame
        columns = self.frames.get(str(params.get("data", self.last_frame)))
        if columns is not None:
            for key in sorted(COLUMN_PARAMS & set(params)):
                params[key] = self._fix_columns(step, key, params[key], columns)
        for key, info in fields.items():
            if key not in params and info.is_required():
                default = self._template_default(step.tool, key)
                if default is not None:
                    self._log_repair(step, key, None, default, "default from the template")
                    params[key] = default
        return params

    def _fix_columns(
        self, step: PipelineStep, key: str, value: JsonValue, columns: list[str]
    ) -> JsonValue:
        by_lower = {c.lower(): c for c in columns}
        names = value if isinstance(value, list) else [value]
        fixed: list[JsonValue] = []
        for name in names:
            right = by_lower.get(name.lower()) if isinstance(name, str) else None
            if right is not None and right != name:
                self._log_repair(step, key, name, right, "column name casing")
            elif right is None and isinstance(name, str) and key in SEMANTIC_PARAMS:
                reason = (
                    f"there is no column {name!r} (the columns are: {', '.join(columns)}); "
                    f"changing {key} would change the analysis"
                )
                self.ctx.emit(
                    RepairEvent, step=step.id, param=key, before=name, reason=reason, applied=False
                )
                raise _Refused(f"step {step.id}: {reason}")
            fixed.append(right or name)
        return fixed if isinstance(value, list) else fixed[0]

    def _template_default(self, tool: str, key: str) -> JsonValue:
        """A fixed value some template gives this tool's parameter (not a placeholder)."""
        for template in self.templates.values():
            for s in template.steps:
                value = s.params.get(key)
                if s.tool == tool and value is not None and not _PLACEHOLDER.match(str(value)):
                    return value
        return None

    def _log_repair(
        self, step: PipelineStep, param: str, before: JsonValue, after: JsonValue, reason: str
    ) -> None:
        self.ctx.emit(
            RepairEvent,
            step=step.id,
            param=param,
            before=before,
            after=after,
            reason=reason,
            applied=True,
        )

    async def _run_tool(self, step_id: str, tool: str, params: dict[str, JsonValue]) -> ToolOutcome:
        piece = CallPiece(tool, params, json.dumps(params, ensure_ascii=False), "json")
        prepared = self.task.executor.admit(piece, step=self.phase, call_id=f"step.{step_id}")
        if not isinstance(prepared, PreparedCall):
            return prepared
        return await self.task.executor.execute(prepared)

    def _answer(self, r: Requirements, steps: list[PipelineStep], done: _Execution) -> str:
        return self.task.workspace.render(
            "pipeline_answer.j2",
            requirements=r.model_dump(mode="json"),
            steps=[s.model_dump(mode="json") for s in steps if s.id in done.results],
            files=done.files,
            tables=done.tables,
            results={k: o.output for k, o in done.results.items()},
        ).strip()


_ADAPTATION = Adaptation.model_json_schema()


def _restore(
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


class _Refused(Exception):
    """A step cannot run as planned without changing the analysis: the plan is redone."""


class _OutOfSteps(Exception):
    """The strategy's step budget is spent."""


def _on_columns(r: Requirements, columns: list[str]) -> Requirements:
    """The requirements with column names spelled as the dataset spells them.

    :raises ValueError: a column the dataset does not have (the model is asked again)
    """
    by_lower = {c.lower(): c for c in columns}

    def fix(name: str, field: str) -> str:
        right = by_lower.get(name.strip().lower())
        if right is None:
            msg = f"{field}: there is no column {name!r}; the columns are: {', '.join(columns)}"
            raise ValueError(msg)
        return right

    time = r.time
    if time.column is not None:
        time = time.model_copy(update={"column": fix(time.column, "time.column")})
    return r.model_copy(
        update={
            "metrics": [fix(m, "metrics") for m in r.metrics],
            "group_by": [fix(g, "group_by") for g in r.group_by],
            "time": time,
        }
    )


def _with_time_column(r: Requirements, dataset: dict[str, Any]) -> tuple[Requirements, list[str]]:
    """A trend needs a time column: when the question asks for one and names none, the
    dataset's only date column is it."""
    dates = list(dataset.get("date_columns") or {})
    if "trend" not in r.analysis or r.time.column is not None or len(dates) != 1:
        return r, []
    time = r.time.model_copy(update={"column": dates[0]})
    note = f"time.column={dates[0]}: a trend needs a date column, and the data has one"
    return r.model_copy(update={"time": time}), [note]


def _requirement_texts(r: Requirements) -> list[str]:
    """Retrieval queries, one per requirement."""
    texts = [f"{a} of {', '.join(r.metrics) or 'the data'}" for a in r.analysis]
    if r.group_by:
        texts.append(f"group by {', '.join(r.group_by)}")
    if r.time.column:
        texts.append(f"over time by {r.time.column}")
    texts += [f"produce a {o}" for o in r.outputs]
    return texts


def _json(text: str) -> Any:
    """The JSON object in a model's answer (small models wrap it in prose or fences)."""
    text = text.strip()
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        text = text[start : end + 1]
    return json.loads(text)
