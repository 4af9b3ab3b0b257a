"""The README opens with a quickstart that runs as written: pasted into a file and run, on the
dev install, with the real 0.5B model."""

from __future__ import annotations

import re
from pathlib import Path

from agentrt import ToolFinishedEvent, Trajectory
from tests.helpers import ROOT, run_python


def quickstart() -> str:
    """The README's first Python block."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^```python\n(.*?)^```$", readme, re.DOTALL | re.MULTILINE)
    assert found is not None, "README.md has no ```python block"
    return found.group(1)


def test_the_quickstart_comes_first_and_is_short() -> None:
    """Only the title and a one-sentence description come before it, and it is at most
    fifteen lines."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    title, description = readme.split("```python\n", 1)[0].strip().split("\n\n")
    assert title == "# agentrt"
    assert description.count(".") == 1
    assert len(quickstart().splitlines()) <= 15


def test_the_quickstart_runs_as_written(tmp_path: Path) -> None:
    """The 0.5B calls the tool and answers with its result; the run is recorded."""
    (tmp_path / "quickstart.py").write_text(quickstart(), encoding="utf-8")
    done = run_python("quickstart.py", cwd=tmp_path)
    assert "6912" in done.stdout
    (recorded,) = (tmp_path / "trajectories").rglob("*.jsonl")
    finished = [e for e in Trajectory.read(recorded).events if isinstance(e, ToolFinishedEvent)]
    # It may answer in text or by `finish` (which tool it is not asked about).
    assert [(e.name, e.output) for e in finished if e.name != "finish"] == [("add", 6912)]
