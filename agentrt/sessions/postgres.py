"""Internal. Sessions and runs in PostgreSQL, through asyncpg: the store for several workers.

The tables are those of the SQLite store (`agentrt.sessions.sqlite`), JSON as `jsonb`. A turn
is one transaction; `(session_id, position)` is the primary key, so of two writers that read
the same version only one can insert the next position: the other gets `SessionConflict`
(its transaction rolled back, nothing written). A writer whose connection dies mid-turn leaves
nothing: PostgreSQL rolls its transaction back. The schema is made on first `open`, under an
advisory lock so that workers starting together do not race to make it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio.lowlevel
import asyncpg
from pydantic import JsonValue, TypeAdapter

from agentrt.exceptions import SessionConflict, StoreUnavailable
from agentrt.models.base import Message
from agentrt.sessions.store import RunRecord, Session, SessionTool, Turn, redact_url

__all__ = ["PostgresSessionStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS agentrt_turns (
    session_id text NOT NULL, position integer NOT NULL, run_id text NOT NULL,
    base_version integer NOT NULL, messages jsonb NOT NULL, tools jsonb NOT NULL,
    created timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, position)
);
CREATE TABLE IF NOT EXISTS agentrt_results (
    session_id text NOT NULL, name text NOT NULL, value jsonb NOT NULL,
    updated timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, name)
);
CREATE TABLE IF NOT EXISTS agentrt_runs (
    run_id text PRIMARY KEY, session_id text, query text NOT NULL, status text NOT NULL,
    owner text NOT NULL, trajectory text, started timestamptz NOT NULL,
    updated timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS agentrt_runs_by_session ON agentrt_runs (session_id, started);
"""

_SCHEMA_LOCK = 0x6167656E7472
"""The advisory lock key workers making the schema take in turn ("agentr" in ASCII)."""

_POOL_SIZE = 5
"""Connections per store: a run holds one only for a statement or a turn's transaction."""

_LOST = (
    OSError,
    asyncpg.InterfaceError,
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,
)
"""What a lost or refused connection raises (a server shut down, a backend terminated)."""

_TURNS_AT_ONCE = 16
"""Turns decoded between two chances for the loop to run other tasks (about 0.3 ms)."""
_MESSAGES = TypeAdapter(list[Message])
_TOOLS = TypeAdapter(dict[str, SessionTool])
_VALUE: TypeAdapter[JsonValue] = TypeAdapter(JsonValue)
_RUN_COLUMNS = "run_id, session_id, query, status, owner, trajectory, started, updated"


class PostgresSessionStore:
    """Sessions and runs in the PostgreSQL database at `url` (`postgresql://…`)."""

    def __init__(self, url: str) -> None:
        self._dsn = url
        self.url = redact_url(url)
        self._pool: asyncpg.Pool[asyncpg.Record] | None = None

    async def open(self) -> None:
        if self._pool is not None:
            return
        # No floor: a pool keeping one would reconnect in the background, and log each
        # failure, while the database is away.
        pool = asyncpg.create_pool(self._dsn, min_size=0, max_size=_POOL_SIZE)
        try:
            await pool
            async with pool.acquire() as db, db.transaction():
                await db.execute("SELECT pg_advisory_xact_lock($1)", _SCHEMA_LOCK)
                await db.execute(_SCHEMA)
        except (*_LOST, asyncpg.PostgresError) as exc:
            await pool.close()
            msg = f"session store {self.url} is unreachable: {type(exc).__name__}: {exc}"
            raise StoreUnavailable(msg) from None  # the cause's repr may carry the DSN
        except BaseException:
            await pool.close()
            raise
        self._pool = pool

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[asyncpg.pool.PoolConnectionProxy[Any]]:
        """A pooled connection; one that cannot be made, or is lost while used, raises
        `StoreUnavailable` naming the cause."""
        await self.open()
        assert self._pool is not None
        try:
            db = await self._pool.acquire()
        except (*_LOST, asyncpg.PostgresError) as exc:
            msg = f"session store {self.url} is unreachable: {type(exc).__name__}: {exc}"
            raise StoreUnavailable(msg) from None
        try:
            yield db
        except _LOST as exc:
            msg = f"session store {self.url} lost its connection: {type(exc).__name__}: {exc}"
            raise StoreUnavailable(msg) from exc
        finally:
            await self._pool.release(db)

    async def load(self, session_id: str) -> Session:
        async with self._connection() as db, db.transaction(isolation="repeatable_read"):
            turns = await db.fetch(
                "SELECT run_id, base_version, messages, tools FROM agentrt_turns "
                "WHERE session_id = $1 ORDER BY position",
                session_id,
            )
            results = await db.fetch(
                "SELECT name, value FROM agentrt_results WHERE session_id = $1", session_id
            )
        # Decoded on the loop a few turns at a time, giving way between: a long session's
        # JSON (2,000 messages) decoded at once held the loop for 24 ms, and on a worker thread
        # the loop still waited for the GIL (5 ms, Python's switch interval).
        decoded = []
        for i, row in enumerate(turns):
            if i % _TURNS_AT_ONCE == _TURNS_AT_ONCE - 1:
                await anyio.lowlevel.checkpoint()
            decoded.append(
                Turn(
                    run_id=row["run_id"],
                    base_version=row["base_version"],
                    messages=_MESSAGES.validate_json(row["messages"]),
                    tools=_TOOLS.validate_json(row["tools"]),
                )
            )
        values = {row["name"]: _VALUE.validate_json(row["value"]) for row in results}
        return Session.of(session_id, decoded, values)

    async def append(self, session_id: str, turn: Turn, expected_version: int) -> int:
        async with self._connection() as db:
            try:
                async with db.transaction():
                    version = await db.fetchval(
                        "SELECT count(*) FROM agentrt_turns WHERE session_id = $1", session_id
                    )
                    if version != expected_version:
                        raise SessionConflict(session_id, expected_version, version)
                    await _insert_turn(db, session_id, expected_version + 1, turn)
            except asyncpg.UniqueViolationError:
                # Another writer took the position between the count and the insert.
                raise SessionConflict(session_id, expected_version, expected_version + 1) from None
        return expected_version + 1

    async def put_results(self, session_id: str, results: Mapping[str, JsonValue]) -> None:
        async with self._connection() as db:
            await db.executemany(
                "INSERT INTO agentrt_results (session_id, name, value) VALUES ($1, $2, $3) "
                "ON CONFLICT (session_id, name) "
                "DO UPDATE SET value = excluded.value, updated = now()",
                [
                    (session_id, name, _VALUE.dump_json(value).decode())
                    for name, value in results.items()
                ],
            )

    async def put_run(self, run: RunRecord) -> None:
        async with self._connection() as db:
            await db.execute(
                f"INSERT INTO agentrt_runs ({_RUN_COLUMNS}) "
                "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (run_id) DO UPDATE SET "
                "status = excluded.status, owner = excluded.owner, "
                "trajectory = excluded.trajectory, updated = excluded.updated",
                run.run_id,
                run.session_id,
                run.query,
                run.status,
                run.owner,
                run.trajectory,
                run.started,
                run.updated,
            )

    async def get_run(self, run_id: str) -> RunRecord | None:
        async with self._connection() as db:
            row = await db.fetchrow(
                f"SELECT {_RUN_COLUMNS} FROM agentrt_runs WHERE run_id = $1", run_id
            )
        return None if row is None else RunRecord.model_validate(dict(row))

    async def list_runs(self, session_id: str | None = None, limit: int = 100) -> list[RunRecord]:
        async with self._connection() as db:
            rows = await db.fetch(
                f"SELECT {_RUN_COLUMNS} FROM agentrt_runs "
                "WHERE $1::text IS NULL OR session_id = $1 ORDER BY started DESC LIMIT $2",
                session_id,
                limit,
            )
        return [RunRecord.model_validate(dict(row)) for row in rows]


async def _insert_turn(
    db: asyncpg.pool.PoolConnectionProxy[Any], session_id: str, position: int, turn: Turn
) -> None:
    await db.execute(
        "INSERT INTO agentrt_turns (session_id, position, run_id, base_version, messages, tools) "
        "VALUES ($1, $2, $3, $4, $5, $6)",
        session_id,
        position,
        turn.run_id,
        turn.base_version,
        _MESSAGES.dump_json(turn.messages).decode(),
        _TOOLS.dump_json(turn.tools).decode(),
    )
