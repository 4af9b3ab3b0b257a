"""Scores of one run, and of a question set. Every score comes from a run's events alone, so
a recorded run scores as a live one did:

- the answer against `expected_answer`: exact match and token F1 (`agentrt.eval.scoring`);
- the typed output against `expected_output`: the share of its fields right, and whether all
  are (`output` of `run_finished`; the answer text for a run without a typed output);
- the tools called against `expected_tools`: precision, recall and a trajectory match in the
  question's `match` mode (strict, unordered, subset, superset);
- steps, tokens and latency, from `run_finished`;
- for `pipeline` runs, the plan's metrics: requirement coverage rate (of the requirement
  labels, the share the model's first adapted plan covered, before the coverage gate asked
  again); unjustified step rate (of that plan's steps, the share no requirement justified);
  tool retrieval miss rate (of the labels, the share no narrowed tool served); plan repair rate
  (the share of runs whose plan needed the gate or the executor to step in);
- requirement precision and recall against `requirements`, and the share of runs that called a
  tool outside `allowed_tools`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, JsonValue

from agentrt.eval.questions import EvalQuestion
from agentrt.eval.scoring import (
    exact_match,
    output_fields,
    token_f1,
    tool_precision_recall,
    trajectory_match,
)
from agentrt.events import (
    AnswerDoubt,
    CoverageEvent,
    Event,
    PlanAdaptedEvent,
    RepairEvent,
    RequirementsEvent,
    RunFinishedEvent,
    RunStatus,
    ToolCallEvent,
    ToolsNarrowedEvent,
)

__all__ = [
    "EvalResult",
    "EvalSummary",
    "PipelineMetrics",
    "pipeline_metrics",
    "run_output",
    "score",
    "summarize",
]


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
    """One question, run and scored. A score is None when the question expects nothing it
    could be measured against."""

    id: str
    status: RunStatus
    error: str | None = None
    """Why the run failed, when it did."""
    doubt: AnswerDoubt | None = None
    """Why the answer of a run that ended `ok` is not one (`run_finished.doubt`): it is
    scored as no answer, and the run does not count as `ok`."""
    answer: str | None = None
    trajectory: str | None
    """The trajectory file, relative to the evaluation's output folder when it is inside it."""
    tools: list[str]
    """The tools called, in order (`finish`, how a run ends, left out)."""
    steps: int = 0
    tokens: int = 0
    """Prompt and completion tokens of every model call of the run."""
    latency: float = 0.0
    """The run's wall time, in seconds."""
    exact_match: bool | None = None
    f1: float | None = None
    output_fields: float | None = None
    """Of the fields `expected_output` gives, the share the run's output has right."""
    output_exact: bool | None = None
    """Whether the output has every expected field right."""
    tool_precision: float | None = None
    tool_recall: float | None = None
    trajectory_match: bool | None = None
    metrics: PipelineMetrics | None
    """None when the run ended before reading the question's requirements."""
    requirement_precision: float | None = None
    requirement_recall: float | None = None
    disallowed: list[str] | None = None
    """Tools called outside the question's allowed tools (None: it names none)."""


class EvalSummary(BaseModel):
    """Means and rates over a question set; each None when no run gave it anything to measure."""

    questions: int
    ok: int
    """Runs that ended `ok` with an answer not in doubt."""
    doubtful: int = 0
    """Runs that ended `ok` with an answer in doubt (a raw tool call, a tool's error, an answer
    after every call failed), counted as failed."""
    exact_match_rate: float | None = None
    f1: float | None = None
    """Mean answer F1."""
    output_fields: float | None = None
    """Mean share of the expected output fields right."""
    output_exact_rate: float | None = None
    """The share of outputs with every expected field right."""
    tool_precision: float | None = None
    tool_recall: float | None = None
    trajectory_match_rate: float | None = None
    steps: float | None = None
    """Mean steps per run."""
    tokens: float | None = None
    """Mean tokens per run."""
    latency: float | None = None
    """Mean latency, in seconds."""
    latency_p95: float | None = None
    """The latency 95% of the runs stayed within, in seconds."""
    coverage_rate: float | None
    unjustified_step_rate: float | None
    retrieval_miss_rate: float | None
    plan_repair_rate: float | None
    requirement_precision: float | None
    requirement_recall: float | None
    disallowed_tool_rate: float | None


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


def score(question: EvalQuestion, events: Sequence[Event], trajectory: str | None) -> EvalResult:
    """Score one run of `question` from its events."""
    finished = next((e for e in reversed(events) if isinstance(e, RunFinishedEvent)), None)
    tools = [e.name for e in events if isinstance(e, ToolCallEvent) and e.name != "finish"]
    metrics = pipeline_metrics(events)
    result = EvalResult(
        id=question.id,
        status=finished.status if finished else "error",
        error=finished.error if finished else "the run has no run_finished event",
        doubt=finished.doubt if finished else None,
        answer=finished.answer if finished else None,
        trajectory=trajectory,
        tools=tools,
        metrics=metrics,
    )
    if finished is not None:
        result.steps = finished.steps
        result.tokens = finished.usage.total_tokens
        result.latency = finished.timings.total
    if question.expected_answer is not None:
        # An answer in doubt is scored as none, as a failed run's is.
        answer = result.answer or "" if result.doubt is None else ""
        result.exact_match = exact_match(answer, question.expected_answer)
        result.f1 = token_f1(answer, question.expected_answer)
    if question.expected_output is not None:
        right, given = output_fields(run_output(finished), question.expected_output)
        result.output_fields, result.output_exact = right / given, right == given
    if question.expected_tools is not None:
        expected = question.expected_tools
        result.tool_precision, result.tool_recall = tool_precision_recall(tools, expected)
        result.trajectory_match = trajectory_match(tools, expected, question.match or "strict")
    if question.requirements is not None and metrics is not None:
        got, wanted = set(metrics.labels), set(question.requirements)
        result.requirement_precision = len(got & wanted) / len(got) if got else 0.0
        result.requirement_recall = len(got & wanted) / len(wanted) if wanted else 1.0
    if question.allowed_tools is not None:
        allowed = set(question.allowed_tools)
        result.disallowed = sorted({t for t in tools if t not in allowed})
    return result


def run_output(finished: RunFinishedEvent | None) -> JsonValue:
    """What a run put out: its typed output, or, without one, its answer text; None unless the
    run ended ok with an answer not in doubt (a failed run has none, a question asked back is
    no output, and neither is a raw tool call or a tool's error)."""
    if finished is None or finished.status != "ok" or finished.doubt is not None:
        return None
    return finished.output if finished.output is not None else finished.answer


def summarize(results: Sequence[EvalResult]) -> EvalSummary:
    """The means and rates over a question set's results."""
    measured = [r.metrics for r in results if r.metrics is not None]
    labels = sum(len(m.labels) for m in measured)
    steps = sum(m.steps for m in measured)
    disallowed = [r.disallowed for r in results if r.disallowed is not None]
    latencies = sorted(r.latency for r in results)
    return EvalSummary(
        questions=len(results),
        ok=sum(r.status == "ok" and r.doubt is None for r in results),
        doubtful=sum(r.status == "ok" and r.doubt is not None for r in results),
        exact_match_rate=_mean([r.exact_match for r in results]),
        f1=_mean([r.f1 for r in results]),
        output_fields=_mean([r.output_fields for r in results]),
        output_exact_rate=_mean([r.output_exact for r in results]),
        tool_precision=_mean([r.tool_precision for r in results]),
        tool_recall=_mean([r.tool_recall for r in results]),
        trajectory_match_rate=_mean([r.trajectory_match for r in results]),
        steps=_mean([r.steps for r in results]),
        tokens=_mean([r.tokens for r in results]),
        latency=_mean(latencies),
        # Nearest rank: the smallest latency at least 95% of the runs stayed within.
        latency_p95=latencies[math.ceil(0.95 * len(latencies)) - 1] if latencies else None,
        coverage_rate=_ratio(sum(m.covered for m in measured), labels),
        unjustified_step_rate=_ratio(sum(m.unjustified for m in measured), steps),
        retrieval_miss_rate=_ratio(sum(m.missed for m in measured), labels),
        plan_repair_rate=_ratio(sum(m.repairs > 0 for m in measured), len(measured)),
        requirement_precision=_mean([r.requirement_precision for r in results]),
        requirement_recall=_mean([r.requirement_recall for r in results]),
        disallowed_tool_rate=_ratio(sum(bool(d) for d in disallowed), len(disallowed)),
    )


def _mean(values: Sequence[float | bool | None]) -> float | None:
    """The mean of the values given (None: not measured); None when there are none."""
    given = [float(v) for v in values if v is not None]
    return _ratio(sum(given), len(given))


def _ratio(part: float, whole: int) -> float | None:
    return part / whole if whole else None
