"""The web page, driven in headless Chromium (Debian's, through Playwright) against the live
server. Screenshots go to test-artifacts/."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from httpx_sse import connect_sse
from playwright.sync_api import Browser, Page, sync_playwright

from agentrt import Agent, Trajectory
from agentrt.server import ServerSettings, create_app
from tests.helpers import MakeAgent, call, finish
from tests.server.serving import LiveServer

CHROMIUM = "/usr/bin/chromium"  # Debian's: Playwright's own browsers cannot be downloaded here
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).parents[2] / "test-artifacts"
TWO_NAPS = [
    "I will take two naps at once.\n"
    + call("nap", seconds=0.4, label="a")
    + call("nap", seconds=0.25, label="b"),
    "Both naps are done. " + finish("Two naps taken."),
]

DAG = [
    json.dumps(
        {
            "plan": "Two naps at once, then a note that needs both.",
            "nodes": [
                {"id": "A", "tool": "nap", "args": {"seconds": 0.4, "label": "a"}},
                {"id": "B", "tool": "nap", "args": {"seconds": 0.25, "label": "b"}},
                {
                    "id": "C",
                    "tool": "echo",
                    "args": {"text": "{A}, then {B}"},
                    "depends_on": ["A", "B"],
                },
            ],
        }
    ),
    json.dumps({"action": "finish", "answer": "Napped twice.", "reason": "both naps are done"}),
]
"""A `dag` plan (strategy `planned`): two naps at once, then a node that needs both."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    page.close()
    assert errors == [], "the page's script failed"


def bars(page: Page, name: str) -> list[dict[str, Any]]:
    """The timeline's bars of the calls to `name`: lane, start and end."""
    found = page.eval_on_selector_all(
        f"#timeline g.call[data-name={name}]",
        "gs => gs.map(g => ({id: g.dataset.callId, lane: +g.dataset.lane, "
        "start: +g.dataset.start, end: +g.dataset.end, status: g.dataset.status}))",
    )
    return list(found)


def edges(page: Page) -> list[list[str]]:
    """The timeline's DAG edges, as [from call, to call], sorted."""
    found = page.eval_on_selector_all(
        "#timeline path.edge", "ps => ps.map(p => [p.dataset.from, p.dataset.to])"
    )
    return sorted(found)


def assert_parallel(naps: list[dict[str, Any]]) -> None:
    """Two bars side by side: different lanes, time ranges that overlap."""
    assert len(naps) == 2, naps
    a, b = naps
    assert a["lane"] != b["lane"]
    assert max(a["start"], b["start"]) < min(a["end"], b["end"])


def record(agent: Agent, query: str, strategy: str = "exploratory") -> Trajectory:
    """Run `agent` to the end without the server (in a thread: Playwright's sync API holds an
    event loop in this one)."""

    def run() -> Trajectory:
        result = anyio.run(lambda: agent.run(query, strategy=strategy))
        return result.trajectory

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result()


def screenshot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / name, full_page=True)


def ask(page: Page, url: str, query: str, strategy: str = "") -> None:
    page.goto(url)
    page.fill("#query", query)
    page.fill("#strategy", strategy)
    page.click("#run")


def test_live_run_shows_parallel_calls(make_agent: MakeAgent, page: Page) -> None:
    """A question typed in the page runs live: the streamed text, each tool call a bar on the
    timeline (the parallel naps in two lanes, overlapping), its arguments and result on click."""
    agent = make_agent(TWO_NAPS, token_delay=0.02)
    with LiveServer(create_app(agent)) as server:
        ask(page, server.url, "Take two naps", "exploratory")
        page.wait_for_selector("#state.ok", timeout=30_000)

        naps = bars(page, "nap")
        assert_parallel(naps)
        assert page.inner_text("#transcript .step[data-step='1'] .text") == (
            "I will take two naps at once.\n"
        )
        assert page.inner_text("#answer") == "Two naps taken."

        page.click(f"#timeline g.call[data-call-id={naps[0]['id']}] rect")
        assert json.loads(page.inner_text("#details-args")) == {"seconds": 0.4, "label": "a"}
        assert json.loads(page.inner_text("#details-result")) == "slept 0.4"
        screenshot(page, "server-timeline.png")


def test_watch_then_cancel(make_agent: MakeAgent, page: Page, seen: Any) -> None:
    """While a tool runs its bar is shown running; Cancel ends the run, and the page shows the
    recorded end."""
    agent = make_agent([call("nap", seconds=60, label="long")])
    with LiveServer(create_app(agent)) as server:
        ask(page, server.url, "Take a long nap", "exploratory")
        page.wait_for_selector("#timeline g.call.running[data-name=nap]", state="attached")
        screenshot(page, "server-live.png")
        page.click("#cancel")
        page.wait_for_selector("#state.cancelled", timeout=30_000)
        assert [b["status"] for b in bars(page, "nap")] == ["cancelled"]
        assert page.inner_text("#answer") == "cancelled: the run was cancelled"
    assert seen.cancelled == ["long"]


def test_follow_a_run_started_elsewhere(make_agent: MakeAgent, page: Page, seen: Any) -> None:
    """A link to a run in progress opens it as of now and follows it (resuming after the last
    event it was given) to its end, here a cancel from another client."""
    agent = make_agent([call("nap", seconds=60, label="long")])
    with (
        LiveServer(create_app(agent)) as server,
        httpx.Client(base_url=server.url) as client,
        connect_sse(
            client, "POST", "/runs", json={"query": "Nap", "strategy": "exploratory"}
        ) as owner,
    ):
        events = owner.iter_sse()  # held: a dropped iterator would close the stream
        next(e for e in events if e.event == "tool_started")
        run_id = owner.response.headers["x-run-id"]
        page.goto(f"{server.url}/#run={run_id}")
        page.wait_for_selector("#timeline g.call.running[data-name=nap]", state="attached")
        assert client.post(f"/runs/{run_id}/cancel").status_code == 200
        page.wait_for_selector("#state.cancelled")
        assert [b["status"] for b in bars(page, "nap")] == ["cancelled"]
        assert [e.event for e in events][-1] == "run_finished"
    assert seen.cancelled == ["long"]


def test_errors_are_shown(make_agent: MakeAgent, page: Page) -> None:
    """A refused request shows the server's reason."""
    with LiveServer(create_app(make_agent([]))) as server:
        ask(page, server.url, "Hi", "nope")
        page.wait_for_selector("#error:not([hidden])")
        assert page.inner_text("#error").startswith(
            "422: invalid request: body.strategy: no strategy 'nope' (known: "
        )


def test_open_a_saved_trajectory(make_agent: MakeAgent, page: Page) -> None:
    """The page lists the server's trajectory files (once given the token) and opens one the
    same way as a live run."""
    agent = make_agent(TWO_NAPS)
    run_id = record(agent, "Take two naps").header.run_id
    app = create_app(agent, ServerSettings(tokens=("secret",)))
    with LiveServer(app) as server:
        page.goto(server.url)
        page.wait_for_selector("#trajectories li.hint")
        assert page.inner_text("#trajectories") == (
            "401: this server needs a bearer token: send 'Authorization: Bearer <token>'"
        )
        page.fill("#token", "secret")
        page.press("#token", "Tab")  # the token is taken on change
        page.click(f"#trajectories button[data-run-id='{run_id}']")
        page.wait_for_selector("#state.ok")
        assert page.inner_text("#summary .query") == "ok Take two naps"
        assert_parallel(bars(page, "nap"))


def test_plan_draws_dag_edges(make_agent: MakeAgent, page: Page) -> None:
    """A `dag` plan run live: its independent nodes side by side, and an edge from each node
    a node waits for (`depends_on`) to it."""
    agent = make_agent(DAG)
    with LiveServer(create_app(agent)) as server:
        ask(page, server.url, "Nap twice, then say so", "planned")
        page.wait_for_selector("#state.ok", timeout=30_000)
        assert_parallel(bars(page, "nap"))
        assert edges(page) == [["A", "C"], ["B", "C"]]
        screenshot(page, "server-dag.png")


def test_open_a_trajectory_file(make_agent: MakeAgent, page: Page, tmp_path: Path) -> None:
    """A trajectory pasted or uploaded opens without the server, drawn as a live run is; a
    line that is not JSON is named."""
    agent = make_agent(DAG)
    run_id = record(agent, "Nap twice, then say so", "planned").header.run_id
    (path,) = tmp_path.glob(f"trajectories/*/{run_id}.jsonl")
    with LiveServer(create_app(agent)) as server:
        page.goto(server.url)
        page.fill("#paste", path.read_text())
        page.click("#open-paste")
        page.wait_for_selector("#state.ok")
        assert page.inner_text("#summary .query") == "ok Nap twice, then say so"
        assert edges(page) == [["A", "C"], ["B", "C"]]

        page.goto(server.url)
        page.set_input_files("#file", path)
        page.wait_for_selector("#state.ok")
        assert_parallel(bars(page, "nap"))

        header = path.read_text().splitlines()[0]
        page.fill("#paste", header + "\nnot json\n")
        page.click("#open-paste")
        assert page.inner_text("#error").startswith("pasted:2: not JSON (")


def test_an_mcp_tool_call_opens_like_any_other(
    make_agent: MakeAgent, page: Page, tmp_path: Path
) -> None:
    """An MCP server's tool is a tool like any other in the events, its name as the catalog
    gives it (a server prefix, dots and dashes): its bar, chip and details show it the same."""
    agent = make_agent([call("echo", text="sunny"), finish("It is sunny.")])
    run_id = record(agent, "Weather?").header.run_id
    (path,) = tmp_path.glob(f"trajectories/*/{run_id}.jsonl")
    name = "weather.get-forecast"
    trajectory = path.read_text().replace('"name":"echo"', f'"name":"{name}"')
    with LiveServer(create_app(agent)) as server:
        page.goto(server.url)
        page.fill("#paste", trajectory)
        page.click("#open-paste")
        page.wait_for_selector("#state.ok")
        (bar,) = bars(page, f"'{name}'")
        assert bar["status"] == "ok"
        page.click(f"#timeline g.call[data-call-id={bar['id']}] rect")
        assert page.inner_text("#details h3") == name
        assert json.loads(page.inner_text("#details-args")) == {"text": "sunny"}
        assert json.loads(page.inner_text("#details-result")) == "sunny"
        assert page.inner_text("#transcript .chip").startswith(name)


def test_approve_a_held_call_from_the_page(page: Page, tmp_path: Path) -> None:
    """A run held for approval shows the held call with its arguments; Approve resumes it
    (the recorded turn replayed), and the page streams the resumed run to its answer."""
    from agentrt import AgentSettings, ScriptedModel
    from tests.resume.test_resume import FIRST_TURN, Ledger, make_tools

    ledger = Ledger()
    settings = AgentSettings(trajectory_dir=tmp_path / "trajectories")
    agent = Agent(ScriptedModel([FIRST_TURN, "Paid."]), tools=make_tools(ledger), settings=settings)
    with LiveServer(create_app(agent)) as server:
        ask(page, server.url, "Pay Bob")
        page.wait_for_selector("#state.needs_approval", timeout=30_000)
        held = "#approvals .pending[data-call-id=call_1_2]"
        assert json.loads(page.inner_text(f"{held} pre")) == {"to": "Bob", "amount": 30}
        screenshot(page, "server-approval.png")
        page.click(f"{held} button.approve")
        page.wait_for_selector("#state.ok", timeout=30_000)
        assert page.inner_text("#answer") == "Paid."
        assert page.inner_text("#resumed").startswith("resumed from ")
        assert page.is_hidden("#approvals")
    assert ledger.paid == [{"to": "Bob", "amount": 30}]
