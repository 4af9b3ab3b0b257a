"""The HTTP API, with httpx against a real uvicorn server on a free loopback port."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fastapi.dependencies.utils
import fastapi.routing
import httpx
import pytest
from httpx_sse import EventSource, ServerSentEvent, connect_sse

from agentrt import Agent, AgentSettings, ScriptedModel, UserError, Workspace
from agentrt.server import ServerSettings, check_exposure, create_app
from agentrt.server.auth import is_loopback
from agentrt.server.streams import negotiate
from tests.helpers import MakeAgent, call, finish
from tests.server.serving import LiveServer, outward_address, wait_until

NAP = {"query": "Take a long nap", "strategy": "exploratory"}
NDJSON = {"Accept": "application/x-ndjson"}


def recorded_lines(tmp_path: Path, run_id: str) -> list[str]:
    """The event lines of a run's trajectory file, as written."""
    (path,) = (tmp_path / "trajectories").glob(f"*/{run_id}.jsonl")
    return path.read_text().splitlines()[1:]


def as_sse(lines: list[str]) -> str:
    return "".join(
        f"event: {json.loads(x)['type']}\nid: {i}\ndata: {x}\n\n" for i, x in enumerate(lines)
    )


class Reader:
    """An SSE stream read a bit at a time. Hold on to it while the stream should stay open:
    an iterator of httpx-sse that is dropped closes its response (a disconnect)."""

    def __init__(self, source: EventSource) -> None:
        self.run_id = source.response.headers.get("x-run-id", "")
        """The run's id, for the stream that started it."""
        self._events = source.iter_sse()

    def until(self, kind: str) -> list[ServerSentEvent]:
        """Read events up to and including the first of type `kind`."""
        read = []
        for event in self._events:
            read.append(event)
            if event.event == kind:
                return read
        raise AssertionError(f"the stream ended without {kind}: {[e.event for e in read]}")

    def rest(self) -> list[ServerSentEvent]:
        return list(self._events)


def state(client: httpx.Client, run_id: str) -> str:
    return str(client.get(f"/runs/{run_id}").json()["state"])


class TestStreaming:
    def test_sse_is_the_trajectory(self, make_agent: MakeAgent, tmp_path: Path) -> None:
        """POST /runs streams every event as `event: <type>`, `id: <seq>`, `data: <json>`,
        the JSON byte for byte what the trajectory file holds."""
        agent = make_agent([call("nap", seconds=0.01, label="a"), finish("Rested.")])
        with LiveServer(create_app(agent)) as server:
            response = httpx.post(f"{server.url}/runs", json=NAP, timeout=30)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
        lines = recorded_lines(tmp_path, response.headers["x-run-id"])
        assert json.loads(lines[-1])["answer"] == "Rested."
        assert response.text == as_sse(lines)

    def test_ndjson_is_the_trajectory(self, make_agent: MakeAgent, tmp_path: Path) -> None:
        """With `Accept: application/x-ndjson`, one event per line, the same JSON."""
        agent = make_agent([finish("Rested.")])
        with LiveServer(create_app(agent)) as server:
            response = httpx.post(f"{server.url}/runs", json=NAP, headers=NDJSON, timeout=30)
        assert response.headers["content-type"] == "application/x-ndjson"
        lines = recorded_lines(tmp_path, response.headers["x-run-id"])
        assert response.text == "\n".join(lines) + "\n"

    def test_keepalive_while_quiet(self, make_agent: MakeAgent, tmp_path: Path) -> None:
        """An SSE stream that is quiet longer than `keepalive` (here while a tool naps) gets
        comment lines, which clients skip; the events are unchanged."""
        agent = make_agent([call("nap", seconds=0.3, label="a"), finish("Rested.")])
        app = create_app(agent, ServerSettings(keepalive=0.05))
        with LiveServer(app) as server:
            response = httpx.post(f"{server.url}/runs", json=NAP, timeout=30)
        lines = recorded_lines(tmp_path, response.headers["x-run-id"])
        assert ": keep-alive\n\n" in response.text
        assert response.text.replace(": keep-alive\n\n", "") == as_sse(lines)

    def test_neither_format_acceptable(self, make_agent: MakeAgent) -> None:
        """An Accept that allows neither format is refused before anything runs."""
        with LiveServer(create_app(make_agent([]))) as server:
            response = httpx.post(
                f"{server.url}/runs", json=NAP, headers={"Accept": "application/xml"}
            )
        assert (response.status_code, response.json()) == (
            406,
            {
                "detail": "cannot stream as 'application/xml': accept text/event-stream or "
                "application/x-ndjson"
            },
        )

    @pytest.mark.parametrize(
        ("accept", "expected"),
        [
            (None, "sse"),
            ("*/*", "sse"),
            ("text/event-stream", "sse"),
            ("application/x-ndjson", "ndjson"),
            ("application/jsonl", "ndjson"),
            ("text/event-stream;q=0.5, application/x-ndjson", "ndjson"),
            ("application/x-ndjson;q=0.2, text/*;q=0.9", "sse"),
            ("application/json", None),
            ("text/event-stream;q=0", None),
        ],
    )
    def test_negotiate(self, accept: str | None, expected: str | None) -> None:
        """The highest q wins among the types we stream; nothing acceptable gives None."""
        assert negotiate(accept) == expected


class TestCancellation:
    @pytest.mark.parametrize("accept", ["text/event-stream", "application/x-ndjson"])
    def test_disconnect_cancels_the_run(
        self, make_agent: MakeAgent, tmp_path: Path, seen: Any, accept: str
    ) -> None:
        """A client that goes away mid-run cancels it over a real socket: the tool in flight is
        cancelled, the trajectory ends `run_finished: cancelled`, and no task is left. The
        server notices while the stream is quiet (a 60 s nap, no keep-alive due)."""
        agent = make_agent([call("nap", seconds=60, label="long")])
        with LiveServer(create_app(agent)) as server, httpx.Client(base_url=server.url) as client:
            idle = server.tasks()
            with client.stream("POST", "/runs", json=NAP, headers={"Accept": accept}) as response:
                run_id = response.headers["x-run-id"]
                # Either format carries each event's JSON on a line of its own. The iterator is
                # held: one dropped would close the response, the disconnect, too early.
                lines = response.iter_lines()
                next(x for x in lines if '"type":"tool_started"' in x)
                # The probe sees the run's tasks while it is live: it would see any left over.
                running = server.tasks()
                assert {"Agent._produce", "agentrt.server.runs.RunRegistry._consume"} <= set(
                    running
                ), running
            # The response is closed unread: httpx drops its connection.
            wait_until(lambda: state(client, run_id) != "running", "the run to end")
            info = client.get(f"/runs/{run_id}").json()

            assert server.tasks() == idle
        assert seen.cancelled == ["long"]
        end = info["events"][-1]
        assert (info["state"], end["type"], end["status"], end["error"]) == (
            "cancelled",
            "run_finished",
            "cancelled",
            "the run was cancelled",
        )
        finished = [e for e in info["events"] if e["type"] == "tool_finished"]
        assert [(e["name"], e["status"]) for e in finished] == [("nap", "cancelled")]
        assert info["events"] == [json.loads(line) for line in recorded_lines(tmp_path, run_id)]

    def test_cancel_endpoint_ends_every_stream(
        self, make_agent: MakeAgent, tmp_path: Path, seen: Any
    ) -> None:
        """POST /runs/{id}/cancel answers once the run has ended; the owner's stream and a
        watcher's (resumed after Last-Event-ID, while live) both end with the recorded
        run_finished: cancelled."""
        agent = make_agent([call("nap", seconds=60, label="long")])
        with (
            LiveServer(create_app(agent)) as server,
            httpx.Client(base_url=server.url, timeout=30) as client,
            connect_sse(client, "POST", "/runs", json=NAP) as owner,
        ):
            owner_stream = Reader(owner)
            run_id = owner_stream.run_id
            seen_by_owner = owner_stream.until("tool_started")
            live = client.get(f"/runs/{run_id}").json()
            assert (live["state"], live["header"]) == ("running", None)
            assert [e["seq"] for e in live["events"]] == [int(e.id) for e in seen_by_owner]

            after = next(int(e.id) for e in seen_by_owner if e.event == "tool_call")
            with connect_sse(
                client, "GET", f"/runs/{run_id}/events", headers={"Last-Event-ID": str(after)}
            ) as watcher:
                watched = Reader(watcher)
                seen_by_watcher = watched.until("tool_started")
                cancelled = client.post(f"/runs/{run_id}/cancel")
                assert (cancelled.status_code, cancelled.json()) == (
                    200,
                    {
                        "run_id": run_id,
                        "state": "cancelled",
                        "query": "Take a long nap",
                        "session_id": None,
                        "answer": None,
                    },
                )
                seen_by_watcher += watched.rest()
            seen_by_owner += owner_stream.rest()

            again = client.post(f"/runs/{run_id}/cancel")
            assert (again.status_code, again.json()) == (
                409,
                {"detail": f"run {run_id!r} has already ended (cancelled)"},
            )
        assert seen.cancelled == ["long"]
        lines = recorded_lines(tmp_path, run_id)
        assert json.loads(lines[-1])["status"] == "cancelled"
        assert [e.data for e in seen_by_owner] == lines
        assert [e.data for e in seen_by_watcher] == lines[after + 1 :]

    def test_shutdown_cancels_live_runs(
        self, make_agent: MakeAgent, tmp_path: Path, seen: Any
    ) -> None:
        """A server stopping with runs in progress cancels them first: their streams end with
        the recorded run_finished: cancelled."""
        agent = make_agent([call("nap", seconds=60, label="long")])
        server = LiveServer(create_app(agent))
        with (
            server,
            httpx.Client(base_url=server.url) as client,
            connect_sse(client, "POST", "/runs", json=NAP) as source,
        ):
            stream = Reader(source)
            stream.until("tool_started")
            server.stop()
            rest = stream.rest()
        assert seen.cancelled == ["long"]
        lines = recorded_lines(tmp_path, stream.run_id)
        assert json.loads(lines[-1])["status"] == "cancelled"
        assert [e.data for e in rest] == lines[-len(rest) :]
        assert rest[-1].event == "run_finished"


class TestReading:
    def test_resume_from_the_file(self, make_agent: MakeAgent, tmp_path: Path) -> None:
        """Once a run has left memory (here as soon as it ends), GET /runs/{id} and its
        events come from the file."""
        agent = make_agent(["Paris."])
        app = create_app(agent, ServerSettings(keep_finished=0))
        with LiveServer(app) as server, httpx.Client(base_url=server.url) as client:
            body = {"query": "Capital of France?", "strategy": "direct"}
            posted = client.post("/runs", json=body, headers=NDJSON)
            run_id = posted.headers["x-run-id"]
            lines = recorded_lines(tmp_path, run_id)

            resumed = client.get(f"/runs/{run_id}/events", headers={**NDJSON, "Last-Event-ID": "2"})
            past_the_end = client.get(
                f"/runs/{run_id}/events", headers={**NDJSON, "Last-Event-ID": "999"}
            )
            info = client.get(f"/runs/{run_id}").json()
            bad = client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": "soon"})
        # Evicted the moment it ended, the run still streamed whole to the client that started it.
        assert posted.text == "\n".join(lines) + "\n"
        assert resumed.text == "\n".join(lines[3:]) + "\n"
        assert (past_the_end.status_code, past_the_end.text) == (200, "")
        assert (info["state"], info["answer"], info["header"]["strategy"]) == (
            "ok",
            "Paris.",
            "direct",
        )
        # Compared as values: pydantic writes 9.7e-5 where Python's json writes 9.7e-05.
        assert info["events"] == [json.loads(line) for line in lines]
        assert bad.status_code == 422
        assert bad.json()["detail"] == (
            "invalid request: header.Last-Event-ID: must be the seq of an event the client has, "
            "an integer ≥ 0 (got 'soon')"
        )

    def test_saved_trajectories(self, make_agent: MakeAgent, tmp_path: Path) -> None:
        """Runs recorded without the server are listed and served; unknown ids are 404."""
        agent = make_agent(["Paris."])

        async def record() -> str:
            result = await agent.run("Capital of France?", strategy="direct")
            return result.trajectory.header.run_id

        import anyio

        run_id = anyio.run(record)
        broken = tmp_path / "trajectories" / "2020-01-01" / "broken.jsonl"
        broken.parent.mkdir()
        broken.write_text("not json\n")
        with LiveServer(create_app(agent)) as server, httpx.Client(base_url=server.url) as client:
            listing = client.get("/trajectories").json()
            info = client.get(f"/runs/{run_id}").json()
            missing = client.get("/runs/nope")
            unreadable = client.get("/runs/broken")
        directory = tmp_path / "trajectories"
        assert listing["directory"] == str(directory)
        runs = [(f["run_id"], f["query"]) for f in listing["files"]]
        assert sorted(runs, key=str) == sorted(
            [(run_id, "Capital of France?"), ("broken", None)], key=str
        )
        assert (info["state"], info["query"], info["answer"]) == (
            "ok",
            "Capital of France?",
            "Paris.",
        )
        assert (missing.status_code, missing.json()) == (
            404,
            {
                "detail": "no run 'nope': none in progress here and no trajectory file for it "
                f"in {directory}"
            },
        )
        assert unreadable.status_code == 422
        assert unreadable.json()["detail"] == (
            "invalid request: path.run_id: the trajectory of run 'broken' is "
            f"broken: {broken}:1: not a trajectory header: Invalid JSON: expected ident at line 1 "
            "column 2"
        )


class TestSessions:
    def test_messages_continue_a_session(self, make_agent: MakeAgent) -> None:
        """POST /sessions/{id}/messages runs in the session: the second run sees the first's
        question and answer; GET /sessions/{id} lists both."""
        agent = make_agent(["Your name is Ada.", "You told me: Ada."])
        with LiveServer(create_app(agent)) as server, httpx.Client(base_url=server.url) as client:
            first = client.post(
                "/sessions/s1/messages",
                json={"query": "My name is Ada.", "strategy": "direct"},
                headers=NDJSON,
            )
            second = client.post(
                "/sessions/s1/messages",
                json={"query": "What is my name?", "strategy": "direct"},
                headers=NDJSON,
            )
            session = client.get("/sessions/s1").json()
            unknown = client.get("/sessions/s2")
        ids = [first.headers["x-run-id"], second.headers["x-run-id"]]
        assert session == {
            "session_id": "s1",
            "runs": [
                {
                    "run_id": ids[0],
                    "state": "ok",
                    "query": "My name is Ada.",
                    "session_id": "s1",
                    "answer": "Your name is Ada.",
                },
                {
                    "run_id": ids[1],
                    "state": "ok",
                    "query": "What is my name?",
                    "session_id": "s1",
                    "answer": "You told me: Ada.",
                },
            ],
        }
        request = agent.model.requests[1]  # type: ignore[attr-defined]
        assert [(m.role, m.content) for m in request.messages[1:]] == [
            ("user", "My name is Ada."),
            ("assistant", "Your name is Ada."),
            ("user", "What is my name?"),
        ]
        assert (unknown.status_code, unknown.json()) == (
            404,
            {"detail": "no session 's2' on this server"},
        )

    def test_a_session_s_runs_outlive_the_server_with_a_store(
        self, make_agent: MakeAgent, tmp_path: Path
    ) -> None:
        """With a session store, GET /sessions/{id} lists the runs the store recorded: a new
        server over the same file lists the earlier one's run, then its own after it."""
        store = f"sqlite:///{tmp_path / 'sessions.sqlite'}"
        ids = []
        for answer in ("Your name is Ada.", "You told me: Ada."):
            agent = make_agent([answer], session_store=store)
            with LiveServer(create_app(agent)) as server:
                posted = httpx.post(
                    f"{server.url}/sessions/s1/messages",
                    json={"query": "Name?", "strategy": "direct"},
                    headers=NDJSON,
                )
                ids.append(posted.headers["x-run-id"])
                listed = httpx.get(f"{server.url}/sessions/s1").json()["runs"]
        assert [(r["run_id"], r["state"]) for r in listed] == [(ids[0], "ok"), (ids[1], "ok")]
        assert listed[1]["answer"] == "You told me: Ada."  # this server's own run
        assert listed[0]["answer"] is None  # the store keeps the status, not the answer

    def test_one_run_at_a_time_per_session(self, make_agent: MakeAgent) -> None:
        """A message to a session whose run is still going is refused: it would not see the
        answer it follows."""
        agent = make_agent([call("nap", seconds=60, label="long")])
        with (
            LiveServer(create_app(agent)) as server,
            httpx.Client(base_url=server.url) as client,
            connect_sse(client, "POST", "/runs", json={**NAP, "session_id": "s1"}) as first,
        ):
            stream = Reader(first)
            stream.until("tool_started")
            second = client.post("/sessions/s1/messages", json={"query": "And now?"})
        assert (second.status_code, second.json()) == (
            409,
            {
                "detail": f"session 's1' has a run in progress ({stream.run_id}): wait for it to "
                "finish or cancel it, so that the next message sees its answer"
            },
        )


class TestAccess:
    def test_bearer_token(self, make_agent: MakeAgent) -> None:
        """With tokens configured, every API route needs one of them; the page and the schema
        do not."""
        app = create_app(make_agent([]), ServerSettings(tokens=("alpha", "beta")))
        with LiveServer(app) as server, httpx.Client(base_url=server.url) as client:
            none = client.get("/trajectories")
            wrong = client.get("/trajectories", headers={"Authorization": "Bearer gamma"})
            right = client.get("/trajectories", headers={"Authorization": "Bearer beta"})
            public = [client.get(p).status_code for p in ("/", "/static/app.js", "/openapi.json")]
        assert (none.status_code, none.json(), none.headers["www-authenticate"]) == (
            401,
            {"detail": "this server needs a bearer token: send 'Authorization: Bearer <token>'"},
            "Bearer",
        )
        assert (wrong.status_code, wrong.json()) == (
            401,
            {"detail": "the bearer token is not one this server accepts"},
        )
        assert right.status_code == 200
        assert public == [200, 200, 200]

    def test_no_request_waits_on_the_thread_pool(
        self, make_agent: MakeAgent, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The token check and the routes' dependencies run on the event loop: FastAPI sends a
        plain function to a worker thread, a round trip through the pool for every request."""
        pooled: list[str] = []

        async def record(func: Any, *args: Any, **kwargs: Any) -> Any:
            pooled.append(getattr(func, "__name__", repr(func)))
            return func(*args, **kwargs)

        monkeypatch.setattr(fastapi.dependencies.utils, "run_in_threadpool", record)
        monkeypatch.setattr(fastapi.routing, "run_in_threadpool", record)
        app = create_app(make_agent([finish("Rested.")]), ServerSettings(tokens=("alpha",)))
        alpha = {"Authorization": "Bearer alpha"}
        with LiveServer(app) as server, httpx.Client(base_url=server.url, headers=alpha) as client:
            run = client.post("/runs", json=NAP, headers=NDJSON, timeout=30)
            statuses = [
                run.status_code,
                client.get(f"/runs/{run.headers['x-run-id']}").status_code,
                client.get("/trajectories").status_code,
            ]
        assert statuses == [200, 200, 200]
        assert pooled == []

    def test_run_limits(self, make_agent: MakeAgent) -> None:
        """Past the per-token or the server limit, a run is refused with 429 naming the limit."""
        agent = make_agent([call("nap", seconds=60, label="a"), call("nap", seconds=60, label="b")])
        settings = ServerSettings(tokens=("alpha", "beta"), max_runs=2, max_runs_per_token=1)
        alpha, beta = ({"Authorization": f"Bearer {t}"} for t in ("alpha", "beta"))
        with (
            LiveServer(create_app(agent, settings)) as server,
            httpx.Client(base_url=server.url) as client,
            connect_sse(client, "POST", "/runs", json=NAP, headers=alpha) as first,
        ):
            first_stream = Reader(first)
            first_stream.until("tool_started")
            by_token = client.post("/runs", json=NAP, headers=alpha)
            with connect_sse(client, "POST", "/runs", json=NAP, headers=beta) as second:
                second_stream = Reader(second)
                second_stream.until("tool_started")
                by_server = client.post("/runs", json=NAP, headers=beta)
        assert (by_token.status_code, by_token.json()) == (
            429,
            {
                "detail": "this token's runs in progress are at its limit (max_runs_per_token=1)"
                "; retry when one has finished",
                "limit": "token",
            },
        )
        assert (by_server.status_code, by_server.json()) == (
            429,
            {
                "detail": "the server's runs in progress are at its limit (max_runs=2); retry "
                "when one has finished",
                "limit": "server",
            },
        )

    def test_tokenless_server_refuses_beyond_loopback(self, make_agent: MakeAgent) -> None:
        """An app without tokens, served on an outward address by some other means than
        `agentrt serve`, refuses every API request that arrives there (403), even one that
        names a loopback host (its Host is the client's to write)."""
        address = outward_address()
        if address is None:
            pytest.skip("this machine has no address beyond loopback to serve on")
        loopback = {"Host": "localhost"}
        with LiveServer(create_app(make_agent([])), host=address) as server:
            refused = httpx.get(f"{server.url}/trajectories", headers=loopback)
            page = httpx.get(server.url, headers=loopback)
            by_address = httpx.get(server.url)
        assert (refused.status_code, refused.json()) == (
            403,
            {
                "detail": "this server has no token, so it serves over loopback only, and this "
                f"request reached it at {address}: start it with a token (agentrt serve --token)"
            },
        )
        assert page.status_code == 200
        assert by_address.status_code == 421

    def test_no_exposure_without_a_token(self) -> None:
        """Binding beyond loopback needs a token; loopback does not."""
        with pytest.raises(UserError, match=r"refusing to serve on 0\.0\.0\.0 without a token"):
            check_exposure("0.0.0.0", ())
        check_exposure("0.0.0.0", ("alpha",))
        for host in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"):
            assert is_loopback(host), host
            check_exposure(host, ())
        assert not is_loopback("example.com")
        assert not is_loopback("192.168.1.10")


class TestValidation:
    @pytest.mark.parametrize(
        ("body", "detail"),
        [
            ({}, "invalid request: body.query: Field required"),
            ({"query": ""}, "invalid request: body.query: String should have at least 1 character"),
            (
                {"query": " \n\t"},
                "invalid request: body.query: Value error, the query is empty (only whitespace)",
            ),
            (
                {"query": "Hi", "colour": "red"},
                "invalid request: body.colour: Extra inputs are not permitted",
            ),
            (
                {"query": "Hi", "session_id": "../x"},
                "invalid request: body.session_id: String should match pattern "
                "'^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'",
            ),
            (
                {"query": "Hi", "strategy": 3},
                "invalid request: body.strategy: Input should be a valid string",
            ),
        ],
    )
    def test_bad_bodies(self, make_agent: MakeAgent, body: dict[str, Any], detail: str) -> None:
        """Each bad body is a 422 whose detail says which field and why."""
        with LiveServer(create_app(make_agent([]))) as server:
            response = httpx.post(f"{server.url}/runs", json=body)
        assert response.status_code == 422
        assert response.json()["detail"] == detail

    def test_unknown_strategy(self, make_agent: MakeAgent, workspace: Workspace) -> None:
        """A strategy the workspace lacks is refused naming the ones it has (also listed in the
        schema)."""
        with LiveServer(create_app(make_agent([]))) as server:
            response = httpx.post(f"{server.url}/runs", json={"query": "Hi", "strategy": "nope"})
            schema = httpx.get(f"{server.url}/openapi.json").json()
        known = ", ".join(workspace.strategies)
        assert response.status_code == 422
        assert response.json()["detail"] == (
            f"invalid request: body.strategy: no strategy 'nope' (known: {known})"
        )
        strategy = schema["components"]["schemas"]["RunRequest"]["properties"]["strategy"]
        assert strategy["anyOf"][0]["enum"] == list(workspace.strategies)

    @pytest.mark.parametrize(
        ("content", "detail"),
        [
            (
                b"{nope",
                "not JSON: Expecting property name enclosed in double quotes (at character 1)",
            ),
            (b'{"query": "\xff"}', "not JSON: not UTF-8 text (invalid start byte at byte 11)"),
        ],
    )
    def test_not_json(self, make_agent: MakeAgent, content: bytes, detail: str) -> None:
        """A body that is not JSON says so, and where."""
        with LiveServer(create_app(make_agent([]))) as server:
            response = httpx.post(
                f"{server.url}/runs", content=content, headers={"Content-Type": "application/json"}
            )
        assert (response.status_code, response.json()["detail"]) == (
            422,
            f"invalid request: body: {detail}",
        )

    def test_bad_path(self, make_agent: MakeAgent) -> None:
        """An id that could name another path is refused before any file is looked at."""
        with LiveServer(create_app(make_agent([]))) as server:
            response = httpx.get(f"{server.url}/runs/.hidden")
        assert (response.status_code, response.json()["detail"]) == (
            422,
            "invalid request: path.run_id: String should match pattern "
            "'^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'",
        )

    def test_needs_recorded_trajectories(self, workspace: Workspace) -> None:
        agent = Agent(
            workspace=workspace,
            model=ScriptedModel([]),
            settings=AgentSettings(trajectory_dir=None),
        )
        with pytest.raises(UserError, match=r"the server reads runs back from their trajectories"):
            create_app(agent)
