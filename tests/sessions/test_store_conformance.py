"""Every session store backend keeps the same promises: memory (where one process is enough),
a SQLite file, and a real PostgreSQL server the tests start (`tests/postgres.py`).

Writers in other processes are real processes (`tests/sessions/store_writer.py`), each with a
store of its own over the same file or database.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest

from agentrt import (
    MemorySessionStore,
    Message,
    RunRecord,
    SessionConflict,
    SessionStore,
    SessionTool,
    StoreUnavailable,
    Turn,
    open_store,
)
from agentrt.events import NativeToolCall
from agentrt.sessions.postgres import PostgresSessionStore
from agentrt.sessions.sqlite import SqliteSessionStore

ROOT = Path(__file__).parents[2]
WRITERS, TURNS, SESSIONS = 8, 50, 10


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "memory":
        return "memory:"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sessions.sqlite'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture(params=["sqlite", "postgres"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store several processes can share."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sessions.sqlite'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
async def store(url: str) -> AsyncIterator[SessionStore]:
    opened = open_store(url)
    await opened.open()
    yield opened
    await opened.close()


def worked_turn(run_id: str) -> Turn:
    """A turn with a tool call, its result, and a session tool made."""
    return Turn(
        run_id=run_id,
        messages=[
            Message(role="user", content="2 + 3?"),
            Message(
                role="assistant",
                content="",
                tool_calls=(NativeToolCall(id="c1", name="add", arguments='{"a": 2, "b": 3}'),),
            ),
            Message(role="tool", content="5", tool_call_id="c1", name="add"),
            Message(role="assistant", content="5."),
        ],
        tools={
            "read_report": SessionTool(
                name="read_report", description="Read it.", base="read", bind={"item": "r"}
            )
        },
    )


class TestOpening:
    def test_the_url_picks_the_backend(self, tmp_path: Path) -> None:
        assert isinstance(open_store("memory:"), MemorySessionStore)
        assert isinstance(open_store(tmp_path / "a.sqlite"), SqliteSessionStore)
        relative = open_store("sqlite:///a.sqlite")
        assert isinstance(relative, SqliteSessionStore)
        assert relative.path == Path("a.sqlite")
        absolute = open_store(f"sqlite:///{tmp_path}/a.sqlite")
        assert isinstance(absolute, SqliteSessionStore)
        assert absolute.path == tmp_path / "a.sqlite"
        assert isinstance(open_store("postgresql://u@h/d"), PostgresSessionStore)
        with pytest.raises(Exception, match="use memory:, sqlite:///path or postgresql://"):
            open_store("mysql://u:secret@h/d")

    async def test_an_unreachable_postgres_is_named_without_its_password(self) -> None:
        with socket.socket() as probe:  # a port nothing listens on
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        store = open_store(f"postgresql://agentrt:s3cret@127.0.0.1:{port}/db")
        with pytest.raises(StoreUnavailable) as caught:
            await store.open()
        message = str(caught.value)
        assert f"postgresql://agentrt@127.0.0.1:{port}/db is unreachable" in message
        assert "s3cret" not in message
        assert "s3cret" not in repr(caught.value.__cause__)

    async def test_a_missing_postgres_database_is_unavailable(self, postgres_url: str) -> None:
        store = open_store(postgres_url.rpartition("/")[0] + "/nowhere")
        with pytest.raises(StoreUnavailable, match='database "nowhere" does not exist'):
            await store.open()

    async def test_a_sqlite_file_that_cannot_be_made_is_unavailable(self, tmp_path: Path) -> None:
        (tmp_path / "file").write_text("not a folder")
        store = open_store(tmp_path / "file" / "sessions.sqlite")
        with pytest.raises(StoreUnavailable, match="cannot make its folder"):
            await store.open()


class TestSessions:
    async def test_a_new_session_is_empty(self, store: SessionStore) -> None:
        session = await store.load("nobody")
        assert (session.id, session.version, session.messages, session.tools) == (
            "nobody",
            0,
            [],
            {},
        )

    async def test_turns_round_trip(self, store: SessionStore, url: str) -> None:
        """Messages with tool calls and results, and session tools, read back as written,
        by this store and by a new one over the same data."""
        first, second = worked_turn("r1"), worked_turn("r2")
        assert await store.append("s", first, 0) == 1
        assert await store.append("s", second, 1) == 2
        session = await store.load("s")
        assert session.version == 2
        assert session.messages == first.messages + second.messages
        assert session.tools == first.tools
        if url != "memory:":
            again = open_store(url)
            await again.open()
            assert await again.load("s") == session
            await again.close()

    async def test_a_stale_version_conflicts_and_writes_nothing(self, store: SessionStore) -> None:
        await store.append("s", worked_turn("r1"), 0)
        with pytest.raises(SessionConflict, match="at version 1, not 0") as caught:
            await store.append("s", worked_turn("late"), 0)
        assert (caught.value.expected, caught.value.actual) == (0, 1)
        with pytest.raises(SessionConflict):
            await store.append("s", worked_turn("ahead"), 5)
        session = await store.load("s")
        assert session.version == 1
        assert len(session.messages) == 4

    async def test_sessions_are_apart(self, store: SessionStore) -> None:
        await store.append("a", worked_turn("r1"), 0)
        assert (await store.load("b")).version == 0

    async def test_named_results_last_write_wins(self, store: SessionStore) -> None:
        await store.put_results("s", {"top": {"columns": ["a"], "data": [[1]]}, "n": 3})
        await store.put_results("s", {"top": {"columns": ["a"], "data": [[2]]}})
        assert (await store.load("s")).results == {
            "top": {"columns": ["a"], "data": [[2]]},
            "n": 3,
        }
        assert (await store.load("other")).results == {}


class TestRuns:
    async def test_runs_round_trip(self, store: SessionStore) -> None:
        started = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
        run = RunRecord(
            run_id="r1", session_id="s", query="q?", trajectory="/t/r1.jsonl", started=started
        )
        await store.put_run(run)
        assert await store.get_run("r1") == run
        assert run.status == "running"
        assert run.owner == f"{socket.gethostname()}:{os.getpid()}"
        done = run.model_copy(update={"status": "ok", "updated": datetime.now(UTC)})
        await store.put_run(done)
        assert await store.get_run("r1") == done
        assert await store.get_run("r2") is None

    async def test_runs_are_listed_newest_first(self, store: SessionStore) -> None:
        for i, session in enumerate(["a", "b", "a"]):
            started = datetime(2026, 1, 1, 0, 0, i, tzinfo=UTC)
            await store.put_run(
                RunRecord(run_id=f"r{i}", session_id=session, query="q", started=started)
            )
        assert [r.run_id for r in await store.list_runs()] == ["r2", "r1", "r0"]
        assert [r.run_id for r in await store.list_runs(session_id="a")] == ["r2", "r0"]
        assert [r.run_id for r in await store.list_runs(limit=1)] == ["r2"]


def writer(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.sessions.store_writer", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


class TestConcurrentWriters:
    async def test_eight_processes_lose_no_turn(self, shared_url: str) -> None:
        """8 processes × 50 turns on 10 shared sessions, all started together: every turn is
        stored once, and each writer's turns are in its order."""
        store = open_store(shared_url)
        await store.open()  # the schema, before the writers race for it
        writers = [
            writer("interleave", shared_url, str(i), str(TURNS), str(SESSIONS))
            for i in range(WRITERS)
        ]
        try:
            for w in writers:
                assert w.stdout is not None
                assert w.stdout.readline() == "ready\n"
            for w in writers:
                assert w.stdin is not None
                w.stdin.write("go\n")
                w.stdin.flush()
            assert [w.wait(120) for w in writers] == [0] * WRITERS
        finally:
            for w in writers:
                if w.poll() is None:
                    w.kill()
                    w.wait()
        seen: list[str] = []
        for s in range(SESSIONS):
            session = await store.load(f"s{s}")
            ids = [m.content.removeprefix("writer ") for m in session.messages if m.role == "user"]
            assert session.version == len(ids)
            for w in range(WRITERS):
                mine = [int(i.split(" turn ")[1]) for i in ids if i.startswith(f"{w} ")]
                assert mine == sorted(mine)
            seen += ids
        assert sorted(seen) == sorted(f"{w} turn {j}" for w in range(WRITERS) for j in range(TURNS))
        await store.close()

    async def test_a_writer_killed_mid_turn_leaves_the_last_complete_turn(
        self, shared_url: str
    ) -> None:
        """SIGKILL inside a turn's transaction (its row written, not committed): the session
        reads back as its last complete turn, and the next append takes the position."""
        store = open_store(shared_url)
        await store.open()
        await store.append("s", worked_turn("r1"), 0)
        hung = writer("hang", shared_url, "s")
        try:
            assert hung.stdout is not None
            assert hung.stdout.readline() == "inside\n"
            assert await transaction_open(shared_url)
            hung.send_signal(signal.SIGKILL)
            assert hung.wait(30) == -signal.SIGKILL
        finally:
            if hung.poll() is None:
                hung.kill()
                hung.wait()
        session = await store.load("s")
        assert session.version == 1
        assert session.messages == worked_turn("r1").messages
        assert await store.append("s", worked_turn("r2"), 1) == 2
        assert (await store.load("s")).version == 2
        await store.close()


async def transaction_open(url: str) -> bool:
    """Whether another process holds a write transaction open on the store."""
    if url.startswith("sqlite:///"):
        db = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=0, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            return "locked" in str(exc)
        finally:
            db.close()
        return False
    db = await asyncpg.connect(url)
    try:
        count = await db.fetchval(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE state = 'idle in transaction' AND datname = current_database()"
        )
    finally:
        await db.close()
    return bool(count)


class TestLostConnection:
    async def test_a_store_whose_database_goes_away_says_so(self, postgres_url: str) -> None:
        """The database refuses new connections and its backends are terminated (waited for):
        the store's next call fails with StoreUnavailable naming the store and the cause."""
        store = open_store(postgres_url)
        await store.open()
        await store.append("s", worked_turn("r1"), 0)
        await cut_off(postgres_url)
        with pytest.raises(StoreUnavailable, match="session store postgresql://"):
            await store.append("s", worked_turn("r2"), 1)
        await store.close()


async def cut_off(url: str) -> None:
    """Make the database at `url` unreachable: no new connections, the open ones ended."""
    name = url.rpartition("/")[2]
    admin = await asyncpg.connect(url.rpartition("/")[0] + "/postgres")
    try:
        await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        await admin.execute(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = $1",
            name,
        )
    finally:
        await admin.close()
