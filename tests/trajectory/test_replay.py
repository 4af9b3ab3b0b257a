"""Replay as a regression check: a folder of recorded runs against today's code, with live
or recorded tools, through the API and through `agentrt replay`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrt import Trajectory, Workspace
from agentrt.cli import app
from agentrt.events import ModelResponseEvent, ToolCallEvent, ToolFinishedEvent
from agentrt.exceptions import ToolError
from agentrt.models.base import ModelRequest
from agentrt.tool import ToolContext
from agentrt.trajectory import replay as replay_module
from agentrt.trajectory.format import FORMAT_VERSION
from agentrt.trajectory.replay import (
    Difference,
    RecordedTools,
    first_difference,
    replay,
    replay_files,
    trajectory_files,
)
from tests.helpers import TEST_WORKSPACE, MakeAgent, call, classified

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "trajectories" / "samples" / f"v{FORMAT_VERSION}"
SAMPLE_WORKSPACES = {
    "testing": TEST_WORKSPACE,
    "default": ROOT,
    "dbcopilot": ROOT / "workspaces" / "dbcopilot",
}
"""Each folder of samples, and the workspace its runs were recorded over."""


@pytest.fixture
async def runs(make_agent: MakeAgent, tmp_path: Path) -> Path:
    """A folder of three runs of today's code over the test workspace: a react run with
    parallel calls, one with an invalid and a cached call, and a dag plan."""
    await make_agent(
        [
            classified("exploratory"),
            "Both at once. " + call("add", a=2, b=3) + call("echo", text="hi"),
            call("finish", answer="2 + 3 = 5"),
        ]
    ).run("What is 2 + 3?")
    await make_agent(
        [
            call("add", a=1, b="one") + call("add", a=1, b=1),
            call("add", a=1, b=1),
            call("finish", answer="2"),
        ]
    ).run("What is 1 + 1?", strategy="exploratory")
    plan = {
        "plan": "",
        "nodes": [
            {"id": "T1", "tool": "add", "args": {"a": 4, "b": 4}, "depends_on": []},
            {"id": "T2", "tool": "echo", "args": {"text": "{T1}"}, "depends_on": ["T1"]},
        ],
    }
    joined = {"action": "finish", "answer": "8", "reason": "done"}
    await make_agent([json.dumps(plan), json.dumps(joined)]).run("Go", strategy="planned")
    return tmp_path / "trajectories"


@pytest.fixture
def multiplying(tmp_path: Path) -> Path:
    """The test workspace with `add` changed to multiply: today's code has a regression."""
    changed = Path(shutil.copytree(TEST_WORKSPACE, tmp_path / "changed"))
    pack = changed / "tools" / "testing.py"
    pack.write_text(pack.read_text().replace("return a + b", "return a * b"))
    return changed


def add_unreplayable(runs: Path, gone: Path) -> None:
    """Beside the good runs: a file that is not JSON, an empty one, a run whose workspace is
    gone, and one recorded with a setting today's agent does not have."""
    (runs / "broken.jsonl").write_text("not json\n")
    (runs / "empty.jsonl").write_text("")
    lines = next(runs.rglob("2*.jsonl")).read_text().splitlines()
    header = json.loads(lines[0])
    for name, changed in (
        ("moved", {"workspace": str(gone)}),
        ("unknown_setting", {"settings": {**header["settings"], "warp_speed": 9}}),
    ):
        lines[0] = json.dumps({**header, **changed})
        (runs / f"{name}.jsonl").write_text("\n".join(lines) + "\n")


class TestFolders:
    async def test_unchanged_code_replays_every_run_the_same(self, runs: Path) -> None:
        # `agentrt eval` keeps its results beside the runs: JSON lines, but no trajectory.
        (runs / "results.jsonl").write_text('{"id": "q1", "status": "ok"}\n')
        files = trajectory_files(runs)
        assert len(files) == 3
        assert runs / "results.jsonl" not in files
        reports = await replay_files(files)
        assert [r.outcome for r in reports] == ["same"] * 3
        assert all(r.events > 0 and r.difference is None for r in reports)

    async def test_a_changed_tool_shows_where_each_run_differs(
        self, runs: Path, multiplying: Path
    ) -> None:
        """Live tools: every run that adds now differs, at the add's result."""
        reports = await replay_files(trajectory_files(runs), workspace=multiplying)
        differences = [r.difference for r in reports]
        assert [r.outcome for r in reports] == ["differs"] * 3
        summaries = {d.summary() for d in differences if d is not None}
        assert summaries == {
            "tool_finished add call_1_1: output: 5 → 6",
            "tool_finished add call_1_2: output: 2 → 1",
            "tool_finished add T1: output: 8 → 16",
        }

    async def test_recorded_tools_make_the_changed_tool_irrelevant(
        self, runs: Path, multiplying: Path
    ) -> None:
        reports = await replay_files(
            trajectory_files(runs), workspace=multiplying, tools="recorded"
        )
        assert [r.outcome for r in reports] == ["same"] * 3

    async def test_a_run_that_cannot_be_replayed_is_an_error_and_the_rest_go_on(
        self, runs: Path, tmp_path: Path
    ) -> None:
        add_unreplayable(runs, tmp_path / "gone")
        reports = {Path(r.path).name: r for r in await replay_files(trajectory_files(runs))}
        assert [r.outcome for r in reports.values()].count("same") == 3
        assert reports["broken.jsonl"].outcome == "error"
        assert "broken.jsonl:1: not a trajectory header" in (reports["broken.jsonl"].error or "")
        assert "empty file, not a trajectory" in (reports["empty.jsonl"].error or "")
        assert reports["moved.jsonl"].error == f"workspace {tmp_path / 'gone'} is not a folder"
        assert reports["unknown_setting.jsonl"].error == (
            "the recorded settings do not fit today's agent: warp_speed: Extra inputs are not "
            "permitted"
        )

    @pytest.mark.parametrize("tools", ["live", "recorded"])
    @pytest.mark.parametrize("folder", sorted(SAMPLE_WORKSPACES))
    async def test_the_stored_samples_replay_the_same(self, folder: str, tools: Any) -> None:
        """The samples (every planner, errors, a timeout, a question back) replay with today's
        code, whether the tools run or answer from the recording."""
        files = trajectory_files(SAMPLES / folder)
        reports = await replay_files(files, workspace=SAMPLE_WORKSPACES[folder], tools=tools)
        assert {r.path: r.outcome for r in reports} == {str(f): "same" for f in files}

    async def test_a_workspace_in_another_folder_is_no_difference(self, tmp_path: Path) -> None:
        """The pipeline sample names its data file by its path in the recorded workspace; in
        another checkout (here a copy) that path differs, what the run did does not."""
        moved = Path(shutil.copytree(ROOT / "data", tmp_path / "checkout" / "data")).parent
        for folder in ("strategies", "tools", "registry", "prompts"):
            shutil.copytree(ROOT / folder, moved / folder)
        sample = SAMPLES / "default" / "pipeline.jsonl"
        recorded_root = Trajectory.read(sample).header.workspace
        assert f"{recorded_root}/data/sales.csv" in sample.read_text()
        [report] = await replay_files([sample], workspace=moved)
        assert (report.outcome, report.difference) == ("same", None)


class TestRecordedTools:
    async def test_no_tool_runs(self, runs: Path, workspace: Workspace, seen: Any) -> None:
        """`echo` notes every call it gets; with recorded tools it gets none."""
        for path in trajectory_files(runs):
            _, difference = await replay(Trajectory.read(path), tools="recorded")
            assert difference is None
        assert seen.threads == []

    async def test_errors_and_timeouts_are_answered_as_recorded(self) -> None:
        """The sample's failing call and its 0.2 s timeout come back in the same words."""
        t = Trajectory.read(SAMPLES / "testing" / "react_tools.jsonl")
        again, difference = await replay(t, workspace=TEST_WORKSPACE, tools="recorded")
        assert difference is None
        results = {
            e.name: (e.status, e.error) for e in again.events if isinstance(e, ToolFinishedEvent)
        }
        assert results["fail"] == ("error", "no data for that")
        assert results["hang"] == ("timeout", "hang did not finish within 0.2 s")

    async def test_a_call_the_recording_lacks_is_a_difference_not_a_crash(self, runs: Path) -> None:
        """Today's code calls `add` with other arguments: the call gets an error result naming
        it, the run goes on to its end, and replay reports where it parted ways."""
        recorded = [Trajectory.read(p) for p in trajectory_files(runs)]
        t = next(t for t in recorded if t.header.query == "What is 2 + 3?")
        events = [
            e.model_copy(update={"text": e.text.replace('"a": 2', '"a": 7')})
            if isinstance(e, ModelResponseEvent) and e.purpose == "turn"
            else e
            for e in t.events
        ]
        again, difference = await replay(
            t.model_copy(update={"events": events}), workspace=TEST_WORKSPACE, tools="recorded"
        )
        assert difference is not None
        assert difference.recorded is not None
        assert difference.replayed is not None
        assert difference.recorded["type"] == "tool_call"
        assert difference.replayed["arguments"] == {"a": 7, "b": 3}
        add = next(e for e in again.events if isinstance(e, ToolFinishedEvent) and e.name == "add")
        assert add.status == "error"
        assert (
            add.error == 'replay: the recording has no (further) call of add with {"a": 7, "b": 3}'
        )
        assert again.finished is not None
        assert again.finished.status == "ok"

    async def test_recorded_tools_leave_the_workspace_s_tools_as_the_model_sees_them(
        self, workspace: Workspace
    ) -> None:
        """The runner answers in place of the tools: the replay offers the same names and
        schema hashes, built-ins included, and the workspace's tools stay its own."""
        t = Trajectory.read(SAMPLES / "testing" / "dag.jsonl")
        again, difference = await replay(t, workspace=workspace, tools="recorded")
        assert difference is None
        assert again.header.tools == {n: workspace.tools[n].schema_hash for n in t.header.tools}
        assert again.header.workspace_fingerprint == workspace.fingerprint
        assert workspace.tools["add"].fn.__name__ == "add"

    async def test_the_runner_answers_from_the_recording(self) -> None:
        """A call gets the recorded output of the same tool and arguments, once."""
        t = Trajectory.read(SAMPLES / "testing" / "dag.jsonl")
        recorded = next(e for e in t.events if isinstance(e, ToolFinishedEvent) and e.name == "add")
        call_event = next(
            e for e in t.events if isinstance(e, ToolCallEvent) and e.call_id == recorded.call_id
        )
        runner = RecordedTools(t)
        add = Workspace(TEST_WORKSPACE).tools["add"]
        arguments = dict(add.args_model.model_validate(call_event.arguments))
        context = ToolContext(
            run_id="r",
            session_id=None,
            call_id=recorded.call_id,
            step=1,
            scope=None,
            add_session_tool=lambda _: None,
            complete=_never,
            artifacts={},
            output_dir=Path("unused"),
            deps=None,
        )
        assert await runner(add, arguments, context) == recorded.output
        with pytest.raises(ToolError, match="the recording has no \\(further\\) call of add"):
            await runner(add, arguments, context)


async def _never(request: ModelRequest) -> str:
    raise AssertionError


class TestDifference:
    def test_summaries(self) -> None:
        call_event = {"type": "tool_call", "name": "add", "call_id": "c1", "arguments": {"a": 1}}
        assert (
            Difference(4, 9, call_event, {**call_event, "arguments": {"a": 2}}).summary()
            == 'tool_call add c1: arguments: {"a": 1} → {"a": 2}'
        )
        invalid = {"type": "tool_call_invalid", "call_id": "c1", "name": "add"}
        assert (
            Difference(4, 9, call_event, invalid).summary()
            == "recorded tool_call add c1, today tool_call_invalid add c1"
        )
        assert (
            Difference(4, None, None, call_event).summary()
            == "the recording ended first; the other has tool_call add c1"
        )
        assert (
            Difference(4, 9, call_event, None).summary()
            == "today's run ended first; the other has tool_call add c1"
        )


class TestFloats:
    """Scores recorded on one CPU and replayed on another differ in their last digits; what a
    run did is the same. A real change of ranking is still a difference."""

    SAMPLE = SAMPLES / "default" / "pipeline.jsonl"
    RECORDED = "0.9094357197048323"

    def changed(self, tmp_path: Path, old: str, new: str) -> Trajectory:
        text = self.SAMPLE.read_text()
        assert old in text
        path = tmp_path / "changed.jsonl"
        path.write_text(text.replace(old, new))
        return Trajectory.read(path)

    def test_the_last_digits_of_a_score_are_no_difference(self, tmp_path: Path) -> None:
        """A score as another machine gives it: the same to 7 digits (as one seen on two
        machines was)."""
        recorded = Trajectory.read(self.SAMPLE)
        replayed = self.changed(tmp_path, self.RECORDED, "0.909435675329386")
        assert first_difference(recorded.events, replayed.events) is None

    def test_a_score_that_moves_is_a_difference(self, tmp_path: Path) -> None:
        recorded = Trajectory.read(self.SAMPLE)
        replayed = self.changed(tmp_path, self.RECORDED, "0.9064")
        difference = first_difference(recorded.events, replayed.events)
        assert difference is not None
        assert self.RECORDED in difference.summary(limit=100_000)

    def test_another_order_of_tools_is_a_difference(self, tmp_path: Path) -> None:
        recorded = Trajectory.read(self.SAMPLE)
        plot = '{"name":"plot_line","source":"template","score":1.0,"duplicates":[]}'
        save = '{"name":"save_dataframe","source":"template","score":null,"duplicates":[]}'
        swapped = self.changed(tmp_path, f"{plot},{save}", f"{save},{plot}")
        assert first_difference(recorded.events, swapped.events) is not None

    @pytest.mark.parametrize(
        ("a", "b", "same"),
        [
            (1.0, 1.0 + 1e-7, True),
            (0.0, 1e-7, True),
            (1.0, 1.001, False),
            (1, 2, False),
            ("0.5", 0.5, False),
            ([1.0, 2.0], [2.0, 1.0], False),
            ({"a": 1.0}, {"a": 1.0, "b": None}, False),
        ],
    )
    def test_what_counts_as_the_same(self, a: Any, b: Any, same: bool) -> None:
        assert replay_module.same(a, b) is same
        assert replay_module.same(b, a) is same


class TestCommand:
    def test_a_folder_that_replays_the_same(self, runs: Path) -> None:
        done = CliRunner().invoke(app, ["replay", str(runs)])
        assert done.exit_code == 0, done.output
        assert done.output.count("same    ") == 3
        assert "no difference in" in done.output
        assert done.output.endswith(
            "3 run(s), tools live: 3 same, 0 differ, 0 could not be replayed\n"
        )

    def test_differences_exit_1_then_recorded_tools_exit_0(
        self, runs: Path, multiplying: Path
    ) -> None:
        live = CliRunner().invoke(app, ["replay", str(runs), "--workspace", str(multiplying)])
        assert live.exit_code == 1, live.output
        assert live.output.count("differs ") == 3
        assert "tool_finished add T1: output: 8 → 16" in live.output
        recorded = CliRunner().invoke(
            app, ["replay", str(runs), "--workspace", str(multiplying), "--tools", "recorded"]
        )
        assert recorded.exit_code == 0, recorded.output

    def test_json_for_ci(self, runs: Path, multiplying: Path) -> None:
        (runs / "broken.jsonl").write_text("not json\n")
        done = CliRunner().invoke(
            app, ["replay", str(runs), "--workspace", str(multiplying), "--json"]
        )
        assert done.exit_code == 1
        payload = json.loads(done.stdout)
        assert payload["tools"] == "live"
        assert payload["summary"] == {"runs": 4, "same": 0, "differs": 3, "error": 1}
        broken = next(r for r in payload["runs"] if r["outcome"] == "error")
        assert broken["path"].endswith("broken.jsonl")
        differing = [r["difference"] for r in payload["runs"] if r["outcome"] == "differs"]
        assert {(d["recorded"]["output"], d["replayed"]["output"]) for d in differing} == {
            (5, 6),
            (2, 1),
            (8, 16),
        }

    def test_usage_errors_exit_2(self, tmp_path: Path) -> None:
        empty = CliRunner().invoke(app, ["replay", str(tmp_path)])
        assert empty.exit_code == 2
        assert "no trajectory files (*.jsonl) in this folder" in empty.output
        missing = CliRunner().invoke(app, ["replay", str(tmp_path / "nope.jsonl")])
        assert missing.exit_code == 2
        bad_mode = CliRunner().invoke(app, ["replay", str(tmp_path), "--tools", "cached"])
        assert bad_mode.exit_code == 2
        assert "'cached'" in bad_mode.output
