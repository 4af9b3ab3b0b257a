"""The `agentrt` command, run as a user runs it: a real process."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from agentrt import RunFinishedEvent, ToolCallEvent, event_adapter


def agentrt(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentrt", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_run_json_then_show_and_replay(tmp_path: Path) -> None:
    """`run --json` prints NDJSON events; `show` renders the recorded run; `replay` finds no
    difference."""
    done = agentrt("run", "--json", "--model", "demo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    events = [event_adapter.validate_json(line) for line in done.stdout.splitlines()]
    calls = [e.name for e in events if isinstance(e, ToolCallEvent)]
    assert calls == ["days_between", "calculate", "finish"]
    end = events[-1]
    assert isinstance(end, RunFinishedEvent)
    assert end.status == "ok"
    assert (
        end.answer
        == "From 2024-02-10 to 2025-03-01 there are 385 days; the square root of 1764 is 42.0."
    )

    (path,) = (tmp_path / "trajectories").glob("*/*.jsonl")
    shown = agentrt("show", str(path), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"# Run {path.stem}")
    assert "**days_between**" in shown.stdout

    replayed = agentrt("replay", str(path), cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "no difference" in replayed.stdout


def test_run_live(tmp_path: Path) -> None:
    """The terminal view shows the model, the streamed text, each call and the answer."""
    done = agentrt("run", "--model", "demo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "model: scripted demo" in done.stderr
    out = done.stdout
    assert "I need a date difference and a square root" in out
    assert '→ days_between {"start": "2024-02-10", "end": "2025-03-01"}' in out
    assert "✓ days_between" in out
    assert "385 days" in out
    assert "ok · 2 steps" in out


def test_bad_input(tmp_path: Path) -> None:
    """Errors are one clear line and exit status 2, not a traceback."""
    empty = agentrt("run", "  ", "--model", "demo", cwd=tmp_path)
    assert (empty.returncode, empty.stderr.strip()) == (2, "error: the query is empty")
    model = agentrt("run", "hi", "--model", "gpt-9", cwd=tmp_path)
    assert model.returncode == 2
    assert "unknown model 'gpt-9'" in model.stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_text("not json\n")
    shown = agentrt("show", str(broken), cwd=tmp_path)
    assert shown.returncode == 2
    assert "broken.jsonl:1: not a trajectory header" in shown.stderr


def test_the_live_view_shows_reasoning_apart() -> None:
    """Reasoning is dimmed and marked `thinking`, on lines of its own before the answer."""
    from io import StringIO

    from rich.console import Console

    from agentrt.cli import _Live

    out = StringIO()
    live = _Live(Console(file=out, force_terminal=True, color_system="standard", width=100))
    for kind, text in [
        ("reasoning_delta", "Two and "),
        ("reasoning_delta", "two."),
        ("text_delta", "4"),
    ]:
        live(
            event_adapter.validate_python(
                {"type": kind, "run_id": "r", "seq": 0, "t": 0.0, "step": 1, "text": text}
            )
        )
    shown = out.getvalue()
    plain = re.sub(r"\x1b\[[0-9;]*m", "", shown)
    assert plain == "thinking ›\nTwo and two.\n\n4"
    # Dim (2) and italic (3) for the reasoning, plain for the answer.
    assert "\x1b[2;3mTwo and \x1b[0m" in shown
    assert shown.endswith("\n4")
