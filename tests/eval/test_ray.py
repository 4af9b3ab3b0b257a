"""The Ray backend gives the local backend's results, on a local Ray instance (one per module)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
from typer.testing import CliRunner

from agentrt.cli import app
from agentrt.eval.folder import EvalReport
from agentrt.eval.metrics import EvalResult, summarize
from agentrt.eval.questions import EvalQuestion
from agentrt.eval.ray import ray_runner
from agentrt.eval.runner import EvalSpec, Evaluator, evaluate

QUESTIONS = [
    EvalQuestion(
        id="both",
        question="How many days from 2024-02-10 to 2025-03-01, and the root of 1764?",
        expected_answer="there are 385 days; the square root of 1764 is 42.0",
        expected_tools=["days_between", "calculate"],
    ),
    EvalQuestion(
        id="root",
        question="What is the square root of 1764?",
        expected_answer="42",
        expected_tools=["calculate"],
        match="superset",
    ),
    EvalQuestion(id="hello", question="Hello there", expected_tools=[], match="subset"),
]
VARYING = {"latency", "trajectory"}
"""A run's own: its wall time and its trajectory's name."""


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2)
    yield
    ray.shutdown()


def _comparable(results: list[EvalResult]) -> list[dict[str, object]]:
    return [r.model_dump(exclude=VARYING) for r in results]


@pytest.mark.usefixtures("local_ray")
async def test_ray_tasks_score_as_the_local_backend_does(tmp_path: Path) -> None:
    """Each task rebuilds the agent from the spec; trajectories land in the output folder."""
    local_spec = EvalSpec(model="demo", output=tmp_path / "local")
    ray_spec = EvalSpec(model="demo", output=tmp_path / "ray")
    here = await evaluate(QUESTIONS, Evaluator(local_spec).run, concurrency=2)
    with ray_runner(ray_spec) as run:
        there = await evaluate(QUESTIONS, run, concurrency=2)

    assert _comparable(there) == _comparable(here)
    assert [r.tool_recall for r in there] == [1.0, 1.0, 1.0]
    assert [r.trajectory_match for r in there] == [True, True, False]
    latency = {"latency", "latency_p95"}
    assert summarize(there).model_dump(exclude=latency) == summarize(here).model_dump(
        exclude=latency
    )
    for r in there:
        assert r.trajectory is not None
        assert (ray_spec.output / r.trajectory).is_file()
    # A Ray this process had started before is left running.
    assert ray.is_initialized()


@pytest.mark.usefixtures("local_ray")
def test_the_eval_command_on_ray(tmp_path: Path) -> None:
    """`--backend ray` writes the same results.json as the local backend."""
    dataset = tmp_path / "questions.jsonl"
    dataset.write_text("".join(q.model_dump_json(exclude_none=True) + "\n" for q in QUESTIONS))
    reports = {}
    for backend in ("local", "ray"):
        out = tmp_path / backend
        args = ["eval", str(dataset), "--model", "demo", "--out", str(out), "--backend", backend]
        done = CliRunner().invoke(app, args)
        assert done.exit_code == 0, done.output
        reports[backend] = EvalReport.model_validate_json((out / "results.json").read_text())
    local, remote = reports["local"], reports["ray"]
    assert _comparable(remote.results) == _comparable(local.results)
    assert remote.evaluation == local.evaluation
    assert (out / "report.html").is_file()


def test_importing_agentrt_does_not_import_ray() -> None:
    code = "import sys, agentrt, agentrt.cli, agentrt.eval.ray; print('ray' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "False"
