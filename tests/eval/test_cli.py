"""`agentrt eval` end to end, with the scripted demo model: scores, the output folder, resuming,
and the HTML report."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentrt.eval.folder import EvalReport
from agentrt.trajectory.format import Trajectory

ANSWER = "From 2024-02-10 to 2025-03-01 there are 385 days; the square root of 1764 is 42.0."
"""What the demo model answers, whatever it is asked."""
ODD_ID = '<b>bold</b> & "quoted"'
QUESTIONS = [
    {
        "id": "both",
        "question": "How many days from 2024-02-10 to 2025-03-01, and the root of 1764?",
        "expected_answer": ANSWER,
        "expected_output": ANSWER.upper(),
        "expected_tools": ["days_between", "calculate"],
    },
    {
        "id": "root",
        "question": "What is the square root of 1764?",
        "expected_answer": "42.0",
        "expected_tools": ["calculate", "days_between"],
        "match": "unordered",
    },
    {
        "id": "days",
        "question": "How many days from 2024-02-10 to 2025-03-01?",
        "expected_answer": "385 days",
        "expected_output": {"days": 385},
        "expected_tools": ["days_between"],
        "match": "superset",
    },
    {"id": ODD_ID, "question": "Say something <script>alert(1)</script>"},
    {"id": "none", "question": "Hello there", "expected_tools": [], "match": "subset"},
]
# The demo's output is its answer text: the same as "both" expects, once normalised; not the
# object "days" expects.
OUTPUTS = {"both": (1.0, True), "days": (0.0, False)}
# The answer normalises to 14 tokens; "42.0" to the one token "420", which it contains.
SCORES = {
    "both": (True, 1.0, 1.0, 1.0, True),
    "root": (False, 2 / 15, 1.0, 1.0, True),
    "days": (False, 2 * (2 / 14) / (2 / 14 + 1), 0.5, 1.0, True),
    ODD_ID: (None, None, None, None, None),
    "none": (None, None, 0.0, 1.0, False),
}


def agentrt(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentrt", "eval", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("set") / "questions.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return path


@pytest.fixture(scope="module")
def first(dataset: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One evaluation of the set, two questions at a time, its results printed as JSON."""
    out = dataset.parent / "out"
    done = agentrt(
        dataset, "--model", "demo", "--out", out, "--concurrency", "2", "--json", cwd=dataset.parent
    )
    return out, done


def _report(out: Path) -> EvalReport:
    return EvalReport.model_validate_json((out / "results.json").read_text())


def _trajectories(out: Path) -> list[Path]:
    return sorted((out / "trajectories").rglob("*.jsonl"))


class TestAnEvaluation:
    def test_scores_every_question(
        self, first: tuple[Path, subprocess.CompletedProcess[str]]
    ) -> None:
        out, done = first
        assert done.returncode == 0, done.stderr
        report = _report(out)
        assert EvalReport.model_validate_json(done.stdout) == report
        assert [r.id for r in report.results] == [q["id"] for q in QUESTIONS]
        for r in report.results:
            scores = (r.exact_match, r.f1, r.tool_precision, r.tool_recall, r.trajectory_match)
            assert scores == pytest.approx(SCORES[r.id]), r.id
            assert (r.output_fields, r.output_exact) == OUTPUTS.get(r.id, (None, None)), r.id
            assert (r.status, r.answer, r.steps) == ("ok", ANSWER, 2)
            assert r.tools == ["days_between", "calculate"]
        s = report.summary
        assert (s.questions, s.ok) == (5, 5)
        assert s.exact_match_rate == pytest.approx(1 / 3)
        assert s.f1 == pytest.approx((1 + 2 / 15 + 0.25) / 3)
        assert (s.tool_precision, s.tool_recall) == (pytest.approx(2.5 / 4), 1.0)
        assert (s.trajectory_match_rate, s.steps) == (0.75, 2.0)
        assert (s.output_fields, s.output_exact_rate) == (0.5, 0.5)
        assert s.coverage_rate is None

    def test_steps_tokens_and_latency_come_from_each_trajectory(
        self, first: tuple[Path, subprocess.CompletedProcess[str]]
    ) -> None:
        out, _ = first
        results = _report(out).results
        assert len(_trajectories(out)) == len(results)
        for r in results:
            assert r.trajectory is not None
            end = Trajectory.read(out / r.trajectory).events[-1]
            assert end.type == "run_finished"
            assert (r.steps, r.tokens, r.latency) == (
                end.steps,
                end.usage.total_tokens,
                end.timings.total,
            )

    def test_results_are_appended_one_line_each(
        self, first: tuple[Path, subprocess.CompletedProcess[str]]
    ) -> None:
        out, _ = first
        lines = (out / "results.jsonl").read_text().splitlines()
        assert sorted(json.loads(line)["id"] for line in lines) == sorted(SCORES)

    def test_the_html_report_is_self_contained_and_escaped(
        self, first: tuple[Path, subprocess.CompletedProcess[str]]
    ) -> None:
        out, _ = first
        html = (out / "report.html").read_text()
        assert (
            len(re.findall(r'<img alt="[^"]+" src="data:image/png;base64,[A-Za-z0-9+/=]+">', html))
            == 3
        )
        assert "&lt;b&gt;bold&lt;/b&gt; &amp; &#34;quoted&#34;" in html
        assert "<b>bold" not in html
        assert "<script" not in html
        assert "<b>50.0%</b><span>output fields right (all right: 50.0%)</span>" in html
        assert 'href="http' not in html
        for r in _report(out).results:
            assert f'href="{r.trajectory}"' in html


class TestResuming:
    def test_a_rerun_runs_only_what_is_not_done(
        self, first: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
    ) -> None:
        """One result lost, one cut short by an interruption: those two run again."""
        out = shutil.copytree(first[0], tmp_path / "out")
        dataset = first[0].parent / "questions.jsonl"
        lines = (out / "results.jsonl").read_text().splitlines()
        kept = [line for line in lines if json.loads(line)["id"] not in ("root", "none")]
        cut = next(line for line in lines if json.loads(line)["id"] == "none")[:40]
        (out / "results.jsonl").write_text("".join(f"{line}\n" for line in kept) + cut)
        before = _report(first[0])

        done = agentrt(dataset, "--model", "demo", "--out", out, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "3 of 5 already done, running 2" in done.stderr
        assert len(_trajectories(out)) == 7
        after = _report(out)
        # A run's own: its wall time and its trajectory's name.
        varying = {"latency", "trajectory"}
        assert [r.model_dump(exclude=varying) for r in after.results] == [
            r.model_dump(exclude=varying) for r in before.results
        ]
        unchanged = {r.id: r for r in before.results if r.id not in ("root", "none")}
        assert [r for r in after.results if r.id in unchanged] == list(unchanged.values())

        again = agentrt(dataset, "--model", "demo", "--out", out, cwd=tmp_path)
        assert "5 of 5 already done, running 0" in again.stderr
        assert len(_trajectories(out)) == 7

    def test_restart_runs_everything_again(
        self, first: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
    ) -> None:
        out = shutil.copytree(first[0], tmp_path / "out")
        dataset = first[0].parent / "questions.jsonl"
        done = agentrt(dataset, "--model", "demo", "--out", out, "--restart", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "already done" not in done.stderr
        assert len(_trajectories(out)) == 5
        assert len((out / "results.jsonl").read_text().splitlines()) == 5

    def test_another_evaluation_in_the_same_folder_is_refused(
        self, first: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
    ) -> None:
        dataset = first[0].parent / "questions.jsonl"
        done = agentrt(dataset, "--model", "openai", "--out", first[0], cwd=tmp_path)
        assert done.returncode == 2
        assert "holds another evaluation" in done.stderr
        assert "with model 'demo'" in done.stderr
        assert "pass --restart" in done.stderr

    def test_a_damaged_results_line_is_named(
        self, first: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
    ) -> None:
        out = shutil.copytree(first[0], tmp_path / "out")
        dataset = first[0].parent / "questions.jsonl"
        lines = (out / "results.jsonl").read_text().splitlines()
        (out / "results.jsonl").write_text("".join(f"{line}\n" for line in ["{}", *lines[1:]]))
        done = agentrt(dataset, "--model", "demo", "--out", out, cwd=tmp_path)
        assert done.returncode == 2
        assert f"{out / 'results.jsonl'}:1: not a result" in done.stderr


def test_address_needs_the_ray_backend(dataset: Path, tmp_path: Path) -> None:
    done = agentrt(dataset, "--model", "demo", "--address", "auto", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == "error: --address is for --backend ray"
