"""`agentrt mcp`, run as an MCP host runs it: a subprocess spoken to by the `mcp` SDK's own client
over its stdin and stdout."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import IncomingMessage

from agentrt import RunFinishedEvent, Trajectory
from agentrt.cli import DEMO_QUESTION
from tests.helpers import ROOT, call, finish
from tests.server.serving import wait_until

HANGING = Path(__file__).parent / "hanging"
"""Two strategies and the demo model's two tools, which never return."""

DEMO_ANSWER = "From 2024-02-10 to 2025-03-01 there are 385 days; the square root of 1764 is 42.0."


def agentrt_mcp(cwd: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentrt", "mcp", "--model", "demo", *args],
        cwd=cwd,
        # PYTHONPATH kept: the process runs the agentrt under test, not another one installed.
        env={k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
    )


class Frames:
    """What the client received besides responses: notifications, and anything on the
    server's stdout that did not parse as JSON-RPC (the SDK hands it over as an exception)."""

    def __init__(self) -> None:
        self.notifications: list[types.ServerNotification] = []
        self.garbage: list[Exception] = []

    async def __call__(self, message: IncomingMessage) -> None:
        if isinstance(message, Exception):
            self.garbage.append(message)
        else:
            self.notifications.append(message)


async def test_serves_the_agent_over_stdio(tmp_path: Path) -> None:
    """The tools are `ask` and one per strategy; a call streams the run as progress messages
    and returns the answer, with the status and trajectory as structured content; nothing
    but JSON-RPC comes out of stdout."""
    frames = Frames()
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async with Client(agentrt_mcp(tmp_path), message_handler=frames) as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == [
            "ask",
            "ask_analysis",
            "ask_direct",
            "ask_exploratory",
        ]
        assert listed.tools[1].description is not None
        assert "sales data" in listed.tools[1].description
        assert listed.tools[0].input_schema["required"] == ["question"]
        result = await client.call_tool(
            "ask", {"question": DEMO_QUESTION}, progress_callback=on_progress
        )
    assert result.is_error is False, result
    assert result.content == [types.TextContent(type="text", text=DEMO_ANSWER)]
    structured = result.structured_content
    assert structured is not None
    (path,) = (tmp_path / "trajectories").glob("*/*.jsonl")
    assert structured == {
        "status": "ok",
        "answer": DEMO_ANSWER,
        "output": None,
        "error": None,
        "doubt": None,
        "run_id": path.stem,
        "session_id": None,
        "trajectory": str(path.resolve()),
    }
    messages = [m for _, m in progress]
    assert messages[0] == f"run {path.stem} started on scripted-demo"
    assert "classified as exploratory (model)" in messages
    assert 'calling days_between {"start": "2024-02-10", "end": "2025-03-01"}' in messages
    assert any(m and m.startswith("days_between returned in ") for m in messages)
    assert messages[-1] == "run finished ok after 2 steps"
    values = [v for v, _ in progress]
    assert values == sorted(set(values))  # progress only grows, as the protocol requires
    assert frames.garbage == []


def readme_snippet() -> str:
    """The Python block of the README's section on serving MCP."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## agentrt as an MCP server\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"^```python\n(.*?)^```$", section, re.DOTALL | re.MULTILINE)
    assert found is not None, "the section has no ```python block"
    return found.group(1)


async def test_the_readme_snippet_serves_a_code_first_agent(tmp_path: Path) -> None:
    """The README's script, its model swapped for a scripted one (no model server here), is an
    MCP server with one tool, `ask`, that runs the agent's tool."""
    script = readme_snippet()
    assert "Agent(OpenAIModel(), tools=[add])" in script
    turns = [call("add", a=2, b=3), finish("2 + 3 = 5")]
    script = script.replace("OpenAIModel()", f"ScriptedModel({turns!r})").replace(
        "from agentrt import Agent, OpenAIModel", "from agentrt import Agent, ScriptedModel"
    )
    (tmp_path / "server.py").write_text(script, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k == "PYTHONPATH"}
    params = StdioServerParameters(
        command=sys.executable, args=["server.py"], cwd=tmp_path, env=env
    )
    async with Client(params) as client:
        listed = await client.list_tools()
        result = await client.call_tool("ask", {"question": "What is 2 + 3?"})
    assert [t.name for t in listed.tools] == ["ask"]
    assert result.content == [types.TextContent(type="text", text="2 + 3 = 5")]
    assert result.structured_content is not None
    assert result.structured_content["status"] == "ok"


async def test_bad_arguments_are_a_tool_error(tmp_path: Path) -> None:
    """An empty question is told to the calling model (`isError`); an unknown tool is a
    protocol error naming the tools there are."""
    async with Client(agentrt_mcp(tmp_path)) as client:
        empty = await client.call_tool("ask", {"question": ""})
        with pytest.raises(Exception, match="no tool 'nope' \\(this server has: ask, "):
            await client.call_tool("nope", {"question": "hi"})
    assert empty.is_error is True
    assert empty.content == [
        types.TextContent(
            type="text",
            text="invalid arguments for ask: question: String should have at least 1 character",
        )
    ]


async def test_cancelling_the_call_cancels_the_run(tmp_path: Path) -> None:
    """Cancelling the request while the run's tools hang ends the run: its trajectory ends with
    one `run_finished`, cancelled."""
    calling = anyio.Event()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        if message is not None and message.startswith("calling calculate"):
            calling.set()

    async with Client(agentrt_mcp(tmp_path, "--workspace", str(HANGING))) as client:
        async with anyio.create_task_group() as tg:

            async def ask() -> None:
                await client.call_tool(
                    "ask", {"question": DEMO_QUESTION}, progress_callback=on_progress
                )

            tg.start_soon(ask)
            await calling.wait()
            tg.cancel_scope.cancel()  # the SDK sends notifications/cancelled
        ends = await ended(tmp_path / "trajectories")
    assert [(e.status, e.error) for e in ends] == [("cancelled", "the run was cancelled")]


def run_finished(folder: Path) -> list[RunFinishedEvent]:
    """The `run_finished` events of the one trajectory in `folder` (none before it has one)."""
    paths = list(folder.glob("*/*.jsonl"))
    if not paths:
        return []
    (path,) = paths
    try:
        events = Trajectory.read(path).events
    except ValueError:  # read while a line was being written
        return []
    return [e for e in events if isinstance(e, RunFinishedEvent)]


async def ended(folder: Path) -> list[RunFinishedEvent]:
    """`run_finished`, once the run (in another process or thread) has recorded it."""
    return await anyio.to_thread.run_sync(
        lambda: wait_until(lambda: run_finished(folder), "the run to record its end", timeout=30)
    )


def test_a_bad_workspace_is_a_usage_error(tmp_path: Path) -> None:
    """A workspace that is not there: one line on stderr, exit status 2, nothing on stdout (a
    host reads it as the server having failed to start)."""
    done = subprocess.run(
        [sys.executable, "-m", "agentrt", "mcp", "--workspace", "missing", "--model", "demo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"error: workspace {tmp_path / 'missing'} is not a folder\n"
