"""`POST /ag-ui`: an AG-UI `RunAgentInput` as `HttpAgent` posts it, on a real server on a
loopback port. The stock client itself drives it in tests/server/test_ui_protocols.py; here,
what it makes of a thread's messages, and the inputs it refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import httpx

from agentrt import RunStartedEvent, ScriptedModel
from agentrt.server import ServerSettings, create_app
from tests.helpers import MakeAgent, call
from tests.server.serving import LiveServer, wait_until
from tests.server.test_ui_protocols import frames, recorded

SSE_ACCEPT = {"Accept": "text/event-stream"}


def user(text: str, id_: str = "u") -> dict[str, Any]:
    return {"id": id_, "role": "user", "content": text}


def agent_input(*messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A `RunAgentInput` as `HttpAgent` sends it (empty tools, context and props included)."""
    body: dict[str, Any] = {
        "threadId": "thread-1",
        "runId": "run-1",
        "state": {},
        "messages": list(messages),
        "tools": [],
        "context": [],
        "forwardedProps": {"strategy": "direct"},
    }
    return body | fields


def said(model: ScriptedModel, call_index: int) -> list[tuple[str, str]]:
    """The conversation the model was sent on a call: (role, content), system left out."""
    messages = model.requests[call_index].messages
    return [(m.role, m.content) for m in messages if m.role != "system"]


def refusal(response: httpx.Response) -> tuple[int, list[Any]]:
    return response.status_code, [(e["loc"], e["msg"]) for e in response.json()["errors"]]


class TestRuns:
    def test_the_same_frames_as_protocol_ag_ui(self, make_agent: MakeAgent, tmp_path: Path) -> None:
        """The run streams as AG-UI events, the thread and run ids the client's, and exactly
        the frames `GET /runs/{id}/events?protocol=ag-ui` gives for it afterwards."""
        agent = make_agent(["Paris."])
        with LiveServer(create_app(agent)) as server, httpx.Client(base_url=server.url) as client:
            posted = client.post(
                "/ag-ui", json=agent_input(user("Capital of France?")), headers=SSE_ACCEPT
            )
            again = client.get("/runs/run-1/events", params={"protocol": "ag-ui"})
        assert (posted.status_code, posted.headers["x-run-id"]) == (200, "run-1")
        assert posted.headers["content-type"] == "text/event-stream; charset=utf-8"
        events = [json.loads(d) for _, d in frames(posted.text)]
        assert events[0] == {"type": "RUN_STARTED", "threadId": "thread-1", "runId": "run-1"}
        assert (events[-1]["type"], events[-1]["result"]["answer"]) == ("RUN_FINISHED", "Paris.")
        assert frames(posted.text) == frames(again.text)
        start = recorded(tmp_path, "run-1")[0]
        assert isinstance(start, RunStartedEvent)
        assert start.session_id == "thread-1"

    def test_a_new_thread_starts_from_its_history(self, make_agent: MakeAgent) -> None:
        """A thread new to the server (say, after a restart) is seeded with the client's
        questions and answers, tool calls and reasoning left out; once the session has
        messages, it is what the model reads, whatever history the client sends."""
        agent = make_agent(["Rome.", "Madrid."])
        model = cast("ScriptedModel", agent.model)
        earlier = [
            user("Capital of France?", "u1"),
            {"id": "r1", "role": "reasoning", "content": "Easy."},
            {
                "id": "a1",
                "role": "assistant",
                "content": "Let me look.",
                "toolCalls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": "{}"},
                    }
                ],
            },
            {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "Paris"},
            {"id": "a2", "role": "assistant", "content": "Paris."},
        ]
        with LiveServer(create_app(agent)) as server, httpx.Client(base_url=server.url) as client:
            first = client.post("/ag-ui", json=agent_input(*earlier, user("And Italy?", "u2")))
            other = [
                user("Capital of Peru?", "x1"),
                {"id": "x2", "role": "assistant", "content": "Lima."},
            ]
            second = client.post(
                "/ag-ui", json=agent_input(*other, user("And Spain?", "u3"), runId="run-2")
            )
        assert (first.status_code, second.status_code) == (200, 200)
        assert said(model, 0) == [
            ("user", "Capital of France?"),
            ("assistant", "Paris."),
            ("user", "And Italy?"),
        ]
        assert said(model, 1)[:4] == [
            ("user", "Capital of France?"),
            ("assistant", "Paris."),
            ("user", "And Italy?"),
            ("assistant", "Rome."),
        ]
        assert said(model, 1)[-1] == ("user", "And Spain?")
        assert "Capital of Peru?" not in str(said(model, 1))

    def test_the_token(self, make_agent: MakeAgent) -> None:
        """Behind the same token as the other routes."""
        agent = make_agent(["Paris."])
        app = create_app(agent, ServerSettings(tokens=("s3cret",)))
        body = agent_input(user("Capital of France?"))
        with LiveServer(app) as server, httpx.Client(base_url=server.url) as client:
            none = client.post("/ag-ui", json=body)
            wrong = client.post("/ag-ui", json=body, headers={"Authorization": "Bearer nope"})
            right = client.post("/ag-ui", json=body, headers={"Authorization": "Bearer s3cret"})
        assert (none.status_code, wrong.status_code, right.status_code) == (401, 401, 200)
        assert json.loads(frames(right.text)[-1][1])["type"] == "RUN_FINISHED"

    def test_disconnect_cancels_the_run(
        self, make_agent: MakeAgent, tmp_path: Path, seen: Any
    ) -> None:
        """A client that goes away mid-run cancels it."""
        agent = make_agent([call("nap", seconds=60, label="long")])
        body = agent_input(user("Take a long nap"), forwardedProps={"strategy": "exploratory"})
        with LiveServer(create_app(agent)) as server, httpx.Client(base_url=server.url) as client:
            idle = server.tasks()
            with client.stream("POST", "/ag-ui", json=body) as response:
                lines = response.iter_lines()  # held: dropping it would disconnect too early
                next(x for x in lines if '"name":"agentrt.tool_started"' in x)
            wait_until(
                lambda: client.get("/runs/run-1").json()["state"] != "running", "the run to end"
            )
            assert server.tasks() == idle
        assert seen.cancelled == ["long"]
        end = recorded(tmp_path, "run-1")[-1]
        assert (end.type, getattr(end, "status", None)) == ("run_finished", "cancelled")


class TestRefusals:
    def test_bad_inputs(self, make_agent: MakeAgent) -> None:
        """Each refused with a 422 naming the field, before anything runs."""
        agent = make_agent([])
        cases: dict[str, tuple[dict[str, Any], list[Any]]] = {
            "not an input": (
                {"messages": []},
                [
                    (["body", "threadId"], "Field required"),
                    (["body", "runId"], "Field required"),
                ],
            ),
            "no message": (
                agent_input(),
                [(["body", "messages"], "no user message: the last message is the question")],
            ),
            "answer last": (
                agent_input(user("Hi"), {"id": "a", "role": "assistant", "content": "Hello."}),
                [
                    (
                        ["body", "messages", 1, "role"],
                        "the last message is the question, a user's; this one's role is "
                        "'assistant'",
                    )
                ],
            ),
            "blank": (
                agent_input(user("  ")),
                [(["body", "messages", 0, "content"], "the question is empty")],
            ),
            "image": (
                agent_input(
                    {
                        "id": "u",
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "What is this?"},
                            {"type": "image", "source": {"type": "url", "value": "http://x/a.png"}},
                        ],
                    }
                ),
                [
                    (
                        ["body", "messages", 0, "content", 1],
                        "agentrt takes text: this part is 'image'",
                    )
                ],
            ),
            "bad run id": (
                agent_input(user("Hi"), runId="../etc/passwd"),
                [
                    (
                        ["body", "runId"],
                        "'../etc/passwd' cannot be an agentrt id: 1 to 128 letters, digits and "
                        "`._:-`, starting with a letter or digit",
                    )
                ],
            ),
            "frontend tools": (
                agent_input(user("Hi"), tools=[{"name": "confetti", "description": "Throw it"}]),
                [(["body", "tools"], None)],
            ),
            "context": (
                agent_input(user("Hi"), context=[{"description": "page", "value": "home"}]),
                [(["body", "context"], None)],
            ),
            "unknown strategy": (
                agent_input(user("Hi"), forwardedProps={"strategy": "psychic"}),
                [
                    (
                        ["body", "forwardedProps", "strategy"],
                        "no strategy 'psychic' (known: "
                        + ", ".join(agent.workspace.strategies)
                        + ")",
                    )
                ],
            ),
        }
        with LiveServer(create_app(agent)) as server, httpx.Client(base_url=server.url) as client:
            got = {name: client.post("/ag-ui", json=body) for name, (body, _) in cases.items()}
            query = client.post("/ag-ui?protocol=vercel", json=agent_input(user("Hi")))
            not_json = client.post(
                "/ag-ui", content=b"{", headers={"Content-Type": "application/json"}
            )
        for name, (_, expected) in cases.items():
            status, errors = refusal(got[name])
            assert status == 422, name
            if expected[0][1] is None:  # a reason of its own, checked below
                assert [loc for loc, _ in errors] == [expected[0][0]], name
            else:
                assert errors == expected, name
        assert "cannot call a client's" in got["frontend tools"].json()["detail"]
        assert "no ambient context" in got["context"].json()["detail"]
        assert refusal(query) == (
            422,
            [(["query", "protocol"], "unknown query parameter: this endpoint takes none")],
        )
        assert not_json.status_code == 422

    def test_a_taken_run_id_and_a_busy_thread(self, make_agent: MakeAgent) -> None:
        """A run id already used, by a run that has ended (its trajectory names it) or one in
        progress, is a 409, and so is a thread with a run in progress."""
        agent = make_agent(["Paris.", call("nap", seconds=60, label="long")])
        with LiveServer(create_app(agent)) as server, httpx.Client(base_url=server.url) as client:
            done = client.post("/ag-ui", json=agent_input(user("Capital of France?")))
            again = client.post("/ag-ui", json=agent_input(user("Hi"), threadId="other"))
            long = agent_input(
                user("Nap"), runId="run-2", forwardedProps={"strategy": "exploratory"}
            )
            with client.stream("POST", "/ag-ui", json=long) as response:
                lines = response.iter_lines()  # held: dropping it would disconnect
                next(x for x in lines if "agentrt.tool_started" in x)
                busy = client.post("/ag-ui", json=agent_input(user("Hi"), runId="run-3"))
                live = client.post(
                    "/ag-ui", json=agent_input(user("Hi"), threadId="third", runId="run-2")
                )
                assert client.post("/runs/run-2/cancel").status_code == 200
        assert done.status_code == 200
        assert (again.status_code, again.json()["detail"]) == (
            409,
            "run id 'run-1' is taken: a run's id names its trajectory, give a new one",
        )
        assert busy.status_code == 409
        assert (live.status_code, live.json()["detail"]) == (
            409,
            "run id 'run-2' is taken: a run's id names its trajectory, give a new one",
        )
        assert "session 'thread-1' has a run in progress (run-2)" in busy.json()["detail"]
