"""Evaluation read from trajectories: the `pipeline` planner's metrics over a question set.

A question set is JSON Lines, one question per line:

    {"id": "revenue-by-region", "question": "Compare total revenue across regions",
     "strategy": "analysis", "requirements": ["data", "analysis.total", "group_by"],
     "allowed_tools": ["load_dataset", "aggregate", "plot_bar", "save_dataframe"]}

Every metric comes from a run's events alone, so a recorded run scores as a live one did:

- requirement coverage rate: of the requirement labels, the share the model's first adapted
  plan covered, before the coverage gate asked again;
- unjustified step rate: of the steps of that first plan, the share no requirement justified;
- tool retrieval miss rate: of the requirement labels, the share no narrowed tool served
  (mended from the capability map, `tools_narrowed.missed`);
- plan repair rate: the share of runs whose plan needed the gate or the executor to step in
  (a coverage retry, a removed or restored step, a repaired or refused parameter);

and, where the question set says what to expect, requirement precision and recall (the labels
extracted against the expected ones) and the share of runs that called a tool outside the
question's allowed tools.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentrt.agent import Agent
from agentrt.events import (
    CoverageEvent,
    Event,
    PlanAdaptedEvent,
    RepairEvent,
    RequirementsEvent,
    RunStatus,
    ToolCallEvent,
    ToolsNarrowedEvent,
)
from agentrt.exceptions import UserError

__all__ = [
    "EvalQuestion",
    "EvalResult",
    "EvalSummary",
    "PipelineMetrics",
    "evaluate",
    "load_questions",
    "pipeline_metrics",
    "summarize",
]


class EvalQuestion(BaseModel):
    """One line of a question set."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    strategy: str | None = None
    """Run under this strategy instead of classifying."""
    requirements: list[str] | None = None
    """The requirement labels a correct reading of the question yields."""
    allowed_tools: list[str] | None = None
    """The tools a correct plan may call."""


class PipelineMetrics(BaseModel):
    """What one `pipeline` run's events say about its plan."""

    labels: list[str]
    """The requirement labels extracted."""
    covered: int
    """Labels the model's first plan covered."""
    steps: int
    """Steps of the model's first plan."""
    unjustified: int
    """Steps of that plan no requirement justified."""
    missed: int
    """Labels no narrowed tool served."""
    repairs: int
    """Coverage retries, removed or restored steps, and repaired or refused parameters."""


class EvalResult(BaseModel):
    """One question, run."""

    id: str
    status: RunStatus
    trajectory: str | None
    tools: list[str]
    """The tools called, in order."""
    metrics: PipelineMetrics | None
    """None when the run ended before reading the question's requirements."""
    requirement_precision: float | None = None
    requirement_recall: float | None = None
    disallowed: list[str] | None = None
    """Tools called outside the question's allowed tools (None: it names none)."""


class EvalSummary(BaseModel):
    """Rates over a question set; each None when no run gave it anything to measure."""

    questions: int
    ok: int
    coverage_rate: float | None
    unjustified_step_rate: float | None
    retrieval_miss_rate: float | None
    plan_repair_rate: float | None
    requirement_precision: float | None
    requirement_recall: float | None
    disallowed_tool_rate: float | None


def load_questions(path: Path) -> list[EvalQuestion]:
    """Read a question set; a bad line is a `UserError` naming the file and line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        msg = f"cannot read the question set {path}: {exc.strerror}"
        raise UserError(msg) from None
    questions: list[EvalQuestion] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            questions.append(EvalQuestion.model_validate_json(line))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"])
            msg = f"{path}:{number}: {where + ': ' if where else ''}{error['msg']}"
            raise UserError(msg) from None
    ids = [q.id for q in questions]
    if duplicates := sorted({i for i in ids if ids.count(i) > 1}):
        msg = f"{path}: duplicate question ids: {', '.join(duplicates)}"
        raise UserError(msg)
    if not questions:
        msg = f"{path}: no questions"
        raise UserError(msg)
    return questions


def pipeline_metrics(events: Sequence[Event]) -> PipelineMetrics | None:
    """The plan metrics of one run, or None when it never read the question's requirements."""
    requirements = next((e for e in events if isinstance(e, RequirementsEvent)), None)
    if requirements is None:
        return None
    first_plan = next((e for e in events if isinstance(e, PlanAdaptedEvent)), None)
    coverage = [e for e in events if isinstance(e, CoverageEvent)]
    narrowed = next((e for e in events if isinstance(e, ToolsNarrowedEvent)), None)
    return PipelineMetrics(
        labels=requirements.labels,
        covered=len(coverage[0].covered) if coverage else 0,
        steps=len(first_plan.steps) if first_plan else 0,
        unjustified=len(coverage[0].unjustified) if coverage else 0,
        missed=len(narrowed.missed) if narrowed else 0,
        repairs=sum(not c.ok and not c.removed for c in coverage)
        + sum(len(c.removed) + len(c.restored) for c in coverage)
        + sum(isinstance(e, RepairEvent) for e in events),
    )


def score(question: EvalQuestion, events: Sequence[Event], trajectory: Path | None) -> EvalResult:
    """Score one run of `question` from its events."""
    finished = events[-1] if events else None
    status: RunStatus = getattr(finished, "status", "error")
    tools = [e.name for e in events if isinstance(e, ToolCallEvent)]
    metrics = pipeline_metrics(events)
    result = EvalResult(
        id=question.id,
        status=status,
        trajectory=str(trajectory) if trajectory else None,
        tools=tools,
        metrics=metrics,
    )
    if question.requirements is not None and metrics is not None:
        got, expected = set(metrics.labels), set(question.requirements)
        result.requirement_precision = len(got & expected) / len(got) if got else 0.0
        result.requirement_recall = len(got & expected) / len(expected) if expected else 1.0
    if question.allowed_tools is not None:
        allowed = set(question.allowed_tools)
        result.disallowed = sorted({t for t in tools if t not in allowed})
    return result


async def evaluate(
    agent: Agent,
    questions: Sequence[EvalQuestion],
    on_result: Callable[[EvalResult], None] | None = None,
) -> list[EvalResult]:
    """Run every question through `agent`, one after another, and score each run."""
    results: list[EvalResult] = []
    for question in questions:
        run = await agent.run_to_completion(question.question, strategy=question.strategy)
        result = score(question, run.trajectory.events, run.path)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def summarize(results: Sequence[EvalResult]) -> EvalSummary:
    """The rates over a question set's results."""
    measured = [r.metrics for r in results if r.metrics is not None]
    labels = sum(len(m.labels) for m in measured)
    steps = sum(m.steps for m in measured)
    precision = [r.requirement_precision for r in results if r.requirement_precision is not None]
    recall = [r.requirement_recall for r in results if r.requirement_recall is not None]
    disallowed = [r.disallowed for r in results if r.disallowed is not None]
    return EvalSummary(
        questions=len(results),
        ok=sum(r.status == "ok" for r in results),
        coverage_rate=_ratio(sum(m.covered for m in measured), labels),
        unjustified_step_rate=_ratio(sum(m.unjustified for m in measured), steps),
        retrieval_miss_rate=_ratio(sum(m.missed for m in measured), labels),
        plan_repair_rate=_ratio(sum(m.repairs > 0 for m in measured), len(measured)),
        requirement_precision=_ratio(sum(precision), len(precision)),
        requirement_recall=_ratio(sum(recall), len(recall)),
        disallowed_tool_rate=_ratio(sum(bool(d) for d in disallowed), len(disallowed)),
    )


def _ratio(part: float, whole: int) -> float | None:
    return part / whole if whole else None
