"""`agentrt serve`, run as a user runs it: a real process on a real port."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import httpx
import pytest

from agentrt.cli import DEMO_QUESTION


def test_refuses_to_expose_a_server_without_a_token(tmp_path: Path) -> None:
    """Beyond loopback without a token: a one-line error and exit status 2, nothing served."""
    done = subprocess.run(
        [sys.executable, "-m", "agentrt", "serve", "--host", "0.0.0.0", "--model", "demo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr.strip()) == (
        2,
        "error: refusing to serve on 0.0.0.0 without a token: anyone who can reach it could run "
        "the agent and its tools. Give --token (or set AGENTRT_TOKEN), or bind to 127.0.0.1",
    )


@pytest.mark.parametrize(("stop", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_serves_runs(tmp_path: Path, stop: signal.Signals, status: int) -> None:
    """The server comes up on the port it was given (0: a free one, which it names), streams a
    run to a client with the token, refuses one without, and stops on Ctrl-C (or SIGTERM)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "agentrt", "serve", "--model", "demo", "--port", "0"],
        cwd=tmp_path,
        # PYTHONPATH kept: the process runs the agentrt under test, not another one installed.
        env={
            "AGENTRT_TOKEN": "secret",
            "PATH": "/usr/bin:/bin",
            **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
        },
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read(stream: IO[str]) -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)  # the process closed its stderr: it has ended

    assert process.stderr is not None
    threading.Thread(target=read, args=(process.stderr,), daemon=True).start()
    try:
        url: str | None = None
        said: list[str] = []
        while url is None:
            line = lines.get(timeout=60)
            assert line is not None, f"the server stopped before serving: {''.join(said)}"
            said.append(line)
            if found := re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", line):
                url = found.group(1)
        with httpx.Client(base_url=url, timeout=60) as client:
            refused = client.get("/trajectories")
            streamed = client.post(
                "/runs",
                json={"query": DEMO_QUESTION},
                headers={"Authorization": "Bearer secret", "Accept": "application/x-ndjson"},
            )
        assert refused.status_code == 401
        end = json.loads(streamed.text.splitlines()[-1])
        assert (end["type"], end["status"]) == ("run_finished", "ok")
        assert end["answer"].endswith("the square root of 1764 is 42.0.")
        assert list(tmp_path.glob("trajectories/*/*.jsonl")) != []
    finally:
        process.send_signal(stop)
        # Shut down cleanly, then exit as a program stopped by that signal does: 128 + it,
        # every time (uvicorn's raising the signal again made SIGINT's status a race).
        assert process.wait(timeout=30) == status


def test_freeze_startup() -> None:
    """`agentrt serve` keeps what its process made before serving out of the collector's scans
    (checked in a process of its own: freezing is for the rest of a process's life)."""
    code = (
        "import gc\n"
        "from agentrt.server.serve import freeze_startup\n"
        "garbage = []\n"
        "garbage.append(garbage)\n"
        "del garbage\n"
        "assert gc.get_freeze_count() == 0\n"
        "freeze_startup()\n"
        "assert gc.get_freeze_count() > 10_000, gc.get_freeze_count()\n"
        "assert gc.collect() == 0  # the cycle was freed first, not frozen\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
