"""The trajectory format: its published JSON Schema, the stored samples, and the reader's
handling of format versions."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from agentrt import Trajectory, __version__
from agentrt.cli import app
from agentrt.events import (
    GuardEvent,
    ModelResponseEvent,
    RunFinishedEvent,
    StrategySelectedEvent,
    ToolCallInvalidEvent,
    ToolFinishedEvent,
)
from agentrt.trajectory import format as trajectory_module
from agentrt.trajectory.format import FORMAT_VERSION, json_schema

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schemas" / "trajectory.schema.json"
SAMPLE_DIR = ROOT / "trajectories" / "samples"
SAMPLES = sorted(SAMPLE_DIR.rglob("*.jsonl"))
"""Samples of every format agentrt has written."""
CURRENT = sorted((SAMPLE_DIR / f"v{FORMAT_VERSION}").rglob("*.jsonl"))
"""Samples of today's format."""
FORMAT_1 = SAMPLE_DIR / "v1" / "testing" / "react_tools.jsonl"


def sample_id(path: Path) -> str:
    return str(path.relative_to(SAMPLE_DIR))


def lines_of(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def test_the_published_schema_is_current() -> None:
    """The committed schema is what the models generate today."""
    committed = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert committed == json_schema(), (
        "schemas/trajectory.schema.json is stale: run .venv/bin/python scripts/trajectory_schema.py"
    )


def test_the_schema_refuses_what_the_reader_refuses(validator: Any) -> None:
    """Not a schema that accepts anything: a bad status, a header second, no header."""
    lines = lines_of(CURRENT[0])
    finished = next(i for i, x in enumerate(lines) if x["type"] == "tool_finished")
    bad_status = [*lines[:finished], {**lines[finished], "status": "fine"}, *lines[finished + 1 :]]
    messages = [e.message for e in validator.iter_errors(bad_status)]
    assert messages, "a tool_finished with status 'fine' passed the schema"
    assert list(validator.iter_errors([lines[0], lines[0]])) != []
    assert list(validator.iter_errors(lines[1:])) != []


class TestSamples:
    def test_the_samples_cover_every_planner_and_the_tricky_events(self) -> None:
        """Together the samples hold each planner, an invalid call, a cached duplicate, a
        tool error and a timeout, a tool's own model call, and a run that asks the user."""
        runs = [Trajectory.read(p) for p in CURRENT]
        events = [e for t in runs for e in t.events]
        planners = {e.planner for e in events if isinstance(e, StrategySelectedEvent)}
        assert planners == {"react", "dag", "vm", "pipeline"}
        assert any(isinstance(e, ToolCallInvalidEvent) for e in events)
        assert any(isinstance(e, GuardEvent) and e.kind == "duplicate" for e in events)
        finished = {e.status for e in events if isinstance(e, ToolFinishedEvent)}
        assert finished >= {"ok", "error", "timeout"}
        assert any(
            isinstance(e, ModelResponseEvent) and e.purpose == "llm_generate" for e in events
        )
        statuses = {t.finished.status for t in runs if t.finished is not None}
        assert statuses == {"ok", "needs_input"}

    @pytest.mark.parametrize("path", SAMPLES, ids=sample_id)
    def test_each_sample_of_every_format_reads(self, path: Path) -> None:
        trajectory = Trajectory.read(path)
        assert f"v{trajectory.header.format_version}" == path.relative_to(SAMPLE_DIR).parts[0]
        assert isinstance(trajectory.events[-1], RunFinishedEvent)

    @pytest.mark.parametrize("path", CURRENT, ids=sample_id)
    def test_each_sample_of_today_s_format_fits_the_schema(
        self, path: Path, validator: Any
    ) -> None:
        """Every line of every stored sample validates against the published schema."""
        errors = [
            f"line {e.path[0] + 1}: {e.message}" for e in validator.iter_errors(lines_of(path))
        ]
        assert errors == []

    @pytest.mark.parametrize("path", SAMPLES, ids=sample_id)
    def test_each_sample_renders(self, path: Path) -> None:
        """`agentrt show` renders every stored sample."""
        shown = CliRunner().invoke(app, ["show", "--raw", str(path)])
        assert shown.exit_code == 0, shown.output
        trajectory = Trajectory.read(path)
        assert shown.output.startswith(f"# Run {trajectory.header.run_id}")
        assert trajectory.header.query in shown.output
        end = trajectory.finished
        assert end is not None
        assert end.answer is not None
        assert end.answer in shown.output


class TestVersions:
    def rewrite_header(self, source: Path, target: Path, **fields: Any) -> Path:
        lines = source.read_text(encoding="utf-8").splitlines()
        lines[0] = json.dumps({**json.loads(lines[0]), **fields})
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return target

    def test_a_newer_format_is_refused_naming_both_versions(self, tmp_path: Path) -> None:
        future = self.rewrite_header(
            CURRENT[0],
            tmp_path / "future.jsonl",
            format_version=FORMAT_VERSION + 1,
            agentrt_version="9.9.0",
        )
        expected = (
            f"future.jsonl: written by agentrt 9.9.0, format {FORMAT_VERSION + 1}; "
            f"this agentrt ({__version__}) reads up to format {FORMAT_VERSION}"
        )
        with pytest.raises(ValueError, match=re.escape(expected)):
            Trajectory.read(future)
        shown = CliRunner().invoke(app, ["show", str(future)])
        assert shown.exit_code == 2
        assert f"format {FORMAT_VERSION + 1}" in shown.output

    def test_an_older_format_goes_through_the_upgrades_in_turn(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With a format 2 and an upgrade 1 → 2, a format-1 file is read through the upgrade.
        (There is no format 2 yet: the upgrade here only restamps the header.)"""
        seen: list[int] = []

        def one_to_two(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
            seen.append(lines[0]["format_version"])
            return [{**lines[0], "format_version": 2}, *lines[1:]]

        monkeypatch.setattr(trajectory_module, "FORMAT_VERSION", 2)
        monkeypatch.setattr(trajectory_module, "UPGRADES", {1: one_to_two})
        today = Trajectory.read(FORMAT_1)
        assert seen == [1]
        assert today.header.format_version == 2
        monkeypatch.undo()
        assert today.events == Trajectory.read(FORMAT_1).events

    def test_a_gap_in_the_upgrades_is_named(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(trajectory_module, "FORMAT_VERSION", 3)
        monkeypatch.setattr(trajectory_module, "UPGRADES", {1: lambda lines: lines})
        with pytest.raises(ValueError, match="format 2 is not one agentrt has written"):
            Trajectory.read(CURRENT[0])

    def test_format_zero_is_not_a_header(self, tmp_path: Path) -> None:
        zero = self.rewrite_header(CURRENT[0], tmp_path / "zero.jsonl", format_version=0)
        with pytest.raises(ValueError, match=r"zero\.jsonl:1: not a trajectory header"):
            Trajectory.read(zero)

    def test_a_bad_event_line_is_named(self, tmp_path: Path) -> None:
        lines = CURRENT[0].read_text(encoding="utf-8").splitlines()
        lines[3] = json.dumps({**json.loads(lines[3]), "type": "teleported"})
        broken = tmp_path / "broken.jsonl"
        broken.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with pytest.raises(ValueError, match=r"broken\.jsonl:4: not an event"):
            Trajectory.read(broken)
