"""Pipeline metrics read from trajectories, over a question set, with a scripted model playing
the pipeline's three JSON answers; and the shipped regression set."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel

from agentrt import Agent, AgentSettings, ScriptedModel, Workspace
from agentrt.eval.metrics import EvalResult, pipeline_metrics, score, summarize
from agentrt.eval.questions import EvalQuestion, load_questions
from agentrt.eval.runner import evaluate, run_question
from agentrt.exceptions import UserError
from agentrt.planning.pipeline import requirement_labels
from agentrt.trajectory.format import Trajectory
from agentrt.workspace import default_workspace_path
from tests.analysis_answers import (
    ASKED,
    INTENT,
    LABELS,
    NO_CHANGE,
    QUESTION,
    adapting_workspace,
)
from tests.helpers import MakeAgent, classified

ADD_ANOMALIES = {
    "changes": [
        {
            "op": "add",
            "step": "spikes",
            "tool": "detect_anomalies",
            "params": {"metric": "revenue"},
            "satisfies": ["analysis.anomaly"],
        }
    ]
}
PLANNED = ["load_dataset", "parse_datetime", "aggregate", "plot_line", "save_dataframe"]
"""The tools the adapted plan for `QUESTION` calls, in order."""
SHIPPED = default_workspace_path() / "data" / "analysis_questions.jsonl"


def _scripted(
    tmp_path: Path, answers: dict[str, list[dict[str, Any]]]
) -> Callable[[EvalQuestion], Awaitable[EvalResult]]:
    """Runs each question through an agent whose model plays that question's JSON answers,
    its changes to the plan asked for (the scoring of an added step is what is tested)."""
    workspace = adapting_workspace(tmp_path / "ws")

    async def run(question: EvalQuestion) -> EvalResult:
        model = ScriptedModel([json.dumps(a) for a in answers[question.id]])
        agent = Agent(
            workspace=workspace, model=model, settings=AgentSettings(trajectory_dir=tmp_path)
        )
        return await run_question(agent, question, relative_to=tmp_path)

    return run


async def test_metrics_over_a_question_set(tmp_path: Path) -> None:
    """A clean run and one whose model adds a step nobody asked for, scored exactly."""
    run = _scripted(
        tmp_path,
        {
            "clean": [INTENT, ASKED, NO_CHANGE],
            "eager": [INTENT, ASKED, ADD_ANOMALIES, NO_CHANGE],
        },
    )
    questions = [
        EvalQuestion(
            id="clean",
            question=QUESTION,
            strategy="analysis",
            requirements=LABELS,
            expected_tools=PLANNED,
        ),
        EvalQuestion(
            id="eager",
            question=QUESTION,
            strategy="analysis",
            requirements=LABELS[:5],
            allowed_tools=["load_dataset", "parse_datetime", "aggregate", "plot_line"],
            expected_tools=["plot_line", "load_dataset"],
            match="subset",
        ),
    ]
    seen: list[str] = []
    clean, eager = await evaluate(questions, run, on_result=lambda r: seen.append(r.id))
    assert seen == ["clean", "eager"]

    assert (clean.status, eager.status) == ("ok", "ok")
    assert clean.metrics is not None
    assert eager.metrics is not None
    assert clean.metrics.model_dump() == {
        "labels": LABELS,
        "covered": 7,
        "steps": 5,
        "unjustified": 0,
        "missed": 0,
        "repairs": 0,
    }
    # The gate asked again (one retry, still unjustified), then removed the step itself.
    assert eager.metrics.model_dump() == {
        "labels": LABELS,
        "covered": 7,
        "steps": 6,
        "unjustified": 1,
        "missed": 0,
        "repairs": 3,
    }
    assert (clean.requirement_precision, clean.requirement_recall) == (1.0, 1.0)
    assert (eager.requirement_precision, eager.requirement_recall) == (5 / 7, 1.0)
    assert clean.disallowed is None
    assert eager.disallowed == ["save_dataframe"]
    assert clean.tools == eager.tools == PLANNED
    assert (clean.tool_precision, clean.tool_recall, clean.trajectory_match) == (1.0, 1.0, True)
    assert (eager.tool_precision, eager.tool_recall, eager.trajectory_match) == (2 / 5, 1.0, False)
    assert (clean.exact_match, clean.f1) == (None, None)
    assert clean.answer is not None
    assert clean.answer.startswith("Files written:")
    assert clean.steps == 4
    assert clean.tokens > 0
    assert clean.latency > 0

    summary = summarize([clean, eager])
    assert summary.model_dump(exclude={"tokens", "latency", "latency_p95"}) == {
        "questions": 2,
        "ok": 2,
        "doubtful": 0,
        "exact_match_rate": None,
        "f1": None,
        "output_fields": None,
        "output_exact_rate": None,
        "tool_precision": (1 + 2 / 5) / 2,
        "tool_recall": 1.0,
        "trajectory_match_rate": 0.5,
        "steps": (clean.steps + eager.steps) / 2,
        "coverage_rate": 1.0,
        "unjustified_step_rate": 1 / 11,
        "retrieval_miss_rate": 0.0,
        "plan_repair_rate": 0.5,
        "requirement_precision": (1 + 5 / 7) / 2,
        "requirement_recall": 1.0,
        "disallowed_tool_rate": 1.0,
    }
    assert summary.tokens == (clean.tokens + eager.tokens) / 2
    assert summary.latency == (clean.latency + eager.latency) / 2
    assert summary.latency_p95 == max(clean.latency, eager.latency)

    # The scores come from the events alone: the recorded trajectory scores the same.
    assert eager.trajectory is not None
    assert not Path(eager.trajectory).is_absolute()
    recorded = Trajectory.read(tmp_path / eager.trajectory)
    assert pipeline_metrics(recorded.events) == eager.metrics
    assert score(questions[1], recorded.events, eager.trajectory) == eager


async def test_a_run_that_never_reads_requirements_has_no_pipeline_metrics(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(["not json", "still not json"])
    agent = Agent(
        workspace=Workspace(), model=model, settings=AgentSettings(trajectory_dir=tmp_path)
    )
    question = EvalQuestion(id="q", question="hello", strategy="direct", requirements=["data"])
    result = await run_question(agent, question)
    assert result.metrics is None
    assert result.requirement_precision is None
    assert summarize([result]).coverage_rate is None


class TestEvaluate:
    async def test_runs_at_most_the_concurrency_at_once_and_keeps_question_order(self) -> None:
        """Seven questions, three at a time; the last asked finishes first."""
        questions = [EvalQuestion(id=f"q{i}", question="?") for i in range(7)]
        running, peak = 0, 0
        finished: list[str] = []

        async def run(question: EvalQuestion) -> EvalResult:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            # Later questions pass fewer checkpoints, so they overtake earlier ones.
            for _ in range(10 - int(question.id[1:])):
                await anyio.lowlevel.checkpoint()
            running -= 1
            return EvalResult(id=question.id, status="ok", trajectory=None, tools=[], metrics=None)

        results = await evaluate(
            questions, run, concurrency=3, on_result=lambda r: finished.append(r.id)
        )
        assert peak == 3
        assert [r.id for r in results] == [q.id for q in questions]
        assert finished != [q.id for q in questions]
        assert sorted(finished) == sorted(q.id for q in questions)

    async def test_a_concurrency_below_one_is_refused(self) -> None:
        with pytest.raises(UserError, match="concurrency must be at least 1 \\(got 0\\)"):
            await evaluate([EvalQuestion(id="q", question="?")], _never, concurrency=0)


async def _never(question: EvalQuestion) -> EvalResult:
    raise AssertionError(question.id)


def test_the_shipped_regression_set() -> None:
    """At least 40 varied questions, each naming labels and tools that exist."""
    questions = load_questions(SHIPPED)
    assert len(questions) >= 40
    labels = set(requirement_labels())
    tools = set(Workspace().tools)
    for q in questions:
        assert q.strategy == "analysis"
        assert q.requirements, q.id
        assert set(q.requirements) <= labels, q.id
        assert q.allowed_tools, q.id
        assert set(q.allowed_tools) <= tools, q.id
    analyses = {label for q in questions for label in q.requirements or [] if "analysis." in label}
    assert analyses == {label for label in labels if label.startswith("analysis.")}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": "a", "question": "x"}\nnot json\n', "questions.jsonl:2: Invalid JSON"),
        ('{"id": "a"}\n', "questions.jsonl:1: question: Field required"),
        ('{"id": "a", "question": "x", "tools": []}\n', "questions.jsonl:1: tools: Extra inputs"),
        (
            '{"id": "a", "question": "x"}\n{"id": "a", "question": "y"}\n',
            "questions.jsonl: duplicate question ids: a",
        ),
        ("\n", "questions.jsonl: no questions"),
        (
            '{"id": "a", "question": "x", "expected_tools": ["f"], "match": "any"}\n',
            "questions.jsonl:1: match: Input should be 'strict', 'unordered', 'subset' or",
        ),
        (
            '{"id": "a", "question": "x", "match": "subset"}\n',
            "questions.jsonl:1: Value error, match 'subset' given without expected_tools",
        ),
        (
            '{"id": "a", "question": "x", "expected_tools": "calculate"}\n',
            "questions.jsonl:1: expected_tools: Input should be a valid array",
        ),
    ],
)
def test_a_bad_question_set_names_the_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "questions.jsonl"
    path.write_text(content)
    with pytest.raises(UserError) as caught:
        load_questions(path)
    assert message in str(caught.value)


def test_eval_command_rejects_a_bad_set_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "questions.jsonl"
    path.write_text('{"id": "a"}\n')
    done = subprocess.run(
        [sys.executable, "-m", "agentrt", "eval", str(path), "--model", "demo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {path}:1: question: Field required"


class Days(BaseModel):
    days: int
    unit: str


async def test_outputs_are_scored_per_field(make_agent: MakeAgent) -> None:
    """A run without a typed output is scored on its answer text; a typed output, as
    `run_finished` records it, per field; a run that failed has no output to score."""
    plain = EvalQuestion(id="plain", question="How many days?", expected_output="385 days")
    typed = EvalQuestion(
        id="typed", question="How many days?", expected_output={"days": 385, "unit": "day"}
    )
    agent = make_agent([classified("direct"), "385 days."])
    answered = await run_question(agent, plain)
    assert (answered.status, answered.output_fields, answered.output_exact) == ("ok", 1.0, True)

    agent = make_agent([classified("direct"), '{"days": 385, "unit": "day"}'])
    as_text = await run_question(agent, typed)  # JSON text, but no typed output
    assert (as_text.status, as_text.output_fields) == ("ok", 0.0)
    for answer, fields in [
        ('{"days": 385.0, "unit": "Day"}', 1.0),
        ('{"days": 386, "unit": "day"}', 0.5),
    ]:
        typed_agent = Agent(
            ScriptedModel([answer]), output_type=Days, settings=AgentSettings(trajectory_dir=None)
        )
        result = await run_question(typed_agent, typed)
        assert (result.output_fields, result.output_exact) == (fields, fields == 1.0)

    agent = make_agent([classified("direct")])  # the script ends before any answer
    failed = await run_question(agent, plain)
    assert (failed.status, failed.output_fields, failed.output_exact) == ("error", 0.0, False)
    summary = summarize([answered, failed])
    assert (summary.output_fields, summary.output_exact_rate) == (0.5, 0.5)
