"""Logging: silent unless the application configures it; `configure_logging` follows
`sys.stderr` when a host swaps it."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from agentrt.logs import configure_logging, get_logger


def test_logs_go_to_stderr_as_it_is_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CLI invoked in-process (a test runner, typer's CliRunner) configures logging while
    stderr is its own capture and closes that afterwards: later lines must reach the stderr
    of the moment, not fail on the closed one."""
    first = io.StringIO()
    monkeypatch.setattr("sys.stderr", first)
    try:
        configure_logging(json=True)
        log = get_logger("agentrt.test")
        log.warning("while captured", n=1)
        first.close()
        later = io.StringIO()
        monkeypatch.setattr("sys.stderr", later)
        log.warning("after the capture closed", n=2)
        assert json.loads(later.getvalue())["event"] == "after the capture closed"
    finally:
        logger = logging.getLogger("agentrt")
        for handler in [h for h in logger.handlers if h.get_name() == "agentrt"]:
            logger.removeHandler(handler)
        logger.propagate = True
        logger.setLevel(logging.NOTSET)


PROGRAM = """
import asyncio, io, logging, sys
from pathlib import Path
from agentrt import Agent, AgentSettings, ScriptedModel
from tests.helpers import TEST_WORKSPACE, finish

buffer = io.StringIO()
if sys.argv[1] == "configured":
    logging.basicConfig(stream=buffer, format="%(name)s %(message)s %(run_id)s")
agent = Agent(
    workspace=TEST_WORKSPACE,
    model=ScriptedModel(["not a classification", finish("done")]),
    settings=AgentSettings(trajectory_dir=Path(sys.argv[2])),
)
result = asyncio.run(agent.run("hello"))
assert result.status == "ok", result.status
Path(sys.argv[2], "log.txt").write_text(buffer.getvalue())
"""


@pytest.mark.parametrize("setup", ["configured", "unconfigured"])
def test_a_library_prints_nothing(setup: str, tmp_path: Path) -> None:
    """A run whose classification fails logs a warning: into the application's `logging` set-up
    when it has one (with the run id), and nowhere at all when it has none — never on stdout
    or stderr."""
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, setup, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).parents[1],
    )
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("", "")
    logged = (tmp_path / "log.txt").read_text()
    if setup == "configured":
        assert logged.startswith("agentrt classification failed ")
    else:
        assert logged == ""
