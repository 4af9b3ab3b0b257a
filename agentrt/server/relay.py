"""Internal. The relay between the workers of one deployment: the events of every run in
Postgres, so that any worker streams, reads and cancels a run that another one holds.

    worker A (owns run r)                       Postgres                       worker B
    RunRegistry ─► Relay.publish ─► writer ──► INSERT agentrt_relay_events ──► SELECT seq ≥ n
                                               NOTIFY agentrt_events 'r 17' ─► LISTEN: read on
    on_cancel('r') ◄── LISTEN ◄─────────────── NOTIFY agentrt_cancel 'r' ◄──── POST /runs/r/cancel

The relay also knows which runs are in progress, for a session's next message to be refused
(409) on every worker while one of its runs is. Runs older than `keep` are pruned.

Postgres LISTEN/NOTIFY rather than a second service (Redis): the store is Postgres already, so
a deployment of N workers needs nothing more. Events cross as their `json_bytes` (the bytes of
their trajectory line), so a stream from B is, byte for byte, the stream from A. The writer
batches: the events that are ready go in one INSERT, in one transaction with one NOTIFY per run
naming its last seq (a NOTIFY payload is capped at 8000 bytes, so never the event itself; and
Postgres delivers a notification on commit, once the rows are readable).

Owner liveness: each worker holds an advisory lock on the connection it listens on, and the
lock's key is the `owner` of the runs it claims. Postgres releases the lock when that connection
ends, however the worker died; a watcher that has heard nothing for `owner_check` seconds asks
`pg_locks` whether the owner is still there, and if not ends its stream with a
`run_finished: error` saying so: a stream never hangs.

Losing Postgres (a restart, a failover, a connection ended): the worker ends the streams it
relays the same way (their clients come back with `Last-Event-ID`), answers 503 "reconnecting"
to requests that need the relay, and reconnects by itself, with capped exponential backoff
(tenacity), for as long as it takes. Its own runs go on meanwhile: their events are kept, at
most `backlog` of them (the oldest dropped beyond, with a logged count; a run is never made to
wait), and written once it is back, after its runs are claimed again. It takes its old owner key
again if it can, so its runs stay its own; if another worker took the key meanwhile, it takes a
new one and claims its runs in progress under it.
"""

from __future__ import annotations

import math
import os
import secrets
import time
from collections import defaultdict
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import asyncpg
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type
from tenacity.wait import wait_exponential_jitter

from agentrt.events import Event, RunFinishedEvent, event_adapter
from agentrt.exceptions import UserError
from agentrt.logs import get_logger
from agentrt.server.runs import written_end
from agentrt.server.schemas import RunInfo, RunState
from agentrt.sessions.store import redact_url

__all__ = ["Relay", "RelayLost", "RelayedRun", "check", "is_postgres"]

log = get_logger("agentrt.server")

T = TypeVar("T")

_SCHEMES = ("postgresql", "postgres")  # as `agentrt.sessions.open_store` takes them
_LOCKS = 0x61727472  # "artr": the first key of agentrt's advisory locks, apart from others'
_EVENTS, _CANCEL = "agentrt_events", "agentrt_cancel"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS agentrt_relay_runs (
    run_id text PRIMARY KEY,
    owner integer NOT NULL,
    query text NOT NULL,
    session_id text,
    claimed timestamptz NOT NULL DEFAULT now(),
    finished boolean NOT NULL DEFAULT false
);
CREATE INDEX IF NOT EXISTS agentrt_relay_runs_session ON agentrt_relay_runs (session_id)
    WHERE NOT finished;
CREATE TABLE IF NOT EXISTS agentrt_relay_events (
    run_id text NOT NULL,
    seq integer NOT NULL,
    json bytea NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""
# The owner keys of the workers alive: their advisory locks (namespace, key), held by their
# connections. A fragment of the queries that take the namespace as their $2.
_LIVE_OWNERS = (
    "SELECT objid::int8 FROM pg_locks WHERE locktype = 'advisory' "
    "AND classid::int8 = $2::int8 AND objsubid = 2 AND granted"
)
# Runs claimed more than $1 seconds ago, and their events: one statement, whichever worker runs it.
_PRUNE = """
WITH old AS (
    DELETE FROM agentrt_relay_runs WHERE claimed < now() - make_interval(secs => $1)
    RETURNING run_id
)
DELETE FROM agentrt_relay_events WHERE run_id IN (SELECT run_id FROM old)
"""
_PRUNE_EVERY = 60.0
# Errors of a database that cannot be reached or has gone away.
_DB_ERRORS = (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError)


class RelayLost(RuntimeError):
    """The relay cannot reach Postgres (it is reconnecting): runs on other workers cannot be
    read from here for now."""


def is_postgres(url: str) -> bool:
    """Whether `url` names a Postgres database (`postgresql://…`)."""
    return url.partition("://")[0] in _SCHEMES


class RelayedRun:
    """A run as the relay has it: claimed by a worker, its events as far as written."""

    def __init__(self, run_id: str, owner: int, query: str, session_id: str | None) -> None:
        self.run_id = run_id
        self.owner = owner
        """The key of the owner's advisory lock."""
        self.query = query
        self.session_id = session_id


class _Watch:
    """A stream waiting for news of a run: set by a notification, cleared before each read, so
    that one arriving between the read and the wait is not missed."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def set(self) -> None:
        self._event.set()

    def clear(self) -> None:
        if self._event.is_set():
            self._event = anyio.Event()

    async def wait(self) -> None:
        await self._event.wait()


class Relay:
    """One worker's side of the relay. Enter `running()` for as long as the server serves.

    :param url: the Postgres database the workers share (`postgresql://…`)
    :param on_cancel: called with a run's id when another worker asks for it to be cancelled
    :param owner_check: seconds a watcher waits without news before it checks the owner is alive
    :param keep: seconds the relay keeps a run (from its claim); older ones are deleted by the
        writer, at most once a minute (the owner's trajectory file still has them)
    :param retry_cap: the longest wait, in seconds, between two attempts to reconnect
    :param backlog: the most events of this worker's runs kept while Postgres is away
    """

    def __init__(
        self,
        url: str,
        *,
        on_cancel: Callable[[str], None],
        owner_check: float = 2.0,
        keep: float = 86400.0,
        retry_cap: float = 5.0,
        backlog: int = 10_000,
    ) -> None:
        self.url = url
        self.on_cancel = on_cancel
        self.owner_check = owner_check
        self.keep = keep
        self.retry_cap = retry_cap
        self.backlog = backlog
        self._pruned = -math.inf
        self.key = 0
        """This worker's advisory lock key: the owner of the runs it claims."""
        self.down: str | None = None
        """Why the relay cannot reach Postgres, while it is reconnecting."""
        self._pool: asyncpg.Pool | None = None
        self._listener: asyncpg.Connection | None = None
        self._pending: list[Event] = []
        self._dropped = 0
        """Events dropped from a full backlog since the count was last logged."""
        self._owned: dict[str, tuple[str, str | None]] = {}
        """This worker's runs whose `run_finished` is not written yet: (query, session id)."""
        self._ready = anyio.Event()
        self._idle = anyio.Event()
        """Set while every event published so far is written; set by a loss too, to wake a
        resumed claim waiting for it (which then finds the relay down)."""
        self._idle.set()
        self._broken = anyio.Event()
        self._retries: anyio.CancelScope | None = None
        """The reconnecting task's scope, while the relay runs."""
        self._closing = False
        self._watches: defaultdict[str, set[_Watch]] = defaultdict(set)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Connect, listen and hold the owner lock; on exit, write what is pending and close.

        :raises UserError: the database cannot be reached (the URL named without its password)
        """
        try:
            # No connection kept open for its own sake: asyncpg would retry restoring it
            # apart from the relay's reconnecting (and log each failure).
            self._pool = await asyncpg.create_pool(
                self.url, min_size=0, max_size=4, server_settings=self._named()
            )
            async with self._pool.acquire() as conn, conn.transaction():
                # Workers starting together would race to create the tables: one at a time.
                await conn.execute("SELECT pg_advisory_xact_lock($1, 0)", _LOCKS)
                await conn.execute(_SCHEMA)
            await self._listen()
        except _DB_ERRORS as exc:
            await self._close()
            msg = f"cannot use the Postgres store at {redact_url(self.url)}: {exc}"
            raise UserError(msg) from None
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._write)
                tg.start_soon(self._reconnect)
                try:
                    yield
                finally:
                    self._closing = True
                    self._ready.set()  # the writer writes what it can, then ends
                    if self._retries is not None:  # however long Postgres has been away
                        self._retries.cancel()
        finally:
            await self._close()

    def _named(self) -> dict[str, str]:
        # Named, so that an operator (or a test) can tell the workers' connections apart.
        return {"application_name": f"agentrt relay {os.getpid()}"}

    async def _listen(self) -> bool:
        """Connect the listening connection and take the owner lock: the key held before, if
        there was one and it is free, else a new one. Whether the key is the one held before."""
        listener = await asyncpg.connect(self.url, server_settings=self._named())
        try:
            kept = bool(self.key) and await _try_lock(listener, self.key)
            if not kept:
                key = secrets.randbelow(2**31 - 2) + 1
                while not await _try_lock(listener, key):
                    key = secrets.randbelow(2**31 - 2) + 1
                self.key = key
            await listener.add_listener(_EVENTS, self._heard)
            await listener.add_listener(_CANCEL, self._cancel_asked)
        except BaseException:
            listener.terminate()
            raise
        listener.add_termination_listener(self._terminated)
        self._listener = listener
        return kept

    async def _close(self) -> None:
        self._closing = True
        with anyio.CancelScope(shield=True):
            if self._listener is not None:
                await self._listener.close(timeout=5)
            if self._pool is not None:
                await self._pool.close()

    # Owning runs: claim, publish, be cancelled.

    async def claim(
        self, run_id: str, query: str, session_id: str | None, *, resumed: bool = False
    ) -> None:
        """Record this worker as the run's owner, for the others to find it. A run id is new
        (the agent makes it, or the server checked a client's was not taken), or `resumed`: a
        resumed run is its run again from `seq` 0, so the earlier attempt's events (kept in its
        trajectory file) make way, and the run is owned by whichever worker resumed it. While
        the relay is down, a new run is claimed once it is back.

        :raises RelayLost: a resumed run, while the relay is down
        """
        if resumed:  # the earlier attempt's last events may be queued still: written first
            await self._written()
        self._owned[run_id] = (query, session_id)
        if self.down is not None:
            return
        try:
            async with self._db().acquire() as conn, conn.transaction():
                if resumed:
                    await conn.execute("DELETE FROM agentrt_relay_events WHERE run_id = $1", run_id)
                await conn.execute(
                    "INSERT INTO agentrt_relay_runs (run_id, owner, query, session_id) "
                    "VALUES ($1, $2, $3, $4) ON CONFLICT (run_id) DO "
                    + (
                        "UPDATE SET owner = $2, claimed = now(), finished = false"
                        if resumed
                        else "NOTHING"
                    ),
                    run_id,
                    self.key,
                    query,
                    session_id,
                )
        except _DB_ERRORS as exc:
            self._lose(f"claiming run {run_id} failed: {exc}")
            if resumed:
                raise RelayLost(self._reconnecting()) from None

    async def _written(self) -> None:
        """Wait until every event published so far is written.

        :raises RelayLost: the relay is down, or goes down meanwhile
        """
        while True:
            if self.down is not None:
                raise RelayLost(self._reconnecting())
            if self._idle.is_set():
                return
            await self._idle.wait()

    def publish(self, events: list[Event]) -> None:
        """Queue events of a run this worker owns for the writer (the registry calls this).
        While the relay is down they are kept, the oldest dropped beyond `backlog`."""
        self._pending.extend(events)
        self._trim()
        if self._idle.is_set():
            self._idle = anyio.Event()
        self._ready.set()

    def _trim(self) -> None:
        over = len(self._pending) - self.backlog
        if over > 0:
            del self._pending[:over]
            self._dropped += over

    async def _write(self) -> None:
        while not (self._closing and (not self._pending or self.down is not None)):
            await self._ready.wait()
            self._ready = anyio.Event()
            if self.down is not None:
                continue  # woken again once it is back (or closing)
            batch, self._pending = self._pending, []
            if batch:
                try:
                    # Shielded: at shutdown the runs' last events are still written.
                    with anyio.CancelScope(shield=True):
                        await self._insert(batch)
                except _DB_ERRORS as exc:
                    self._pending[:0] = batch  # kept, for when the relay is back
                    self._trim()
                    self._lose(f"writing events failed: {exc}")
                    continue
            self._dropped_said()
            if not self._pending:
                self._idle.set()
        self._dropped += len(self._pending)
        self._dropped_said()

    def _dropped_said(self) -> None:
        if self._dropped:
            log.warning(
                "the relay dropped events of this worker's runs: other workers' streams of "
                "them miss those (each run's trajectory file has them)",
                dropped=self._dropped,
                backlog=self.backlog,
            )
            self._dropped = 0

    async def _insert(self, batch: list[Event]) -> None:
        last: dict[str, int] = {}
        for e in batch:
            last[e.run_id] = e.seq
        ended = [e.run_id for e in batch if isinstance(e, RunFinishedEvent)]
        async with self._db().acquire() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO agentrt_relay_events (run_id, seq, json) "
                "SELECT * FROM unnest($1::text[], $2::integer[], $3::bytea[]) "
                "ON CONFLICT DO NOTHING",
                [e.run_id for e in batch],
                [e.seq for e in batch],
                [e.json_bytes for e in batch],
            )
            await conn.execute(
                "SELECT pg_notify($1, n) FROM unnest($2::text[]) AS n",
                _EVENTS,
                [f"{run_id} {seq}" for run_id, seq in last.items()],
            )
            if ended:
                await conn.execute(
                    "UPDATE agentrt_relay_runs SET finished = true WHERE run_id = ANY($1::text[])",
                    ended,
                )
            if time.monotonic() - self._pruned >= _PRUNE_EVERY:
                self._pruned = time.monotonic()
                await conn.execute(_PRUNE, self.keep)
        for run_id in ended:
            self._owned.pop(run_id, None)

    def _cancel_asked(self, conn: Any, pid: int, channel: str, run_id: object) -> None:
        self.on_cancel(str(run_id))

    # Watching runs other workers own.

    async def find(self, run_id: str) -> RelayedRun | None:
        """The run, if a worker has claimed it; None if none has.

        :raises RelayLost: the relay is reconnecting to Postgres
        """
        row = await self._query(
            "reading a run",
            lambda db: db.fetchrow(
                "SELECT owner, query, session_id FROM agentrt_relay_runs WHERE run_id = $1",
                run_id,
            ),
        )
        if row is None:
            return None
        return RelayedRun(run_id, row["owner"], row["query"], row["session_id"])

    async def read(self, run_id: str, start: int = 0) -> list[Event]:
        """The run's events written so far with `seq ≥ start`, each with the bytes it was sent
        as (its `json_bytes`)."""
        rows = await self._db().fetch(
            "SELECT json FROM agentrt_relay_events WHERE run_id = $1 AND seq >= $2 ORDER BY seq",
            run_id,
            start,
        )
        return [_event(row["json"]) for row in rows]

    async def session_busy(self, session_id: str) -> str | None:
        """The id of a run of the session in progress on a worker that is alive, if any.

        :raises RelayLost: the relay is reconnecting to Postgres
        """
        busy: str | None = await self._query(
            "reading a session's runs",
            lambda db: db.fetchval(
                "SELECT run_id FROM agentrt_relay_runs WHERE session_id = $1 "
                f"AND NOT finished AND owner IN ({_LIVE_OWNERS}) LIMIT 1",
                session_id,
                _LOCKS,
            ),
        )
        return busy

    async def owner_alive(self, owner: int) -> bool:
        """Whether the worker holding lock `owner` still has its connection."""
        alive: bool = await self._db().fetchval(
            f"SELECT $1::int8 IN ({_LIVE_OWNERS})", owner, _LOCKS
        )
        return alive

    async def info(self, run: RelayedRun) -> RunInfo:
        """The run's state and its events so far.

        :raises RelayLost: the relay is reconnecting to Postgres
        """
        events = await self._query("reading a run's events", lambda db: self.read(run.run_id))
        end = events[-1] if events and isinstance(events[-1], RunFinishedEvent) else None
        if end is not None:
            state: RunState = end.status
        else:
            alive = await self._query("checking an owner", lambda db: self.owner_alive(run.owner))
            state = "running" if alive else "unfinished"
        return RunInfo(
            run_id=run.run_id,
            state=state,
            query=run.query,
            session_id=run.session_id,
            answer=end.answer if end is not None else None,
            events=events,
        )

    async def cancel(self, run: RelayedRun) -> RunFinishedEvent:
        """Ask the run's owner to cancel it; its `run_finished`, once written.

        :raises RelayLost: the relay is reconnecting to Postgres
        """
        await self._query(
            "asking for a cancel",
            lambda db: db.execute("SELECT pg_notify($1, $2)", _CANCEL, run.run_id),
        )
        end: list[Event] = []
        async for batch in self.follow(run):
            end = batch or end
        assert isinstance(end[-1], RunFinishedEvent)  # what `follow` ends with
        return end[-1]

    async def follow(self, run: RelayedRun) -> AsyncGenerator[list[Event], None]:
        """The run's events from its first, in batches as they are written, until its
        `run_finished`; an empty batch after `owner_check` quiet seconds. The relay writes the
        `run_finished` itself (status `error`, saying why) if the owner or its own connection
        is lost first."""
        watch = _Watch()
        self._watches[run.run_id].add(watch)
        events: list[Event] = []
        try:
            while True:
                watch.clear()
                # From the seq after the last: with events dropped from a full backlog, a run's
                # seqs have a gap.
                batch = await self._read_safely(run.run_id, events[-1].seq + 1 if events else 0)
                if batch:
                    events += batch
                    yield batch
                    if isinstance(batch[-1], RunFinishedEvent):
                        return
                    continue
                gone = await self._silence(watch, run.owner)
                if gone is None:
                    yield []
                    continue
                # Its last rows may have been written after the read above.
                seen = len(events)
                events += await self._read_safely(run.run_id, events[-1].seq + 1 if events else 0)
                if not events or not isinstance(events[-1], RunFinishedEvent):
                    events.append(written_end(run.run_id, events, "error", gone))
                yield events[seen:]
                return
        finally:
            self._watches[run.run_id].discard(watch)
            if not self._watches[run.run_id]:
                del self._watches[run.run_id]

    async def _read_safely(self, run_id: str, start: int) -> list[Event]:
        if self.down is not None:
            return []
        try:
            return await self.read(run_id, start)
        except _DB_ERRORS as exc:
            self._lose(f"reading events failed: {exc}")
            return []

    async def _silence(self, watch: _Watch, owner: int) -> str | None:
        """Wait for news; None when there is some (or the owner is alive after the wait), else
        why none will come."""
        if self.down is None:
            with anyio.move_on_after(self.owner_check):
                await watch.wait()
                return None
            try:
                if await self.owner_alive(owner):
                    return None
            except _DB_ERRORS as exc:
                self._lose(f"checking the run's owner failed: {exc}")
        if self.down is not None:
            return (
                f"the relay lost its connection to Postgres ({self.down}), so this stream ends: "
                "it is reconnecting; ask again with Last-Event-ID"
            )
        return (
            f"the worker that ran it is gone (owner {owner}: its connection to Postgres ended) "
            "before the run finished"
        )

    def _heard(self, conn: Any, pid: int, channel: str, payload: object) -> None:
        for watch in self._watches.get(str(payload).partition(" ")[0], ()):
            watch.set()

    # Losing the connection, and coming back.

    def _terminated(self, conn: Any) -> None:
        # Not a connection given up already (one the relay ended, or a failed attempt's).
        if conn is self._listener and not self._closing:
            self._lose("its listening connection closed")

    def _lose(self, reason: str) -> None:
        """Stop relaying until reconnected: wake every watcher (their streams end), and end the
        listening connection, which releases the owner lock (the other workers see this one as
        gone until it is back)."""
        if self.down is not None:
            return
        self.down = reason
        self._idle.set()  # a resumed claim waiting for the writer is told the relay is down
        log.error(
            "the relay to the other workers lost Postgres: reconnecting",
            reason=reason,
            url=redact_url(self.url),
        )
        for watches in self._watches.values():
            for watch in watches:
                watch.set()
        if self._listener is not None and not self._listener.is_closed():
            self._listener.terminate()
        self._broken.set()

    async def _reconnect(self) -> None:
        """Each time the relay is down, reconnect until it is back (or the server stops)."""
        with anyio.CancelScope() as self._retries:
            while True:
                await self._broken.wait()
                self._broken = anyio.Event()
                if self._closing:
                    return
                await self._come_back()

    async def _come_back(self) -> None:
        """Reconnect, with capped exponential backoff (jittered: N workers do not all try at
        once), trying for as long as it takes."""
        kept = False
        retrying = AsyncRetrying(
            wait=wait_exponential_jitter(multiplier=0.1, max=self.retry_cap),
            retry=retry_if_exception_type(_DB_ERRORS),
            before_sleep=self._retry_said,
            sleep=anyio.sleep,
        )
        async for attempt in retrying:
            with attempt:
                kept = await self._rejoin()
        if self._pending and self._idle.is_set():  # set by the loss: not written yet
            self._idle = anyio.Event()
        self.down = None
        log.info(
            "the relay to the other workers is back",
            url=redact_url(self.url),
            owner=self.key,
            same_owner=kept,
            runs=len(self._owned),
            pending=len(self._pending),
        )
        self._ready.set()

    def _retry_said(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        log.warning(
            "the relay could not reconnect to Postgres",
            attempt=state.attempt_number,
            owner=self.key,
            error=str(error),
            retry_in=round(state.upcoming_sleep, 2),
            url=redact_url(self.url),
        )

    async def _rejoin(self) -> bool:
        """Listen again, take an owner key, and claim this worker's runs in progress under it
        (for the runs claimed while the relay was down, and in case the key is a new one);
        whether the key is the one held before."""
        if self._listener is not None and not self._listener.is_closed():
            self._listener.terminate()  # the connection of a failed attempt
        await self._db().expire_connections()  # the others may be dead too
        kept = await self._listen()
        if self._owned:
            ids = list(self._owned)
            await self._db().execute(
                "INSERT INTO agentrt_relay_runs (run_id, owner, query, session_id) "
                "SELECT r, $2, q, s FROM unnest($1::text[], $3::text[], $4::text[]) AS t(r, q, s) "
                "ON CONFLICT (run_id) DO UPDATE SET owner = $2",
                ids,
                self.key,
                [self._owned[i][0] for i in ids],
                [self._owned[i][1] for i in ids],
            )
        return kept

    def _reconnecting(self) -> str:
        return f"the relay to the other workers is reconnecting to Postgres ({self.down})"

    async def _query(self, what: str, query: Callable[[asyncpg.Pool], Awaitable[T]]) -> T:
        """`query` over the pool; when Postgres fails, the relay reconnects and says so.

        :raises RelayLost: the relay is reconnecting to Postgres
        """
        if self.down is None:
            try:
                return await query(self._db())
            except _DB_ERRORS as exc:
                self._lose(f"{what} failed: {exc}")
        raise RelayLost(self._reconnecting())

    def _db(self) -> asyncpg.Pool:
        if self._pool is None:
            msg = "the relay is not running: enter Relay.running() first"
            raise RuntimeError(msg)
        return self._pool


async def _try_lock(conn: asyncpg.Connection, key: int) -> bool:
    """Take the owner lock `key` on `conn`, if no other connection holds it."""
    return bool(await conn.fetchval("SELECT pg_try_advisory_lock($1, $2)", _LOCKS, key))


def _event(raw: bytes) -> Event:
    event: Event = event_adapter.validate_json(raw)
    # The bytes as written, not serialised again: what the owner's streams sent.
    event.__dict__["json_bytes"] = raw
    return event


async def check(url: str) -> None:
    """Connect to `url` once, to fail at start-up rather than at the first request.

    :raises UserError: the database cannot be reached (the URL named without its password)
    """
    try:
        conn = await asyncpg.connect(url, timeout=10)
    except _DB_ERRORS as exc:
        msg = f"cannot use the Postgres store at {redact_url(url)}: {exc}"
        raise UserError(msg) from None
    await conn.close()
