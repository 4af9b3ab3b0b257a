"""`/mcp` on the server `agentrt serve` runs: the agent as an MCP server over streamable HTTP,
spoken to by the `mcp` SDK's own client on a loopback port, behind the server's token."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from agentrt import Trajectory
from agentrt.server import ServerSettings, create_app
from tests.helpers import MakeAgent, call, finish
from tests.mcp.test_server_stdio import ended
from tests.server.serving import LiveServer

TOKEN = {"Authorization": "Bearer secret"}


def mcp_client(server: LiveServer, headers: dict[str, str] = TOKEN) -> Client:
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    return Client(streamable_http_client(f"{server.url}/mcp", http_client=http))


def serve(make_agent: MakeAgent, turns: list[Any], max_runs: int = 32) -> LiveServer:
    app = create_app(make_agent(turns), ServerSettings(tokens=("secret",), max_runs=max_runs))
    return LiveServer(app)


async def test_serves_the_agent(make_agent: MakeAgent, tmp_path: Path, seen: Any) -> None:
    """One tool per strategy besides `ask`; a call runs the agent with that strategy in the
    session given, its events as progress messages, its end as the result."""
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    with serve(make_agent, [call("echo", text="hi"), finish("Echoed hi.")]) as server:
        async with mcp_client(server) as client:
            listed = await client.list_tools()
            result = await client.call_tool(
                "ask_exploratory",
                {"question": "Echo hi.", "session_id": "s-1"},
                progress_callback=on_progress,
            )
    assert [t.name for t in listed.tools] == [
        "ask",
        *(f"ask_{name}" for name in sorted(make_agent([]).workspace.strategies)),
    ]
    (path,) = (tmp_path / "trajectories").glob("*/*.jsonl")
    assert result.is_error is False
    assert result.content == [types.TextContent(type="text", text="Echoed hi.")]
    assert result.structured_content == {
        "status": "ok",
        "answer": "Echoed hi.",
        "output": None,
        "error": None,
        "doubt": None,
        "run_id": path.stem,
        "session_id": "s-1",
        "trajectory": str(path.resolve()),
    }
    trajectory = Trajectory.read(path)
    assert trajectory.header.session_id == "s-1"
    # Durations differ from run to run.
    assert [re.sub(r"[0-9.]+ (m?s)\b", r"T \1", p or "") for p in progress] == [
        f"run {path.stem} started on scripted",
        "classified as exploratory (forced)",
        "strategy exploratory: planner react, budget 4 steps",
        "17 tools on offer: finish, echo, add, nap, hang, fail, crash, search, counter, stuck, "
        "read_page, open_item, profile, vector_search, retrieve_knowledge_graph, remember, recall",
        "step 1 started",
        'calling echo {"text": "hi"}',
        "model answered (turn): 5 tokens in T s",
        "echo returned in T ms",
        "step 2 started",
        'calling finish {"answer": "Echoed hi."}',
        "model answered (turn): 6 tokens in T s",
        "finish returned in T ms",
        "run finished ok after 2 steps",
    ]


def test_behind_the_token(make_agent: MakeAgent) -> None:
    """Without the server's token no MCP request is answered, the GET of the server's stream
    (which has no body) included."""
    with serve(make_agent, []) as server, httpx.Client(base_url=server.url) as plain:
        posted = plain.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        got = plain.get("/mcp", headers={"Accept": "text/event-stream"})
        wrong = plain.get("/mcp", headers={"Authorization": "Bearer nope"})
    assert (posted.status_code, got.status_code, wrong.status_code) == (401, 401, 401)
    assert got.json() == {
        "detail": "this server needs a bearer token: send 'Authorization: Bearer <token>'"
    }
    assert wrong.json() == {"detail": "the bearer token is not one this server accepts"}


async def test_cancelling_the_call_cancels_the_run(
    make_agent: MakeAgent, tmp_path: Path, seen: Any
) -> None:
    """Cancelling the request while a tool naps cancels the tool and the run, which records
    one `run_finished`, cancelled."""
    napping = anyio.Event()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        if message is not None and message.startswith("calling nap"):
            napping.set()

    with serve(make_agent, [call("nap", seconds=60, label="long")]) as server:
        async with mcp_client(server) as client, anyio.create_task_group() as tg:

            async def ask() -> None:
                await client.call_tool(
                    "ask_exploratory", {"question": "Nap."}, progress_callback=on_progress
                )

            tg.start_soon(ask)
            await napping.wait()
            tg.cancel_scope.cancel()
        ends = await ended(tmp_path / "trajectories")
        assert seen.cancelled == ["long"]
    assert [(e.status, e.error) for e in ends] == [("cancelled", "the run was cancelled")]


async def test_stopping_the_server_cancels_its_mcp_runs(
    make_agent: MakeAgent, tmp_path: Path, seen: Any
) -> None:
    """A server stopping ends its MCP sessions, a 2025-era client's open stream included, and
    cancels their runs, which record `run_finished: cancelled`."""
    napping = anyio.Event()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        if message is not None and message.startswith("calling nap"):
            napping.set()

    server = serve(make_agent, [call("nap", seconds=60, label="long")]).__enter__()
    try:
        http = httpx2.AsyncClient(headers=TOKEN, timeout=30)
        transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
        async with Client(transport, mode="legacy") as client, anyio.create_task_group() as tg:

            async def ask() -> None:
                with pytest.raises(MCPError):  # the connection closes under the call
                    await client.call_tool(
                        "ask_exploratory", {"question": "Nap."}, progress_callback=on_progress
                    )

            tg.start_soon(ask)
            await napping.wait()
            await anyio.to_thread.run_sync(server.stop)
    finally:
        server.stop()
    ends = await ended(tmp_path / "trajectories")
    assert seen.cancelled == ["long"]
    assert [(e.status, e.error) for e in ends] == [("cancelled", "the run was cancelled")]


async def test_busy_session_and_full_server_refuse(make_agent: MakeAgent, seen: Any) -> None:
    """While a session's run is in progress, another call in it is refused; so is one past
    the server's limit on runs in progress. Each refusal is a tool error saying why."""
    turns = [call("nap", seconds=60, label="a"), call("nap", seconds=60, label="b")]
    with serve(make_agent, turns, max_runs=2) as server:
        async with mcp_client(server) as client, anyio.create_task_group() as tg:
            napping = [anyio.Event(), anyio.Event()]

            async def nap(index: int, session_id: str | None) -> None:
                async def on_progress(value: float, total: float | None, msg: str | None) -> None:
                    if msg is not None and msg.startswith("calling nap"):
                        napping[index].set()

                arguments = {"question": "Nap.", "session_id": session_id}
                await client.call_tool("ask_exploratory", arguments, progress_callback=on_progress)

            tg.start_soon(nap, 0, "s-1")
            await napping[0].wait()
            busy = await client.call_tool("ask", {"question": "Again.", "session_id": "s-1"})
            tg.start_soon(nap, 1, None)
            await napping[1].wait()
            full = await client.call_tool("ask", {"question": "One more."})
            tg.cancel_scope.cancel()
    assert (busy.is_error, full.is_error) == (True, True)
    assert busy.content == [
        types.TextContent(
            type="text",
            text="session 's-1' has a run in progress: wait for its answer, so that the next "
            "question sees it",
        )
    ]
    assert full.content == [
        types.TextContent(
            type="text",
            text="the server's runs in progress are at its limit (2); retry when one has finished",
        )
    ]
