"""Logging set up by `configure_logging` follows `sys.stderr` when a host swaps it."""

from __future__ import annotations

import io
import json

import pytest
import structlog

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
        structlog.reset_defaults()
