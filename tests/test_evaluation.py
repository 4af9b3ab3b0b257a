"""Pipeline metrics read from trajectories, over a question set, with a scripted model playing
the pipeline's three JSON answers; and the shipped regression set."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from analysis_answers import ASKED, INTENT, LABELS, NO_CHANGE, QUESTION

from agentrt import Agent, AgentSettings, ScriptedModel, Workspace
from agentrt.evaluation import (
    EvalQuestion,
    evaluate,
    load_questions,
    pipeline_metrics,
    summarize,
)
from agentrt.exceptions import UserError
from agentrt.planning.pipeline import requirement_labels
from agentrt.trajectory import Trajectory
from agentrt.workspace import default_workspace_path

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
SHIPPED = default_workspace_path() / "data" / "analysis_questions.jsonl"


async def test_metrics_over_a_question_set(tmp_path: Path) -> None:
    """A clean run and one whose model adds a step nobody asked for, scored exactly."""
    answers = [INTENT, ASKED, NO_CHANGE, INTENT, ASKED, ADD_ANOMALIES, NO_CHANGE]
    model = ScriptedModel([json.dumps(a) for a in answers])
    agent = Agent(Workspace(), model=model, settings=AgentSettings(trajectory_dir=tmp_path))
    questions = [
        EvalQuestion(id="clean", question=QUESTION, strategy="analysis", requirements=LABELS),
        EvalQuestion(
            id="eager",
            question=QUESTION,
            strategy="analysis",
            requirements=LABELS[:5],
            allowed_tools=["load_dataset", "parse_datetime", "aggregate", "plot_line"],
        ),
    ]
    seen: list[str] = []
    clean, eager = await evaluate(agent, questions, on_result=lambda r: seen.append(r.id))
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

    summary = summarize([clean, eager])
    assert summary.model_dump() == {
        "questions": 2,
        "ok": 2,
        "coverage_rate": 1.0,
        "unjustified_step_rate": 1 / 11,
        "retrieval_miss_rate": 0.0,
        "plan_repair_rate": 0.5,
        "requirement_precision": (1 + 5 / 7) / 2,
        "requirement_recall": 1.0,
        "disallowed_tool_rate": 1.0,
    }

    # The metrics come from the events alone: the recorded trajectory scores the same.
    assert eager.trajectory is not None
    recorded = Trajectory.read(eager.trajectory)
    assert pipeline_metrics(recorded.events) == eager.metrics


async def test_a_run_that_never_reads_requirements_has_no_pipeline_metrics(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(["not json", "still not json"])
    agent = Agent(Workspace(), model=model, settings=AgentSettings(trajectory_dir=tmp_path))
    question = EvalQuestion(id="q", question="hello", strategy="direct", requirements=["data"])
    (result,) = await evaluate(agent, [question])
    assert result.metrics is None
    assert result.requirement_precision is None
    assert summarize([result]).coverage_rate is None


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
