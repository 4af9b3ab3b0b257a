"""A conversation with the copilot: memory across turns and agents, and asking back.

The model is scripted as a policy of the request alone (no hidden state): it resolves "he"
only from what the conversation shows it, and asks the user when it cannot.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import pytest

from agentrt import (
    Agent,
    AgentSettings,
    AskEvent,
    GuardEvent,
    ModelRequest,
    ScriptedModel,
    ToolCallEvent,
    ToolFinishedEvent,
    ToolsNarrowedEvent,
    Workspace,
)
from agentrt.sql.examples import ExampleSelector, load_examples
from agentrt.sql.grounding import SchemaIndex
from agentrt.sql.guard import GuardPolicy, SqlGuard
from agentrt.vectors.embedder import Embedder
from tests.helpers import check_stream, finish, last

COPILOT = Path(__file__).parents[2] / "workspaces" / "dbcopilot"
WHO = "Who sold the most?"
TREND = "Show the sales trend of the store he works in."
QUESTION = "Who do you mean by 'he'?"

TOP_SQL = (
    "SELECT e.name, sum(s.quantity) AS units FROM sales s JOIN employees e "
    "ON s.employee_id = e.id GROUP BY e.id ORDER BY units DESC LIMIT 1"
)


def call(tool: str, **arguments: Any) -> str:
    """A Hermes-style call (`helpers.call` takes the tool as `name`, which run_sql also has)."""
    return "<tool_call>" + json.dumps({"name": tool, "arguments": arguments}) + "</tool_call>"


def trend_sql(employee: str) -> str:
    return (
        "SELECT st.name AS store, substr(s.sold_on, 1, 7) AS month, sum(s.quantity) AS units "
        "FROM sales s JOIN employees e ON s.employee_id = e.id "
        "JOIN stores st ON e.store_id = st.id "
        f"WHERE st.id = (SELECT store_id FROM employees WHERE name = '{employee}') "
        "GROUP BY month ORDER BY month"
    )


def copilot_policy(request: ModelRequest) -> str:
    """What a good copilot model would write next, read from the request alone."""
    messages = request.messages
    start = max(i for i, m in enumerate(messages) if m.role == "user")
    query, history, done = messages[start].content, messages[:start], messages[start + 1 :]
    # The run's own first call (`first_calls`) grounds the question; the policy reads it not.
    results = [json.loads(m.content) for m in done if m.role == "tool" and m.name == "run_sql"]
    results += [json.loads(m.content) for m in done if m.name == "plot_line"]
    if query == WHO:
        if not results:
            return call("run_sql", sql=TOP_SQL, name="top")
        name, units = results[0]["head"][0]
        return finish(f"{name} sold the most: {units} units.")
    employee = _who_he_is(query, history)
    if employee is None:
        return call("ask_user", question=QUESTION)
    if not results:
        return call("run_sql", sql=trend_sql(employee), name="trend")
    if len(results) == 1:
        return call("plot_line", x="month", y="units", data="trend")
    head = results[0]["head"]
    return finish(f"Sales at {head[0][0]} over {len(head)} months; the chart is drawn.")


def _who_he_is(query: str, history: list[Any]) -> str | None:
    """The person "he" is: named by an earlier answer, or the reply to our question."""
    if history and history[-1].role == "assistant" and history[-1].content == QUESTION:
        return query.strip()
    for message in reversed(history):
        found = re.search(r"([A-Z]\w+ [A-Z]\w+) sold the most", message.content)
        if found:
            return found.group(1)
    return None


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from .shop import make_shop

    return make_shop(tmp_path_factory.mktemp("conversation") / "shop.sqlite")


@pytest.fixture(scope="module")
def copilot(shop: Path, embedder: Embedder) -> Any:
    workspace = Workspace(COPILOT)
    module = sys.modules[workspace.tools["run_sql"].fn.__module__]
    return module.Copilot(
        guard=SqlGuard(shop, GuardPolicy(max_rows=50)),
        index=SchemaIndex.build(shop, embedder, None),
        examples=ExampleSelector.build(load_examples(COPILOT / "examples"), embedder, None),
    )


class Expected(NamedTuple):
    seller: str
    units: int
    store: str
    months: int
    """Months with sales at the store."""


@pytest.fixture
def expected(shop: Path) -> Expected:
    """The top seller and their store, straight from the database."""
    with sqlite3.connect(shop) as db:
        seller, units, store_id, store = db.execute(
            "SELECT e.name, sum(s.quantity), st.id, st.name FROM sales s "
            "JOIN employees e ON s.employee_id = e.id JOIN stores st ON e.store_id = st.id "
            "GROUP BY e.id ORDER BY sum(s.quantity) DESC LIMIT 1"
        ).fetchone()
        (months,) = db.execute(
            "SELECT count(DISTINCT substr(sold_on, 1, 7)) FROM sales s "
            "JOIN employees e ON s.employee_id = e.id WHERE e.store_id = ?",
            (store_id,),
        ).fetchone()
    return Expected(seller, units, store, months)


def make_copilot_agent(tmp_path: Path, copilot: Any, session: str, turns: int) -> Agent:
    """An agent over the copilot workspace, its sessions in tmp_path/sessions.sqlite; the
    application hands the session its database (the copilot is never stored)."""
    agent = Agent(
        workspace=COPILOT,
        model=ScriptedModel([copilot_policy] * turns),
        settings=AgentSettings(
            trajectory_dir=tmp_path / "trajectories",
            default_strategy="copilot",
            session_store=tmp_path / "sessions.sqlite",
        ),
    )
    agent.artifacts(session)["copilot"] = copilot
    return agent


class TestMemory:
    async def test_he_is_resolved_from_the_first_turn_by_another_agent(
        self, tmp_path: Path, copilot: Any, expected: Expected
    ) -> None:
        """The follow-up runs on a new agent over the same session file: it sees the first
        turn, resolves "he", and charts his store's trend from a SQL result."""
        seller, units = expected.seller, expected.units
        first = make_copilot_agent(tmp_path, copilot, "s1", 2)
        one = await first.run(WHO, session_id="s1", strategy="copilot")
        assert one.status == "ok"
        assert one.answer == f"{seller} sold the most: {units} units."

        second = make_copilot_agent(tmp_path, copilot, "s1", 3)
        top = (await second.sessions.load("s1")).results["top"]
        assert isinstance(top, dict)
        assert top["data"][0] == [seller, units]
        two = await second.run(TREND, session_id="s1", strategy="copilot")
        assert (two.status, two.answer) == (
            "ok",
            f"Sales at {expected.store} over {expected.months} months; the chart is drawn.",
        )
        check_stream(two.trajectory.events)
        chart = [
            e.output
            for e in two.trajectory.events
            if isinstance(e, ToolFinishedEvent) and e.name == "plot_line"
        ]
        assert isinstance(chart[0], dict)
        png = await anyio.Path(str(chart[0]["file"])).read_bytes()
        assert png.startswith(b"\x89PNG")
        sent = second.model.requests[0].messages  # type: ignore[attr-defined]
        # The first turn whole, its SQL call and result included, then the new question and
        # its grounding.
        seen = [(m.role, m.content) for m in sent if m.role != "system"]
        first_turn = [(m.role, m.content) for m in one.messages]
        assert seen[:-2] == [*first_turn, ("user", TREND)]
        assert [m.name for m in sent[-1:]] == ["ground_schema"]
        assert first_turn[0] == ("user", WHO)
        assert first_turn[-1] == ("assistant", one.answer)
        assert "tool" in [role for role, _ in first_turn]

    async def test_without_the_history_the_model_cannot_answer(
        self, tmp_path: Path, copilot: Any
    ) -> None:
        """The same follow-up in a new session: nothing says who "he" is, so the model asks."""
        agent = make_copilot_agent(tmp_path, copilot, "fresh", 1)
        result = await agent.run(TREND, session_id="fresh", strategy="copilot")
        assert (result.status, result.answer) == ("needs_input", QUESTION)
        assert f"## Question to the user\n\n{QUESTION}" in result.trajectory.to_markdown()


class TestAsk:
    async def test_the_run_pauses_and_resumes_with_the_answer(
        self, tmp_path: Path, copilot: Any, expected: Expected
    ) -> None:
        """`ask_user` ends the run `needs_input` with one `ask` event and one `run_finished`;
        the reply, run in the same session, sees the question and charts the trend."""
        seller = expected.seller
        agent = make_copilot_agent(tmp_path, copilot, "s2", 4)
        events = [e async for e in agent.run(TREND, session_id="s2", strategy="copilot")]
        check_stream(events)
        asks = [e for e in events if isinstance(e, AskEvent)]
        # Until a query has run, a turn must query or ask (`answer_needs`, `ask_user`).
        assert agent.model.requests[0].must_call == ["run_sql", "ask_user"]  # type: ignore[attr-defined]
        # Step 1 grounds the question (the strategy's `first_calls`); step 2 asks.
        assert [(a.step, a.question) for a in asks] == [(2, QUESTION)]
        assert events[-2:] == [asks[0], events[-1]]
        end = last(events)
        assert (end.status, end.answer, end.steps) == ("needs_input", QUESTION, 2)

        resumed = await agent.run(seller, session_id="s2", strategy="copilot")
        assert (resumed.status, resumed.answer) == (
            "ok",
            f"Sales at {expected.store} over {expected.months} months; the chart is drawn.",
        )
        sent = agent.model.requests[1].messages  # type: ignore[attr-defined]
        seen = [(m.role, m.content) for m in sent if m.role != "system"]
        # The first run whole: the question, its grounding, the ask_user call and its result,
        # the question asked; then the reply and its grounding.
        roles = ["user", "assistant", "tool", "assistant", "tool", "assistant", "user"]
        assert [role for role, _ in seen] == [*roles, "assistant", "tool"]
        assert (seen[0], seen[4][1], seen[5], seen[6]) == (
            ("user", TREND),
            QUESTION,
            ("assistant", QUESTION),
            ("user", seller),
        )
        assert '"ask_user"' in seen[3][1]


class TestTurns:
    async def test_the_users_own_question_is_not_asked_back(
        self, tmp_path: Path, copilot: Any, expected: Expected
    ) -> None:
        """Its rows in front of it, the 1.5B asked the user its own question, beside its query
        again, five times, until its budget was spent, told each time to read the results and
        answer: the echo is refused as such (`echoed_question`), beside a query or alone, and
        the tools that ask are offered no more in the run. A question of its own beside a query
        is refused until it has read the results (`early_finish`)."""
        agent = make_copilot_agent(tmp_path, copilot, "s7", 0)
        answer = f"{expected.seller} sold the most."
        agent.model = ScriptedModel(
            [
                call("ask_user", question="Which year?") + call("run_sql", sql=TOP_SQL, name="top"),
                call("ask_user", question="who sold the MOST") + call("run_sql", sql=TOP_SQL),
                answer,
            ]
        )
        result = await agent.run(WHO, session_id="s7", strategy="copilot")
        assert (result.status, result.answer) == ("ok", answer)
        guards = [(e.step, e.kind) for e in result.trajectory.events if isinstance(e, GuardEvent)]
        assert guards == [
            (2, "awaits_result"),
            (2, "early_finish"),
            (3, "awaits_result"),
            (3, "echoed_question"),
        ]
        requests = agent.model.requests
        told = [m.content for m in requests[-1].messages if m.role == "tool"]
        assert told[-4].startswith("Not asked: you called ask_user in the same reply")
        assert "answer from them" in told[-4]
        assert told[-2].startswith("Not asked: that is the user's own question")
        offered = [{t.name for t in r.tools} for r in requests[-3:]]
        assert ["ask_user" in names for names in offered] == [True, True, False]
        assert "run_sql" in offered[2]

    async def test_charts_are_offered_when_the_question_asks_for_one(
        self, tmp_path: Path, copilot: Any
    ) -> None:
        """The strategy's `on_request`: "who sold the most" gets no chart tool, nor the
        prompt's step that draws one; "show the sales trend" gets them."""
        charts = {"plot_line", "plot_bar", "plot_histogram"}
        for question, session, wanted in [(WHO, "s5", set()), (TREND, "s6", {"plot_line"})]:
            systems: list[str] = []

            def answer(request: ModelRequest, seen: list[str] = systems) -> str:
                seen.append(request.messages[0].content)
                return finish("Done.")

            agent = make_copilot_agent(tmp_path, copilot, session, 0)
            agent.model = ScriptedModel([answer] * 3)
            result = await agent.run(question, session_id=session, strategy="copilot")
            events = result.trajectory.events
            narrowed = next(e for e in events if isinstance(e, ToolsNarrowedEvent))
            offered = {t.name for t in narrowed.tools}
            assert {"ground_schema", "run_sql", "ask_user"} <= offered
            assert offered & charts >= wanted
            assert bool(offered & charts) == bool(wanted), question
            assert ("Draw the chart the question asks for" in systems[0]) == bool(wanted)

    async def test_a_turn_ends_at_its_query(
        self, tmp_path: Path, copilot: Any, expected: Expected
    ) -> None:
        """A second query or a chart written in the reply of a query cannot have read its
        result: the turn ends at the first query (`after`), and the next turn reads it."""
        agent = make_copilot_agent(tmp_path, copilot, "s3", 0)
        agent.model = ScriptedModel(
            [
                call("run_sql", sql=TOP_SQL, name="top")
                + call("run_sql", sql="SELECT name FROM products", name="other")
                + call("plot_bar", x="name", y="units", data="top"),
                finish("Done."),
            ]
        )
        result = await agent.run(WHO, session_id="s3", strategy="copilot")
        assert (result.status, result.answer) == ("ok", "Done.")
        events = result.trajectory.events
        calls = [(e.step, e.name) for e in events if isinstance(e, ToolCallEvent)]
        assert calls == [(1, "ground_schema"), (2, "run_sql"), (3, "finish")]
        guards = [(e.step, e.kind) for e in events if isinstance(e, GuardEvent)]
        assert guards == [(2, "awaits_result")]
        reply = next(m for m in result.messages if m.role == "assistant" and m.content)
        assert "products" not in reply.content
