"""The README's tracing snippet runs as written, offline, and prints the run's spans."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import ROOT, run_python


def snippet() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Tracing (OpenTelemetry)\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"^```python\n(.*?)^```$", section, re.DOTALL | re.MULTILINE)
    assert found is not None
    return found.group(1)


def test_the_tracing_snippet_prints_its_spans(tmp_path: Path) -> None:
    (tmp_path / "traced.py").write_text(snippet(), encoding="utf-8")
    done = run_python("traced.py", cwd=tmp_path)
    assert sorted(done.stdout.splitlines()) == [
        "chat scripted",
        "chat scripted",
        "execute_tool add",
        "invoke_agent agentrt",
    ]
    assert done.stdout.splitlines()[-1] == "invoke_agent agentrt"
