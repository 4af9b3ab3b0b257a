"""The UI protocols on `agentrt serve` (`?protocol=ag-ui`, `?protocol=vercel`): read by the
toolkits' own clients in Node (the AI SDK's `DefaultChatTransport` and `readUIMessageStream`,
`@ag-ui/client`'s `HttpAgent`) from a real server on a loopback port, checked against the
`ag-ui-protocol` package's types, resumed after `Last-Event-ID`, and served from stored
trajectories."""

from __future__ import annotations

import fcntl
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
from ag_ui.core import Event as AgUiEvent
from pydantic import BaseModel, TypeAdapter

from agentrt import (
    Agent,
    AgentSettings,
    Event,
    RepairEvent,
    ScriptedModel,
    ScriptedTurn,
    Trajectory,
)
from agentrt.cli import DEMO_QUESTION
from agentrt.server import ServerSettings, create_app
from agentrt.server.protocols import AgUiTranslator, VercelTranslator
from tests.helpers import ROOT, MakeAgent, call, check_stream, finish
from tests.server.serving import LiveServer, wait_until

NODE_DIR = ROOT / "tests" / "node"
SAMPLES = sorted((ROOT / "trajectories" / "samples").rglob("*.jsonl"))
NAP = {"query": "Take a nap", "strategy": "exploratory"}
PROTOCOLS = ["vercel", "ag-ui"]
ag_ui_event: TypeAdapter[Any] = TypeAdapter(AgUiEvent)


class City(BaseModel):
    name: str
    population: int


def napping_turns() -> list[str | ScriptedTurn]:
    """A run with reasoning, text, a tool that answers, one that fails and an unknown one."""
    return [
        ScriptedTurn(
            reasoning="I am tired.",
            text="Let me nap. "
            + call("nap", seconds=0.01, label="a")
            + call("fail", message="no pillow")
            + call("teleport", to="bed"),
        ),
        "Done napping. " + finish("Rested."),
    ]


@pytest.fixture(scope="session")
def node_dir() -> Path:
    """tests/node with its packages installed: `npm ci` from the lock file when node_modules
    is missing (under a lock, for parallel workers)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail(
            "the UI protocol tests read streams with the AI SDK and @ag-ui/client, which need "
            "Node.js 20 or later: install node and npm, and put them on PATH"
        )
    with (NODE_DIR / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (NODE_DIR / "node_modules").is_dir():
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"],
                cwd=NODE_DIR,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            assert done.returncode == 0, f"npm ci in {NODE_DIR} failed:\n{done.stderr}"
    return NODE_DIR


def read_with_node(
    node_dir: Path, protocol: str, url: str, *args: str, token: str | None = None
) -> Any:
    """What the toolkit's client read of a run (see tests/node/read_streams.mjs)."""
    env = {**os.environ, **({"AGENTRT_TOKEN": token} if token is not None else {})}
    done = subprocess.run(
        ["node", "read_streams.mjs", protocol, url, *args],
        cwd=node_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def frames(body: str) -> list[tuple[str | None, str]]:
    """An SSE body's messages as (id, data), keep-alive comments left out."""
    found = []
    for block in body.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in fields:
            found.append((fields.get("id"), fields["data"]))
    return found


def recorded(tmp_path: Path, run_id: str) -> list[Event]:
    (path,) = (tmp_path / "trajectories").glob(f"*/{run_id}.jsonl")
    return Trajectory.read(path).events


class TestClients:
    def test_the_ai_sdk_reads_a_run(
        self, node_dir: Path, make_agent: MakeAgent, tmp_path: Path
    ) -> None:
        """The AI SDK's chat transport posts the question and `readUIMessageStream` builds
        the assistant message: its steps, reasoning, text, each tool call with its input and
        output (or error), and the answer; agentrt's run summary in its metadata."""
        agent = make_agent(napping_turns())
        with LiveServer(create_app(agent)) as server:
            read = read_with_node(node_dir, "vercel", server.url, "run", *NAP.values())
        message = read["message"]
        assert read["errors"] == []
        assert (message["role"], message["metadata"]["status"]) == ("assistant", "ok")
        assert message["metadata"]["model"] == "scripted"
        assert recorded(tmp_path, message["id"])[-1].type == "run_finished"
        shown = [
            {k: v for k, v in p.items() if k not in {"toolCallId", "providerExecuted"}}
            for p in message["parts"]
            if not p["type"].startswith("data-")
        ]
        assert shown == [
            {"type": "step-start"},
            {"type": "reasoning", "id": "reasoning-5", "text": "I am tired.", "state": "done"},
            {"type": "text", "text": "Let me nap. ", "state": "done"},
            {
                "type": "tool-nap",
                "state": "output-available",
                "input": {"seconds": 0.01, "label": "a"},
                "output": "slept 0.01",
            },
            {
                "type": "tool-fail",
                "state": "output-error",
                "input": {"message": "no pillow"},
                "errorText": shown[4]["errorText"],
            },
            {
                "type": "tool-teleport",
                "state": "output-error",
                "rawInput": shown[5]["rawInput"],
                "errorText": shown[5]["errorText"],
            },
            {"type": "step-start"},
            {"type": "text", "text": "Done napping. ", "state": "done"},
            {
                "type": "tool-finish",
                "state": "output-available",
                "input": {"answer": "Rested."},
                "output": "Rested.",
            },
            {"type": "text", "text": "Rested.", "state": "done"},
        ]
        assert "no pillow" in shown[4]["errorText"]
        assert "teleport" in shown[5]["errorText"]
        assert '"teleport"' in shown[5]["rawInput"]
        data = [p["type"] for p in message["parts"] if p["type"].startswith("data-")]
        assert data[:3] == ["data-classified", "data-strategy-selected", "data-tools-narrowed"]

    def test_agentrt_serve_as_run_from_the_shell(self, node_dir: Path, tmp_path: Path) -> None:
        """`agentrt serve` itself, a process on a free port with the demo model: the AI SDK
        reads its run; Ctrl-C stops it."""
        process = subprocess.Popen(
            [sys.executable, "-m", "agentrt", "serve", "--model", "demo", "--port", "0"],
            cwd=tmp_path,
            # PYTHONPATH kept: the process runs the agentrt under test.
            env={"PATH": os.environ["PATH"], "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: queue.Queue[str | None] = queue.Queue()

        def drain(stream: IO[str]) -> None:  # all of it: a full pipe would stall the server
            for line in stream:
                lines.put(line)
            lines.put(None)

        assert process.stderr is not None
        threading.Thread(target=drain, args=(process.stderr,), daemon=True).start()
        try:
            url: str | None = None
            said: list[str] = []
            while url is None:  # uvicorn names the port once it listens
                line = lines.get(timeout=60)
                assert line is not None, f"the server stopped before serving: {''.join(said)}"
                said.append(line)
                if found := re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", line):
                    url = found.group(1)
            read = read_with_node(node_dir, "vercel", url, "run", DEMO_QUESTION)
        finally:
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=30) == 130
        message = read["message"]
        assert (read["errors"], message["metadata"]["status"]) == ([], "ok")
        texts = [p["text"] for p in message["parts"] if p["type"] == "text"]
        assert texts[-1].endswith("the square root of 1764 is 42.0.")

    def test_the_ag_ui_client_reads_a_run(
        self, node_dir: Path, make_agent: MakeAgent, tmp_path: Path
    ) -> None:
        """The stock `HttpAgent` runs it on `POST /ag-ui`, checking every event as it comes:
        the run's messages (text, the tool calls on the text of their turn, each result, the
        answer) and its result."""
        agent = make_agent(napping_turns())
        with LiveServer(create_app(agent)) as server:
            read = read_with_node(node_dir, "ag-ui", server.url, "run", *NAP.values())
        result, messages = read["result"], read["messages"]
        assert (result["status"], result["answer"]) == ("ok", "Rested.")
        run_id = messages[1]["id"].split("/")[0]
        assert recorded(tmp_path, run_id)[-1].type == "run_finished"
        calls = [
            (c["function"]["name"], c["function"]["arguments"])
            for m in messages
            for c in m.get("toolCalls", [])
        ]
        assert calls[:2] == [
            ("nap", '{"seconds": 0.01, "label": "a"}'),
            ("fail", '{"message": "no pillow"}'),
        ]
        assert calls[2][0] == "teleport"
        assert calls[3] == ("finish", '{"answer": "Rested."}')
        said = [(m["role"], m["content"]) for m in messages if m["role"] != "tool"]
        assert said == [
            ("user", "Take a nap"),
            ("reasoning", "I am tired."),
            ("assistant", "Let me nap. "),
            ("assistant", "Done napping. "),
            ("assistant", "Rested."),
        ]
        results = {
            m["toolCallId"].split("/")[1]: m["content"] for m in messages if m["role"] == "tool"
        }
        assert results["call_1_1"] == '"slept 0.01"'
        assert results["call_1_2"] == "error: no pillow"
        assert "no tool named 'teleport'" in results["call_1_3"]
        assert results["call_2_1"] == '"Rested."'
        assert (read["events"][0], read["events"][-1]) == ("RUN_STARTED", "RUN_FINISHED")

    def test_the_stock_ag_ui_client_continues_a_thread(
        self, node_dir: Path, make_agent: MakeAgent, tmp_path: Path
    ) -> None:
        """`new HttpAgent({url, headers})` as it comes, no override, posts to `/ag-ui` on a
        server with a token: its thread is the session, its run ids the runs', and its second
        question on the thread continues the session (the model reads the first turn)."""
        agent = make_agent(["Paris.", "Rome."])
        app = create_app(agent, ServerSettings(tokens=("s3cret",)))
        questions = ("Capital of France?", "And of Italy?")
        with LiveServer(app) as server, httpx.Client(base_url=server.url) as client:
            read = read_with_node(
                node_dir, "ag-ui", server.url, "thread", *questions, "direct", token="s3cret"
            )
            thread = client.get(
                f"/sessions/{read['threadId']}", headers={"Authorization": "Bearer s3cret"}
            ).json()
        first, second = read["runs"]
        assert [r["result"]["answer"] for r in (first, second)] == ["Paris.", "Rome."]
        assert [r["run_id"] for r in thread["runs"]] == [first["runId"], second["runId"]]
        for run in (first, second):
            assert (run["events"][0], run["events"][-1]) == ("RUN_STARTED", "RUN_FINISHED")
            assert recorded(tmp_path, run["runId"])[-1].type == "run_finished"
        model = agent.model
        assert isinstance(model, ScriptedModel)
        conversation = [(m.role, m.content) for m in model.requests[1].messages]
        assert conversation[-3:] == [
            ("user", "Capital of France?"),
            ("assistant", "Paris."),
            ("user", "And of Italy?"),
        ]
        assert [(m["role"], m["content"]) for m in read["messages"]] == [
            ("user", "Capital of France?"),
            ("assistant", "Paris."),
            ("user", "And of Italy?"),
            ("assistant", "Rome."),
        ]

    def test_failed_and_cancelled_runs(
        self, node_dir: Path, make_agent: MakeAgent, seen: Any
    ) -> None:
        """A run that fails reaches the AI SDK as an `error` and AG-UI as `RUN_ERROR`; one
        cancelled (read again once it has ended) as a finished message whose call failed, and
        AG-UI's `cancelled` outcome."""
        with LiveServer(create_app(make_agent([]))) as server:
            failed = {
                p: read_with_node(node_dir, p, server.url, "run", *NAP.values()) for p in PROTOCOLS
            }
        error = "ScriptExhausted: scripted model 'scripted' has 0 turn(s) and was asked for turn 1"
        assert failed["vercel"]["errors"] == [error]
        assert failed["vercel"]["message"]["metadata"]["status"] == "error"
        assert failed["ag-ui"]["end"] == {"type": "RUN_ERROR", "message": error, "code": "error"}

        agent = make_agent([call("nap", seconds=60, label="long")])
        with LiveServer(create_app(agent)) as server, httpx.Client(base_url=server.url) as client:
            with client.stream("POST", "/runs", json=NAP) as response:
                run_id = response.headers["x-run-id"]
                lines = response.iter_lines()  # held: dropping it would disconnect
                next(x for x in lines if '"type":"tool_started"' in x)
                assert client.post(f"/runs/{run_id}/cancel").json()["state"] == "cancelled"
            cancelled = {
                p: read_with_node(node_dir, p, server.url, "replay", run_id) for p in PROTOCOLS
            }
        message = cancelled["vercel"]["message"]
        assert (cancelled["vercel"]["errors"], message["metadata"]["status"]) == ([], "cancelled")
        (nap,) = [p for p in message["parts"] if p["type"] == "tool-nap"]
        assert (nap["state"], nap["errorText"]) == (
            "output-error",
            "the run was cancelled while this call was running",
        )
        end = cancelled["ag-ui"]["end"]
        assert (end["type"], end["outcome"], end["result"]["status"]) == (
            "RUN_FINISHED",
            {"type": "cancelled"},
            "cancelled",
        )
        assert seen.cancelled == ["long"]

    def test_a_typed_output(self, node_dir: Path, tmp_path: Path) -> None:
        """A typed output as it streams: the AI SDK's message holds one `data-output` part,
        updated in place; AG-UI's agent state holds it; both end with the output itself."""
        lyon = {"name": "Lyon", "population": 522000}
        reads = {}
        for protocol in PROTOCOLS:
            model = ScriptedModel(["Lyon has about 522,000 people.", json.dumps(lyon)])
            settings = AgentSettings(trajectory_dir=tmp_path)
            agent = Agent(model, output_type=City, settings=settings)
            with LiveServer(create_app(agent)) as server:
                reads[protocol] = read_with_node(
                    node_dir, protocol, server.url, "run", "How many people live in Lyon?"
                )
        message = reads["vercel"]["message"]
        outputs = [p for p in message["parts"] if p["type"] == "data-output"]
        assert outputs == [{"type": "data-output", "id": "output", "data": lyon}]
        assert message["metadata"]["output"] == lyon
        assert reads["ag-ui"]["state"] == {"output": lyon, "valid": True}
        assert reads["ag-ui"]["result"]["output"] == lyon

    @pytest.mark.parametrize("protocol", ["vercel", "ag-ui"])
    def test_stored_trajectories(
        self, node_dir: Path, make_agent: MakeAgent, tmp_path: Path, protocol: str
    ) -> None:
        """Each stored sample (every planner; plans, coverage, a skipped node, an invalid
        call, a question for the user) read again by the client, from its file."""
        stored = tmp_path / "trajectories" / "samples"
        stored.mkdir(parents=True)
        runs = []
        for sample in SAMPLES:
            trajectory = Trajectory.read(sample)
            runs.append(trajectory)
            shutil.copy(sample, stored / f"{trajectory.header.run_id}.jsonl")
        with LiveServer(create_app(make_agent([]))) as server:
            reads = [
                read_with_node(node_dir, protocol, server.url, "replay", t.header.run_id)
                for t in runs
            ]
        for trajectory, read in zip(runs, reads, strict=True):
            end = trajectory.events[-1]
            assert end.type == "run_finished"
            called = [e.call_id for e in trajectory.events if e.type == "tool_call"]
            if protocol == "vercel":
                message = read["message"]
                assert (read["errors"], message["metadata"]["status"]) == ([], end.status)
                tools = [p for p in message["parts"] if p["type"].startswith("tool-")]
                assert [p["toolCallId"] for p in tools if p["toolCallId"] in called] == called
                texts = [p["text"] for p in message["parts"] if p["type"] == "text"]
                assert end.answer is None or texts[-1].strip() == end.answer.strip()
            else:
                assert read["result"]["status"] == end.status
                assert read["result"]["answer"] == end.answer
                ids = [c["id"] for m in read["messages"] for c in m.get("toolCalls", [])]
                expected = [f"{end.run_id}/{c}" for c in called]
                assert [i for i in ids if i in expected] == expected


class TestStreams:
    @pytest.mark.parametrize("protocol", ["vercel", "ag-ui"])
    @pytest.mark.parametrize("keep_finished", [100, 0], ids=["memory", "file"])
    def test_resume_after_last_event_id(
        self, make_agent: MakeAgent, protocol: str, keep_finished: int
    ) -> None:
        """Streamed again after `Last-Event-ID` (from memory, or from the file once the run
        has left it), a run goes on with exactly the frames that followed that id."""
        agent = make_agent(napping_turns())
        app = create_app(agent, ServerSettings(keep_finished=keep_finished))
        with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as client:
            posted = client.post("/runs", params={"protocol": protocol}, json=NAP)
            run_id = posted.headers["x-run-id"]
            whole = frames(posted.text)
            ids = [int(i) for i, _ in whole if i is not None]
            resumed = {
                after: client.get(
                    f"/runs/{run_id}/events",
                    params={"protocol": protocol},
                    headers={"Last-Event-ID": str(after)},
                )
                for after in ids
            }
            again = client.get(f"/runs/{run_id}/events", params={"protocol": protocol})
        assert frames(again.text) == whole
        for after, response in resumed.items():
            cut = next(i for i, (id_, _) in enumerate(whole) if id_ == str(after)) + 1
            assert frames(response.text) == whole[cut:], after

    def test_headers(self, make_agent: MakeAgent, tmp_path: Path) -> None:
        """The Vercel stream says which it is; each is SSE, the run's id in `X-Run-Id`."""
        agent = make_agent(["Paris.", "Paris."])
        body = {"query": "Capital of France?", "strategy": "direct"}
        with LiveServer(create_app(agent)) as server, httpx.Client(base_url=server.url) as client:
            vercel = client.post("/runs?protocol=vercel", json=body)
            ag_ui = client.post("/runs?protocol=ag-ui", json=body)
        for response in (vercel, ag_ui):
            assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
            assert response.headers["x-run-id"]
        assert vercel.headers["x-vercel-ai-ui-message-stream"] == "v1"
        assert "x-vercel-ai-ui-message-stream" not in ag_ui.headers
        # An answer streamed as text is not said again.
        texts = [json.loads(d) for _, d in frames(vercel.text) if d.startswith('{"type":"text-d')]
        assert [t["delta"] for t in texts] == ["Paris."]
        end = recorded(tmp_path, vercel.headers["x-run-id"])[-1]
        assert frames(vercel.text)[-1] == (str(end.seq), "[DONE]")

    def test_a_session_is_the_thread(self, make_agent: MakeAgent) -> None:
        """A session's runs stream in a UI protocol too; in AG-UI the session is the thread."""
        agent = make_agent(["Paris.", "Rome."])
        with LiveServer(create_app(agent)) as server, httpx.Client(base_url=server.url) as client:
            runs = [
                client.post(
                    "/sessions/trip/messages?protocol=ag-ui",
                    json={"query": query, "strategy": "direct"},
                )
                for query in ("Capital of France?", "And of Italy?")
            ]
        for response, answer in zip(runs, ["Paris.", "Rome."], strict=True):
            started, *_, finished = (json.loads(d) for _, d in frames(response.text))
            run_id = response.headers["x-run-id"]
            assert started == {"type": "RUN_STARTED", "threadId": "trip", "runId": run_id}
            assert (finished["threadId"], finished["result"]["answer"]) == ("trip", answer)

    def test_bad_requests(self, make_agent: MakeAgent) -> None:
        """An unknown protocol is a 422 naming the choices, and so is an unknown query
        parameter (a misspelt `protocol` would stream agentrt's own events); a UI protocol
        with an `Accept` that refuses SSE is a 406."""
        agent = make_agent([])
        with LiveServer(create_app(agent)) as server, httpx.Client(base_url=server.url) as client:
            unknown = client.post("/runs?protocol=grpc", json=NAP)
            misspelt = client.get("/runs/nope/events?protocl=vercel")
            ndjson = client.post(
                "/runs?protocol=vercel", json=NAP, headers={"Accept": "application/x-ndjson"}
            )
            events = client.get("/runs/nope/events?protocol=ag-ui", headers={"Accept": "text/html"})
        assert unknown.status_code == 422
        assert unknown.json()["detail"] == (
            "invalid request: query.protocol: Input should be 'agentrt', 'ag-ui' or 'vercel'"
        )
        assert (misspelt.status_code, misspelt.json()["detail"]) == (
            422,
            "invalid request: query.protocl: unknown query parameter: a stream takes only "
            "`protocol`",
        )
        assert (ndjson.status_code, ndjson.json()) == (
            406,
            {
                "detail": "cannot stream as 'application/x-ndjson': the vercel protocol streams "
                "as text/event-stream"
            },
        )
        assert events.status_code == 406

    @pytest.mark.parametrize(
        ("protocol", "marker"),
        [("vercel", '"type":"data-tool-started"'), ("ag-ui", '"name":"agentrt.tool_started"')],
    )
    def test_disconnect_cancels_the_run(
        self, make_agent: MakeAgent, tmp_path: Path, seen: Any, protocol: str, marker: str
    ) -> None:
        """A UI client that goes away mid-run cancels it, as on agentrt's own stream."""
        agent = make_agent([call("nap", seconds=60, label="long")])
        body = {"query": "Take a long nap", "strategy": "exploratory"}
        with LiveServer(create_app(agent)) as server, httpx.Client(base_url=server.url) as client:
            idle = server.tasks()
            with client.stream("POST", f"/runs?protocol={protocol}", json=body) as response:
                run_id = response.headers["x-run-id"]
                lines = response.iter_lines()  # held: dropping it would disconnect too early
                next(x for x in lines if marker in x)
            wait_until(
                lambda: client.get(f"/runs/{run_id}").json()["state"] != "running",
                "the run to end",
            )
            assert server.tasks() == idle
        assert seen.cancelled == ["long"]
        end = recorded(tmp_path, run_id)[-1]
        assert (end.type, getattr(end, "status", None)) == ("run_finished", "cancelled")


class TestTranslators:
    @pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.stem}")
    def test_samples_as_ag_ui_events(self, sample: Path) -> None:
        """Every frame of every stored sample is an AG-UI event its types accept; messages,
        steps and tool calls open and close in order, and the run ends once."""
        events = Trajectory.read(sample).events
        check_stream(events)
        translator = AgUiTranslator()
        out = [ag_ui_event.validate_json(f) for e in events for f in translator.frames(e)]
        types = [e.type.value for e in out]
        assert types[0] == "RUN_STARTED"
        assert types[-1] in {"RUN_FINISHED", "RUN_ERROR"}
        assert types.count("RUN_FINISHED") + types.count("RUN_ERROR") == 1
        for opened, closed in [
            ("TEXT_MESSAGE_START", "TEXT_MESSAGE_END"),
            ("REASONING_START", "REASONING_END"),
            ("TOOL_CALL_START", "TOOL_CALL_END"),
            ("STEP_STARTED", "STEP_FINISHED"),
        ]:
            assert types.count(opened) == types.count(closed), opened

    @pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.stem}")
    def test_samples_as_vercel_chunks(self, sample: Path) -> None:
        """Plans, coverage, repairs and other events without a chunk of their own become
        `data-*` parts; every text part is closed; the stream ends with finish and [DONE]."""
        events = Trajectory.read(sample).events
        translator = VercelTranslator()
        lines = [f for e in events for f in translator.frames(e)]
        assert lines[-1] == "[DONE]"
        chunks = [json.loads(f) for f in lines[:-1]]
        types = [c["type"] for c in chunks]
        assert (types[0], types[-1]) == ("start", "finish")
        assert types.count("text-start") == types.count("text-end")
        assert types.count("start-step") == types.count("finish-step")
        for e in events:
            if e.type in {"plan_created", "coverage", "repair", "plan_adapted", "node_skipped"}:
                assert "data-" + e.type.replace("_", "-") in types


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first
        b: the second
    """
    return a + b


class TestReadme:
    @pytest.mark.parametrize(
        ("protocol", "example", "printed"),
        [
            (
                "vercel",
                "vercel.mjs",
                [
                    "tool-add { a: 1234, b: 5678 } → 6912",
                    "tool-finish { answer: '6912' } → 6912",
                    "6912",
                    "ok",
                ],
            ),
            (
                "ag-ui",
                "ag_ui.mjs",
                [
                    'add {"a": 1234, "b": 5678}',
                    "→ 6912",
                    'finish {"answer": "6912"}',
                    '→ "6912"',
                    "6912",
                    "ok 6912",
                ],
            ),
        ],
    )
    def test_the_snippets_run(
        self, node_dir: Path, tmp_path: Path, protocol: str, example: str, printed: list[str]
    ) -> None:
        """The README shows tests/node/examples as they are, and each runs as written against
        a server (here a code-first agent on a scripted model, at the port the test gave)."""
        script = (node_dir / "examples" / example).read_text(encoding="utf-8")
        assert f"```js\n{script}```" in (ROOT / "README.md").read_text(encoding="utf-8")
        model = ScriptedModel([call("add", a=1234, b=5678), finish("6912")])
        agent = Agent(model, tools=[add], settings=AgentSettings(trajectory_dir=tmp_path))
        with LiveServer(create_app(agent)) as server:
            done = subprocess.run(
                ["node", "--input-type=module"],
                input=script.replace("http://127.0.0.1:8000", server.url),
                cwd=node_dir,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == printed, protocol


def test_a_repair_is_a_data_part_and_a_custom_event() -> None:
    """A pipeline's parameter repair (no stored sample has one) reaches the AI SDK as a
    `data-repair` part and AG-UI as a `CUSTOM` event, the event's fields as they are."""
    repair = RepairEvent(
        run_id="r",
        seq=7,
        t=0.5,
        step="s2",
        param="column",
        before="Region",
        after="region",
        reason="the column is named in lower case",
        applied=True,
    )
    fields = {
        "seq": 7,
        "t": 0.5,
        "step": "s2",
        "param": "column",
        "before": "Region",
        "after": "region",
        "reason": "the column is named in lower case",
        "applied": True,
    }
    assert VercelTranslator().chunks(repair) == [{"type": "data-repair", "data": fields}]
    (custom,) = [ag_ui_event.validate_json(f) for f in AgUiTranslator().frames(repair)]
    assert (custom.type.value, custom.name, custom.value) == ("CUSTOM", "agentrt.repair", fields)
