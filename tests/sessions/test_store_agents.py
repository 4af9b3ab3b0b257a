"""Agents over a shared session store: the issue's scenario (two agents taking turns on one
session), runs recorded, a conflict resolved by appending after the other turn, and a store
lost mid-run ending the run `error`. On SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from agentrt import (
    Agent,
    AgentSettings,
    Event,
    RunFinishedEvent,
    ScriptedModel,
    StoreUnavailable,
    ToolStartedEvent,
)
from tests.helpers import ROOT, agentrt_logs, call, check_stream, run_python
from tests.sessions.test_store_conformance import cut_off


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sessions.sqlite'}"
    return str(request.getfixturevalue("postgres_url"))


def agent(url: str, tmp_path: Path, *turns: str, tools: list[object] = []) -> Agent:  # noqa: B006 - read only
    return Agent(
        ScriptedModel(list(turns)),
        tools=tools,  # type: ignore[arg-type]
        settings=AgentSettings(trajectory_dir=tmp_path / "trajectories", session_store=url),
    )


@pytest.fixture
async def two(url: str, tmp_path: Path) -> AsyncIterator[tuple[Agent, Agent]]:
    """Two agents, each with a store of its own over `url`, as two workers would have."""
    first = agent(url, tmp_path, "Hello, Ada.", "You asked about Ada, then Bob.")
    second = agent(url, tmp_path, "Hello, Bob.")
    async with first, second:
        yield first, second


class TestTakingTurns:
    async def test_no_turn_is_lost_between_two_agents(self, two: tuple[Agent, Agent]) -> None:
        """q1 on agent 1, q2 on agent 2, q3 on agent 1: the third run sees q1 and q2, and the
        store holds all three turns (issue 20's scenario, which lost q2)."""
        first, second = two
        assert (await first.run("I am Ada.", session_id="s")).status == "ok"
        assert (await second.run("I am Bob.", session_id="s")).status == "ok"
        third = await first.run("Who did I say I was?", session_id="s")
        assert third.status == "ok"
        sent = first.model.requests[-1].messages  # type: ignore[attr-defined]
        assert [m.content for m in sent if m.role == "user"] == [
            "I am Ada.",
            "I am Bob.",
            "Who did I say I was?",
        ]
        session = await second.sessions.load("s")
        assert session.version == 3
        assert [m.content for m in session.messages] == [
            "I am Ada.",
            "Hello, Ada.",
            "I am Bob.",
            "Hello, Bob.",
            "Who did I say I was?",
            "You asked about Ada, then Bob.",
        ]

    async def test_runs_are_recorded_running_then_final(self, url: str, tmp_path: Path) -> None:
        """Recorded `running` while the run is under way (its tool waits for the check, so the
        run cannot end first), and with its final status after."""
        checked = asyncio.Event()

        async def hold() -> str:
            """Wait until the test has read the run's record."""
            await checked.wait()
            return "held"

        first = agent(url, tmp_path, call("hold"), "Hello, Ada.", tools=[hold])
        second = agent(url, tmp_path)
        events: list[Event] = []
        async with first, second:
            async for event in first.run("I am Ada.", session_id="s"):
                if isinstance(event, ToolStartedEvent):
                    running = await second.sessions.get_run(event.run_id)
                    assert running is not None
                    assert running.status == "running"
                    checked.set()
                events.append(event)
            assert checked.is_set()
            run_id = events[-1].run_id
            record = await second.sessions.get_run(run_id)
            assert record is not None
            assert (record.status, record.session_id, record.query) == ("ok", "s", "I am Ada.")
            assert record.owner == f"{socket.gethostname()}:{os.getpid()}"
            assert record.trajectory is not None
            assert Path(record.trajectory).name == f"{run_id}.jsonl"
            assert [r.run_id for r in await second.sessions.list_runs(session_id="s")] == [run_id]


class TestRunEnds:
    async def test_a_failed_run_is_recorded_error_and_adds_no_turn(
        self, url: str, tmp_path: Path
    ) -> None:
        failing = agent(url, tmp_path)  # a scripted model with no turn: the run fails
        async with failing:
            result = await failing.run("Hi", session_id="s")
            record = await failing.sessions.get_run(result.trajectory.header.run_id)
            session = await failing.sessions.load("s")
        assert result.status == "error"
        assert record is not None
        assert record.status == "error"
        assert session.version == 0

    async def test_a_run_its_reader_leaves_is_recorded_cancelled(
        self, url: str, tmp_path: Path
    ) -> None:
        """The reader stops at the first tool call; the run is cancelled and recorded so."""

        async def slow() -> str:
            """Never returns on its own."""
            await asyncio.Event().wait()
            return "never"

        left = agent(url, tmp_path, call("slow"), "never", tools=[slow])
        async with left:
            run = left.run("Go", session_id="s")
            async for event in run:
                if isinstance(event, ToolStartedEvent):
                    break
            await run.aclose()
            record = await left.sessions.get_run(event.run_id)
            session = await left.sessions.load("s")
        assert record is not None
        assert record.status == "cancelled"
        assert session.version == 0


class TestConflict:
    async def test_a_turn_read_before_another_is_appended_after_it(
        self, url: str, tmp_path: Path
    ) -> None:
        """Run A reads the session, waits in a tool while run B (another agent) appends a
        turn; A's append then conflicts, and A's turn goes after B's, its base version
        telling what it read, the conflict logged."""
        b_done = asyncio.Event()

        async def wait_for_b() -> str:
            """Wait for the other run."""
            await b_done.wait()
            return "waited"

        a = agent(url, tmp_path, call("wait_for_b"), "A done.", tools=[wait_for_b])
        b = agent(url, tmp_path, "B done.")
        async with a, b:
            with agentrt_logs() as logs:
                run_a = a.run("Question A", session_id="s").__aiter__()
                async for event in run_a:
                    if isinstance(event, ToolStartedEvent):
                        break
                assert (await b.run("Question B", session_id="s")).status == "ok"
                b_done.set()
                rest = [event async for event in run_a]
            end = rest[-1]
            assert isinstance(end, RunFinishedEvent)
            assert end.status == "ok"
            session = await b.sessions.load("s")
        assert session.version == 2
        assert [m.content for m in session.messages if m.role == "user"] == [
            "Question B",
            "Question A",
        ]
        (conflict,) = [e for e in logs if e["event"] == "session turn follows another writer's"]
        assert (conflict["base_version"], conflict["version"]) == (0, 1)


class TestStoreFailures:
    async def test_an_unreachable_store_at_start_up(self, tmp_path: Path) -> None:
        """`start()` raises StoreUnavailable naming the URL without its password; a run
        without `start()` ends `error` with the same cause."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        url = f"postgresql://agentrt:s3cret@127.0.0.1:{port}/db"
        unreachable = agent(url, tmp_path, "never")
        with pytest.raises(StoreUnavailable, match=f"agentrt@127.0.0.1:{port}/db") as caught:
            await unreachable.start()
        assert "s3cret" not in str(caught.value)
        result = await unreachable.run("Hi", session_id="s")
        assert result.status == "error"
        assert result.error is not None
        assert result.error.startswith("StoreUnavailable: session store postgresql://agentrt@")
        assert "s3cret" not in result.error
        check_stream(result.trajectory.events)

    async def test_a_store_lost_mid_run_ends_it_in_error(
        self, postgres_url: str, tmp_path: Path
    ) -> None:
        """The database goes away while a tool runs: the run ends `error` naming the store,
        with one `run_finished`; once it is back, the session has no turn of that run."""

        async def pull_the_plug() -> str:
            """Make the database unreachable."""
            await cut_off(postgres_url)
            return "gone"

        lost = agent(postgres_url, tmp_path, call("pull_the_plug"), "Done.", tools=[pull_the_plug])
        async with lost:
            result = await lost.run("Go", session_id="s")
        assert result.status == "error"
        assert result.error is not None
        assert "StoreUnavailable: session store postgresql://" in result.error
        check_stream(result.trajectory.events)
        name = postgres_url.rpartition("/")[2]
        admin = await asyncpg.connect(postgres_url.rpartition("/")[0] + "/postgres")
        await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        await admin.close()
        again = agent(postgres_url, tmp_path)
        async with again:
            assert (await again.sessions.load("s")).version == 0
            record = await again.sessions.get_run(result.trajectory.header.run_id)
        assert record is not None
        assert record.status == "running"  # its end could not be recorded either


def test_the_readme_example_runs(tmp_path: Path) -> None:
    """The README's sessions snippet, pasted into a file and run: the second agent's run
    continues the first's session from the SQLite file."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Sessions and runs: SQLite or PostgreSQL\n", 1)[1]
    snippet = section.split("```python\n", 1)[1].split("```\n", 1)[0]
    (tmp_path / "sessions.py").write_text(snippet, encoding="utf-8")
    done = run_python("sessions.py", cwd=tmp_path)
    assert done.stdout.splitlines() == [
        "You said you are Ada.",
        "2 ['I am Ada.', 'Hello, Ada.', 'Who am I?', 'You said you are Ada.']",
    ]


async def test_the_trajectory_never_records_the_store_s_password(
    postgres_url: str, tmp_path: Path
) -> None:
    """The header's settings name the store without its password (the test server trusts
    every connection, so the URL with one still works); `agentrt resume --store` gives it."""
    with_password = postgres_url.replace("agentrt@", "agentrt:s3cret-pw@")
    chat = agent(with_password, tmp_path, "Hello.")
    async with chat:
        result = await chat.run("Hi.", session_id="s")
    assert result.status == "ok", result.error
    assert result.path is not None
    text = result.path.read_text()
    assert "s3cret-pw" not in text
    assert result.trajectory.header.settings["session_store"] == postgres_url
