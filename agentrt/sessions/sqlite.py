"""Internal. Sessions and runs in a SQLite file, shared by every process that opens it.

    turns   (session_id, position, run_id, base_version, messages, tools, created)
    results (session_id, name, value, updated)     named results: last write wins per name
    runs    (run_id, session_id, query, status, owner, trajectory, started, updated)

Each call runs on a worker thread (`anyio.to_thread`) with a connection of its own, opened
for that one transaction and closed after: nothing blocks the event loop, no connection is
left behind by an agent that is never closed, and a connection costs about as much as a
statement. The file is in WAL mode, so readers never wait for a writer; writers queue on the
file's lock (`busy_timeout`), and an `append` takes it first (`BEGIN IMMEDIATE`), so its
version check and insert are one step. A writer that dies mid-transaction leaves nothing: its
uncommitted pages are never read.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TypeVar

import anyio.to_thread
from pydantic import JsonValue, TypeAdapter

from agentrt.exceptions import SessionConflict, StoreUnavailable
from agentrt.models.base import Message
from agentrt.sessions.store import RunRecord, Session, SessionTool, Turn

__all__ = ["SqliteSessionStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS turns (
    session_id TEXT NOT NULL, position INTEGER NOT NULL, run_id TEXT NOT NULL,
    base_version INTEGER NOT NULL, messages TEXT NOT NULL, tools TEXT NOT NULL,
    created TEXT NOT NULL,
    PRIMARY KEY (session_id, position)
);
CREATE TABLE IF NOT EXISTS results (
    session_id TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, updated TEXT NOT NULL,
    PRIMARY KEY (session_id, name)
);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, session_id TEXT, query TEXT NOT NULL, status TEXT NOT NULL,
    owner TEXT NOT NULL, trajectory TEXT, started TEXT NOT NULL, updated TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_session ON runs (session_id, started);
"""

_BUSY_TIMEOUT_MS = 30_000
"""How long a writer waits for another's transaction: far above any one commit, so eight
processes writing at once queue instead of failing."""

_MESSAGES = TypeAdapter(list[Message])
_TOOLS = TypeAdapter(dict[str, SessionTool])
_VALUE: TypeAdapter[JsonValue] = TypeAdapter(JsonValue)
_RUN_COLUMNS = "run_id, session_id, query, status, owner, trajectory, started, updated"

T = TypeVar("T")


class SqliteSessionStore:
    """Sessions and runs in the SQLite file at `path` (made, with its folder, if missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self._ready = False
        self._writing = anyio.Lock()
        """Writers of this process queue here, not on the file: SQLite's busy handler waits
        by sleeping in growing steps, which made the slowest of 50 writers wait 0.8 s."""

    async def open(self) -> None:
        if not self._ready:
            await anyio.to_thread.run_sync(self._create)
            self._ready = True

    def _create(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            msg = f"session store {self.url}: cannot make its folder ({exc})"
            raise StoreUnavailable(msg) from exc
        _in_transaction(self.path, _create)

    async def close(self) -> None:
        return None  # no connection outlives its call

    async def load(self, session_id: str) -> Session:
        return await self._call(partial(_load, session_id=session_id))

    async def append(self, session_id: str, turn: Turn, expected_version: int) -> int:
        return await self._call(
            partial(_append, session_id=session_id, turn=turn, expected=expected_version),
            write=True,
        )

    async def put_results(self, session_id: str, results: Mapping[str, JsonValue]) -> None:
        rows = [
            (session_id, name, _VALUE.dump_json(value).decode(), _now())
            for name, value in results.items()
        ]
        await self._call(
            partial(
                _executemany, sql="INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?)", rows=rows
            ),
            write=True,
        )

    async def put_run(self, run: RunRecord) -> None:
        row = (
            run.run_id,
            run.session_id,
            run.query,
            run.status,
            run.owner,
            run.trajectory,
            run.started.isoformat(),
            run.updated.isoformat(),
        )
        await self._call(
            partial(
                _executemany,
                sql=f"INSERT OR REPLACE INTO runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows=[row],
            ),
            write=True,
        )

    async def get_run(self, run_id: str) -> RunRecord | None:
        runs = await self._call(partial(_runs, where="run_id = ?", params=(run_id,), limit=1))
        return runs[0] if runs else None

    async def list_runs(self, session_id: str | None = None, limit: int = 100) -> list[RunRecord]:
        if session_id is None:
            return await self._call(partial(_runs, where="1", params=(), limit=limit))
        return await self._call(
            partial(_runs, where="session_id = ?", params=(session_id,), limit=limit)
        )

    async def _call(self, work: Callable[[sqlite3.Connection], T], *, write: bool = False) -> T:
        """`work` on a worker thread, in one transaction of a connection of its own; a write
        after this process's earlier writes."""
        await self.open()
        run = partial(anyio.to_thread.run_sync, partial(_in_transaction, self.path, work))
        if not write:
            return await run()
        async with self._writing:
            return await run()


def _in_transaction(path: Path, work: Callable[[sqlite3.Connection], T]) -> T:
    try:
        with _connect(path) as db:
            return work(db)
    except sqlite3.OperationalError as exc:
        msg = f"session store sqlite:///{path}: {exc}"
        raise StoreUnavailable(msg) from exc


@contextlib.contextmanager
def _connect(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection with no implicit transactions (each call says where its own begins),
    committed when the block ends, always closed."""
    db = sqlite3.connect(path, isolation_level=None, timeout=_BUSY_TIMEOUT_MS / 1000)
    try:
        db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        yield db
    finally:
        db.close()


def _create(db: sqlite3.Connection) -> None:
    db.execute("PRAGMA journal_mode = WAL")  # kept by the file: once is enough
    db.executescript(_SCHEMA)


def _load(db: sqlite3.Connection, *, session_id: str) -> Session:
    # One read transaction: the turns and results of one moment.
    db.execute("BEGIN")
    try:
        turns = [
            Turn(
                run_id=run_id,
                base_version=base,
                messages=_MESSAGES.validate_json(messages),
                tools=_TOOLS.validate_json(tools),
            )
            for run_id, base, messages, tools in db.execute(
                "SELECT run_id, base_version, messages, tools FROM turns "
                "WHERE session_id = ? ORDER BY position",
                (session_id,),
            )
        ]
        results = {
            name: _VALUE.validate_json(value)
            for name, value in db.execute(
                "SELECT name, value FROM results WHERE session_id = ?", (session_id,)
            )
        }
    finally:
        db.execute("COMMIT")
    return Session.of(session_id, turns, results)


def _append(db: sqlite3.Connection, *, session_id: str, turn: Turn, expected: int) -> int:
    # IMMEDIATE: the write lock first, so no other writer appends between the check and the
    # insert (the primary key would refuse it anyway).
    db.execute("BEGIN IMMEDIATE")
    try:
        (version,) = db.execute(
            "SELECT count(*) FROM turns WHERE session_id = ?", (session_id,)
        ).fetchone()
        if version != expected:
            raise SessionConflict(session_id, expected, version)
        _insert_turn(db, session_id, expected + 1, turn)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return expected + 1


def _insert_turn(db: sqlite3.Connection, session_id: str, position: int, turn: Turn) -> None:
    db.execute(
        "INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            session_id,
            position,
            turn.run_id,
            turn.base_version,
            _MESSAGES.dump_json(turn.messages).decode(),
            _TOOLS.dump_json(turn.tools).decode(),
            _now(),
        ),
    )


def _executemany(db: sqlite3.Connection, *, sql: str, rows: Sequence[tuple[object, ...]]) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        db.executemany(sql, rows)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _runs(
    db: sqlite3.Connection, *, where: str, params: tuple[object, ...], limit: int
) -> list[RunRecord]:
    rows = db.execute(
        f"SELECT {_RUN_COLUMNS} FROM runs WHERE {where} ORDER BY started DESC LIMIT ?",
        (*params, limit),
    ).fetchall()
    names = _RUN_COLUMNS.split(", ")
    return [RunRecord.model_validate(dict(zip(names, row, strict=True))) for row in rows]


def _now() -> str:
    return datetime.now(UTC).isoformat()
