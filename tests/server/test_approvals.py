"""`POST /runs/{id}/approvals`: a run held for approval resumed over HTTP and streamed as
`POST /runs` streams, against a real uvicorn server on a loopback port."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from agentrt import Agent, AgentSettings, ScriptedModel
from agentrt.server import ServerSettings, create_app
from tests.resume.test_resume import FIRST_TURN, QUESTION, Ledger, make_tools
from tests.server.serving import LiveServer

NDJSON = {"Accept": "application/x-ndjson"}
APPROVE = {"decisions": {"call_1_2": {"decision": "approve"}}}


def make_agent(tmp_path: Path, turns: list[Any], ledger: Ledger) -> Agent:
    settings = AgentSettings(trajectory_dir=tmp_path / "trajectories")
    return Agent(ScriptedModel(turns), tools=make_tools(ledger), settings=settings)


def events(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line) for line in response.text.splitlines()]


def held(client: httpx.Client) -> str:
    """Start a run that ends `needs_approval`; its id."""
    response = client.post("/runs", json={"query": QUESTION}, headers=NDJSON)
    assert response.status_code == 200, response.text
    assert events(response)[-1]["status"] == "needs_approval"
    return response.headers["x-run-id"]


def test_approve_streams_the_resumed_run(tmp_path: Path) -> None:
    ledger = Ledger()
    agent = make_agent(tmp_path, [FIRST_TURN, "Paid.", FIRST_TURN], ledger)
    with LiveServer(create_app(agent)) as server, httpx.Client(base_url=server.url) as client:
        run_id = held(client)
        response = client.post(f"/runs/{run_id}/approvals", json=APPROVE, headers=NDJSON)
        assert response.status_code == 200, response.text
        assert response.headers["x-run-id"] == run_id
        streamed = events(response)
        assert [e["type"] for e in streamed].count("run_resumed") == 1
        assert (streamed[-1]["status"], streamed[-1]["answer"]) == ("ok", "Paid.")
        assert (ledger.paid, ledger.added) == ([{"to": "Bob", "amount": 30}], 1)
        assert client.get(f"/runs/{run_id}").json()["state"] == "ok"

        again = client.post(f"/runs/{run_id}/approvals", json=APPROVE)
        assert again.status_code == 409, again.text
        assert "has finished (ok)" in again.json()["detail"]

        unknown = client.post("/runs/nope/approvals", json=APPROVE)
        assert unknown.status_code == 404, unknown.text

        other = held(client)
        wrong = {"decisions": {"call_9": {"decision": "approve"}}}
        refused = client.post(f"/runs/{other}/approvals", json=wrong)
        assert refused.status_code == 422, refused.text
        assert "no call 'call_9' awaiting approval" in refused.text
        for body in ({"decisions": {}}, {"decisions": {"call_1_2": {"decision": "maybe"}}}):
            bad = client.post(f"/runs/{other}/approvals", json=body)
            assert bad.status_code == 422, (body, bad.text)
        assert ledger.paid == [{"to": "Bob", "amount": 30}]  # nothing more ran


def test_approvals_need_the_token(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, [], Ledger())
    app = create_app(agent, ServerSettings(tokens=("alpha",)))
    with LiveServer(app) as server:
        response = httpx.post(f"{server.url}/runs/any/approvals", json=APPROVE)
    assert response.status_code == 401, response.text
