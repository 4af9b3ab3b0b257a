"""The MCP client: real MCP servers (tests/mcp/server.py, written with the SDK's `MCPServer`,
over stdio and over streamable HTTP; tests/mcp/broken_server.py for what no SDK server does)
whose tools a scripted model calls through a full agent run."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentrt import (
    Agent,
    AgentSettings,
    MCPServer,
    MCPServerError,
    RunFinishedEvent,
    ScriptedModel,
    ToolFinishedEvent,
    ToolsNarrowedEvent,
    Trajectory,
    UserError,
    WorkspaceError,
    event_adapter,
)
from agentrt.eval.questions import EvalQuestion
from agentrt.eval.runner import EvalSpec, Evaluator
from agentrt.mcp.client import describe_changes
from agentrt.mcp.config import load_mcp_servers
from agentrt.trajectory.replay import replay, replay_files
from tests.helpers import ROOT, TEST_WORKSPACE, call, check_stream, run_python

HERE = Path(__file__).parent
SERVER = str(HERE / "server.py")
BROKEN = str(HERE / "broken_server.py")


def calc(*args: str, **options: Any) -> MCPServer:
    """The test server over stdio."""
    return MCPServer.stdio("calc", sys.executable, [SERVER, *args], **options)


def agent(tmp_path: Path, turns: list[Any], *servers: MCPServer, **kwargs: Any) -> Agent:
    return Agent(
        ScriptedModel(turns),
        mcp_servers=list(servers),
        settings=AgentSettings(trajectory_dir=tmp_path / "trajectories"),
        **kwargs,
    )


def finished(events: list[Any]) -> list[tuple[str, str, Any, str | None]]:
    return [
        (e.name, e.status, e.output, e.error) for e in events if isinstance(e, ToolFinishedEvent)
    ]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def write_mcp_yaml(folder: Path, *args: str) -> None:
    """An mcp.yaml in `folder` declaring the test server, its tools prefixed `calc_`."""
    (folder / "mcp.yaml").write_text(
        "servers:\n"
        f"  calc:\n    command: {sys.executable}\n    args: [{', '.join([SERVER, *args])}]\n"
        "    prefix: calc_\n    timeout: 5\n    max_concurrency: 2\n"
    )


def workspace_with_calc(tmp_path: Path, *args: str) -> Path:
    """A copy of the test workspace whose mcp.yaml declares the test server."""
    folder = tmp_path / "workspace"
    shutil.copytree(TEST_WORKSPACE, folder, dirs_exist_ok=True)
    write_mcp_yaml(folder, *args)
    return folder


class TestStdio:
    async def test_a_run_calls_a_server_tool_and_the_server_stops_with_the_agent(
        self, tmp_path: Path
    ) -> None:
        """The model calls `add` and `pid`; the trajectory header has the server's schema
        hashes; leaving `async with` stops the server's process."""
        turns = [call("add", a=2, b=3) + call("pid"), "It is 5."]
        async with agent(tmp_path, turns, calc()) as a:
            events = [e async for e in a.run("What is 2 + 3?")]
        check_stream(events)
        add, pid = sorted(finished(events), key=lambda f: f[0])
        assert add == ("add", "ok", {"result": 5}, None)
        assert gone(pid[2]["result"])
        end = events[-1]
        assert isinstance(end, RunFinishedEvent)
        assert (end.status, end.answer) == ("ok", "It is 5.")
        (path,) = (tmp_path / "trajectories").rglob("*.jsonl")
        header = Trajectory.read(path).header
        stamps = header.mcp_servers["calc"]
        assert {"add", "pid", "hang", "crash", "grow"} <= set(stamps)
        assert header.tools["add"] == stamps["add"]

    async def test_a_run_without_starting_the_servers_is_refused(self, tmp_path: Path) -> None:
        a = agent(tmp_path, ["hi"], calc())
        with pytest.raises(UserError, match=r"MCP servers \(calc\) are not started"):
            await a.run("hi")

    async def test_failures_are_tool_errors_and_the_run_goes_on(self, tmp_path: Path) -> None:
        """An error result, a call past the server's timeout, a server that exits mid-run:
        each an error the model reads; the run ends ok."""
        turns = [
            call("fail"),
            call("hang", seconds=600),
            call("crash"),
            call("add", a=1, b=1),
            "Done.",
        ]
        async with agent(tmp_path, turns, calc(timeout=5)) as a:
            result = await a.run("Break things.")
        events = result.trajectory.events
        check_stream(events)
        assert result.status == "ok"
        outcomes = [(name, status) for name, status, _, _ in finished(events)]
        assert outcomes == [
            ("fail", "error"),
            ("hang", "timeout"),
            ("crash", "error"),
            ("add", "error"),
        ]
        errors = [error for _, _, _, error in finished(events)]
        assert "Error executing tool fail" in str(errors[0])
        assert "MCP server 'calc'" in str(errors[3])

    async def test_the_servers_concurrency_cap_holds(self, tmp_path: Path) -> None:
        """Three calls of one turn, which the executor starts at once, capped at one in
        flight: the server never sees two."""
        turns = ["".join(call("overlap", n=n) for n in range(3)), "done"]
        async with agent(tmp_path, turns, calc(max_concurrency=1)) as a:
            result = await a.run("Overlap.")
        peaks = [o for _, _, o, _ in finished(result.trajectory.events)]
        assert peaks == [{"result": 1}] * 3

    async def test_waiting_for_the_servers_cap_is_not_a_timeout(self, tmp_path: Path) -> None:
        """Twelve calls of 0.2 s through a cap of one take 2.4 s in all; each has 1 s, counted
        from when it has a slot (the executor holds the cap), so none times out."""
        turns = ["".join(call("overlap", n=n) for n in range(12)), "done"]
        async with agent(tmp_path, turns, calc(max_concurrency=1, timeout=1.0)) as a:
            result = await a.run("Overlap.")
        assert [s for _, s, _, _ in finished(result.trajectory.events)] == ["ok"] * 12

    async def test_a_run_left_mid_call_is_cancelled_and_the_server_serves_on(
        self, tmp_path: Path
    ) -> None:
        """The caller leaves while `hang` runs (a UI that disconnects): the call and the run
        end `cancelled`; the next run's call is answered."""
        turns = [call("hang", seconds=600), call("add", a=2, b=2), "4"]
        async with agent(tmp_path, turns, calc()) as a:
            async with a.run("Hang.") as run:
                async for event in run:
                    if event.type == "tool_started":
                        break
            second = await a.run("2 + 2?")
        assert finished(second.trajectory.events) == [("add", "ok", {"result": 4}, None)]
        (first,) = [
            t
            for t in map(Trajectory.read, (tmp_path / "trajectories").rglob("*.jsonl"))
            if t.header.query == "Hang."
        ]
        check_stream(first.events)
        assert [(n, s) for n, s, _, _ in finished(first.events)] == [("hang", "cancelled")]
        assert first.finished is not None
        assert first.finished.status == "cancelled"

    async def test_invalid_arguments_are_refused_against_the_servers_schema(
        self, tmp_path: Path
    ) -> None:
        turns = [call("add", a="two", b=3), call("add", a=2, b=3), "5"]
        async with agent(tmp_path, turns, calc()) as a:
            result = await a.run("2 + 3?")
        invalid = [e for e in result.trajectory.events if e.type == "tool_call_invalid"]
        assert len(invalid) == 1
        assert "'two' is not of type 'integer'" in invalid[0].reason  # type: ignore[union-attr]
        assert finished(result.trajectory.events) == [("add", "ok", {"result": 5}, None)]

    async def test_an_invalid_result_is_a_tool_error(self, tmp_path: Path) -> None:
        broken = MCPServer.stdio("broken", sys.executable, [BROKEN, "--invalid-result"])
        async with agent(tmp_path, [call("add", a=1), "no"], broken) as a:
            result = await a.run("1?")
        ((name, status, _, error),) = finished(result.trajectory.events)
        assert (name, status) == ("add", "error")
        assert error is not None
        assert error.startswith("MCP server 'broken' returned an invalid result for 'add'")

    async def test_a_changed_tool_list_refreshes_the_catalog(self, tmp_path: Path) -> None:
        """`grow` adds a tool and sends notifications/tools/list_changed: the next run may
        call the new tool."""
        turns = [call("grow", tool="shiny"), "Grown.", call("shiny"), "Shiny."]
        async with agent(tmp_path, turns, calc()) as a:
            await a.run("Grow a tool.")
            second = await a.run("Use it.")
        assert finished(second.trajectory.events) == [
            ("shiny", "ok", {"result": "I am shiny"}, None)
        ]
        assert "shiny" in second.trajectory.header.mcp_servers["calc"]


class TestBadInput:
    async def test_a_command_not_found(self, tmp_path: Path) -> None:
        missing = MCPServer.stdio("nowhere", "agentrt-no-such-mcp-server")
        with pytest.raises(MCPServerError, match=r"MCP server 'nowhere': command .* not found"):
            async with agent(tmp_path, [], missing):
                pass

    async def test_a_server_that_exits_at_start_is_quoted(self, tmp_path: Path) -> None:
        with pytest.raises(MCPServerError) as caught:
            async with agent(tmp_path, [], calc("--exit-at-start")):
                pass
        message = str(caught.value)
        assert message.startswith("MCP server 'calc'")
        assert "exited or closed the connection while starting" in message
        assert "cannot open the database: no such file" in message

    async def test_a_newer_protocol_version(self, tmp_path: Path) -> None:
        newer = MCPServer.stdio("future", sys.executable, [BROKEN, "--protocol", "2099-01-01"])
        with pytest.raises(MCPServerError, match="MCP server 'future' speaks MCP protocol version"):
            async with agent(tmp_path, [], newer):
                pass

    async def test_two_servers_naming_one_tool_clash(self, tmp_path: Path) -> None:
        again = MCPServer.stdio("calc2", sys.executable, [SERVER])
        with pytest.raises(
            MCPServerError,
            match="MCP server 'calc2': its tool 'add' clashes with MCP server 'calc'",
        ):
            async with agent(tmp_path, [], calc(), again):
                pass

    async def test_a_server_that_never_answers_is_given_up_on(self, tmp_path: Path) -> None:
        silent = MCPServer.stdio("mute", sys.executable, [BROKEN, "--silent"], start_timeout=2)
        with pytest.raises(MCPServerError, match="MCP server 'mute' did not answer the handshake"):
            async with agent(tmp_path, [], silent):
                pass

    async def test_a_clash_names_the_server_and_a_prefix_resolves_it(self, tmp_path: Path) -> None:
        def add(a: int, b: int) -> int:
            """Add, in Python."""
            return a + b

        pid_file = tmp_path / "calc.pid"
        clashing = agent(tmp_path, [], calc("--pid-file", str(pid_file)), tools=[add])
        with pytest.raises(MCPServerError, match="MCP server 'calc': its tool 'add' clashes"):
            async with clashing:
                pass
        assert gone(int(pid_file.read_text()))  # it had started: it was stopped again
        turns = [call("calc_add", a=1, b=2) + call("add", a=1, b=2), "3"]
        async with agent(tmp_path, turns, calc(prefix="calc_"), tools=[add]) as a:
            result = await a.run("1 + 2?")
        assert sorted((n, str(o)) for n, _, o, _ in finished(result.trajectory.events)) == [
            ("add", "3"),
            ("calc_add", "{'result': 3}"),
        ]

    def test_a_server_is_either_stdio_or_http(self) -> None:
        with pytest.raises(ValueError, match="give either command"):
            MCPServer(name="both", command="x", url="http://127.0.0.1:1/mcp")


@pytest.fixture
def http_server() -> Iterator[str]:
    """The test server over streamable HTTP on a free loopback port, ready when it accepts."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, SERVER, "--http", str(port)])
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, "the HTTP server exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP server never listened"
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(0.05)  # polls the port again, unless the server exited
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(30)


class TestHttp:
    async def test_a_run_calls_a_tool_over_streamable_http(
        self, tmp_path: Path, http_server: str
    ) -> None:
        server = MCPServer.http("remote", http_server, headers={"X-Test": "yes"}, prefix="r_")
        turns = [call("r_add", a=20, b=22), call("r_header", key="x-test"), "42"]
        async with agent(tmp_path, turns, server) as a:
            result = await a.run("20 + 22?")
        check_stream(result.trajectory.events)
        assert finished(result.trajectory.events) == [
            ("r_add", "ok", {"result": 42}, None),
            ("r_header", "ok", {"result": "yes"}, None),
        ]
        assert "r_add" in result.trajectory.header.mcp_servers["remote"]

    async def test_a_server_not_listening(self, tmp_path: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        nobody = MCPServer.http("away", f"http://127.0.0.1:{port}/mcp")
        with pytest.raises(MCPServerError, match=r"MCP server 'away' at .* cannot be reached"):
            async with agent(tmp_path, [], nobody):
                pass


class TestCatalog:
    async def test_retrieval_narrows_two_hundred_tools_to_the_few_a_query_needs(
        self, tmp_path: Path
    ) -> None:
        """A code-first agent over a server of 200 generated tools offers its own tool and
        the 8 retrieved for the query, the one asked for among them."""

        def note(text: str) -> str:
            """Keep a note."""
            return text

        turns = [call("calendar_event_delete", item_id="dentist"), "Deleted."]
        async with agent(tmp_path, turns, calc("--many", "200"), tools=[note]) as a:
            result = await a.run("Delete the calendar event of my dentist appointment")
        (narrowed,) = [e for e in result.trajectory.events if isinstance(e, ToolsNarrowedEvent)]
        offered = {t.name: t.source for t in narrowed.tools}
        assert offered["note"] == "template"
        assert offered["calendar_event_delete"] == "retrieved"
        assert sum(source == "retrieved" for source in offered.values()) == 8
        assert finished(result.trajectory.events) == [
            ("calendar_event_delete", "ok", {"result": "calendar_event_delete(dentist)"}, None)
        ]

    async def test_a_workspace_declares_its_servers_in_mcp_yaml(self, tmp_path: Path) -> None:
        folder = workspace_with_calc(tmp_path)
        a = Agent(ScriptedModel([]), workspace=folder)
        async with a:
            tool = a.workspace.tools["calc_add"]
            assert tool.timeout == 5
            assert a.workspace.registry.tools["calc_add"].params == ["a", "b"]
        assert "calc_add" not in a.workspace.tools

    def test_mcp_yaml_errors_name_the_file_and_the_server(self, tmp_path: Path) -> None:
        (tmp_path / "mcp.yaml").write_text("servers:\n  bad:\n    command: x\n    url: y\n")
        with pytest.raises(WorkspaceError, match=r"mcp.yaml: servers.bad: .*give either"):
            load_mcp_servers(tmp_path)
        (tmp_path / "mcp.yaml").write_text("calc: {command: x}\n")
        with pytest.raises(WorkspaceError, match="expected one key, 'servers'"):
            load_mcp_servers(tmp_path)

    async def test_changed_tools_are_reported_between_recorded_and_current_headers(
        self, tmp_path: Path
    ) -> None:
        """The same server with `add` taking a third parameter: its schema hash differs."""
        runs = []
        for variant in ([], ["--variant"]):
            async with agent(tmp_path, ["ok"], calc(*variant)) as a:
                runs.append(await a.run("hi"))
        recorded, today = (r.trajectory.header.mcp_servers for r in runs)
        assert describe_changes(recorded, today) == [
            "MCP server 'calc' changed its tools: schema changed: add"
        ]
        assert describe_changes(recorded, {}) == ["MCP server 'calc' is gone"]


def test_the_readme_snippet_runs_as_written(tmp_path: Path) -> None:
    """The README's "MCP tools" section runs as written, beside a copy of the test server:
    the model calls its `add`, and nothing but the answer and the hash is printed."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## MCP tools\n", 1)[1].split("\n## ", 1)[0]
    snippet = section.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "snippet.py").write_text(snippet, encoding="utf-8")
    (tmp_path / "tests" / "mcp").mkdir(parents=True)
    shutil.copy(SERVER, tmp_path / "tests" / "mcp" / "server.py")
    done = run_python("snippet.py", cwd=tmp_path)
    answer, schema_hash = done.stdout.split()
    assert answer == "5"
    assert len(schema_hash) == 16
    assert done.stderr == ""


async def test_a_replay_reports_the_server_whose_tools_changed(tmp_path: Path) -> None:
    """A run recorded against the test server replays the same against the variant whose
    `add` takes a third parameter, and the report says that `calc_add`'s schema changed."""
    folder = workspace_with_calc(tmp_path)
    turns = [call("calc_add", a=1, b=2), "3"]
    a = Agent(
        ScriptedModel(turns),
        workspace=folder,
        settings=AgentSettings(trajectory_dir=tmp_path / "trajectories"),
    )
    async with a:
        recorded = await a.run("1 + 2?", strategy="exploratory")
    assert recorded.status == "ok"
    assert recorded.path is not None
    workspace_with_calc(tmp_path, "--variant")
    (report,) = await replay_files([recorded.path])
    assert (report.outcome, report.error) == ("same", None)
    assert report.mcp_changes == ["MCP server 'calc' changed its tools: schema changed: calc_add"]


async def test_a_code_first_run_replays_the_same_against_the_running_server(
    tmp_path: Path,
) -> None:
    turns = [call("add", a=2, b=3), "5"]
    async with agent(tmp_path, turns, calc()) as a:
        recorded = await a.run("2 + 3?")
        again, difference = await replay(recorded.trajectory, agent=a)
    assert difference is None
    assert again.header.mcp_servers == recorded.trajectory.header.mcp_servers


class TestCommandLine:
    def command(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agentrt", *args],
            cwd=cwd,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    def default_workspace_with_calc(self, tmp_path: Path) -> Path:
        """A copy of the default workspace (the demo model's) whose mcp.yaml declares the
        test server."""
        folder = tmp_path / "workspace"
        for part in ("strategies", "tools", "registry", "prompts"):
            shutil.copytree(ROOT / part, folder / part)
        write_mcp_yaml(folder)
        return folder

    def test_agentrt_run_starts_the_servers_of_mcp_yaml(self, tmp_path: Path) -> None:
        """The demo run in a copy of the default workspace whose mcp.yaml declares the test
        server: its tools are in the catalog (the header has their hashes)."""
        folder = self.default_workspace_with_calc(tmp_path)
        done = self.command(
            "run", "--json", "--model", "demo", "--workspace", str(folder), cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        (path,) = (tmp_path / "trajectories").glob("*/*.jsonl")
        assert "calc_add" in Trajectory.read(path).header.mcp_servers["calc"]

    async def test_an_evaluation_starts_the_servers_of_mcp_yaml(self, tmp_path: Path) -> None:
        """Each question's agent starts them for its run (the Ray backend runs the same)."""
        folder = self.default_workspace_with_calc(tmp_path)
        spec = EvalSpec(model="demo", workspace=folder, output=tmp_path / "eval")
        question = EvalQuestion(id="root", question="The square root of 1764?")
        result = await Evaluator(spec).run(question)
        assert result.trajectory is not None
        header = Trajectory.read(spec.output / result.trajectory).header
        assert "calc_add" in header.mcp_servers["calc"]

    def test_a_server_that_cannot_start_is_a_usage_error(self, tmp_path: Path) -> None:
        folder = workspace_with_calc(tmp_path)
        (folder / "mcp.yaml").write_text("servers:\n  nowhere: {command: agentrt-no-such-server}\n")
        done = self.command(
            "run", "hi", "--model", "demo", "--workspace", str(folder), cwd=tmp_path
        )
        assert done.returncode == 2
        assert (
            "error: MCP server 'nowhere': command 'agentrt-no-such-server' not found" in done.stderr
        )


def test_agentrt_serve_runs_the_servers_as_long_as_the_app(tmp_path: Path) -> None:
    """The app's lifespan starts the agent's MCP servers: a run over HTTP calls one's tool;
    when the app stops, so does the server's process."""
    import httpx

    from agentrt.server import create_app
    from tests.server.serving import LiveServer

    a = agent(tmp_path, [call("add", a=2, b=3) + call("pid"), "5"], calc())
    with LiveServer(create_app(a)) as server:
        response = httpx.post(
            f"{server.url}/runs",
            json={"query": "2 + 3?"},
            headers={"Accept": "application/x-ndjson"},
            timeout=60,
        )
    assert response.status_code == 200, response.text
    events = [event_adapter.validate_json(line) for line in response.text.splitlines()]
    add, pid = sorted(finished(events), key=lambda f: f[0])
    assert add == ("add", "ok", {"result": 5}, None)
    assert gone(pid[2]["result"])
