"""Sessions and runs, kept in a store: the protocol every backend follows, and its models.

A session is a list of turns: what each run of it added (its messages with their tool calls
and results, the session tools it created). Turns are appended, never rewritten: each takes
the next `position` of its session, and `append` names the version (turns stored) it was built
on, so two writers can never both take a position: the second gets `SessionConflict`, re-reads
and appends after the first. A session tool is created during a run by a tool (say, a search
that found a document offers `get_more_content_from_<item>` afterwards). It is data, not code:
a registered base tool, some of its arguments fixed, a new name and description, so it is kept
with the session and shown again on its later runs. Named results (the data frames the SQL and
analysis tools keep) are values, not turns: the last write of a name wins.

`open_store(url)` picks the backend: `memory:`, `sqlite:///path` (or a plain path), or
`postgresql://…`.
"""

from __future__ import annotations

import copy
import os
import socket
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from agentrt.events import RunStatus
from agentrt.exceptions import SessionConflict, UserError
from agentrt.models.base import Message

__all__ = [
    "MemorySessionStore",
    "RunRecord",
    "Scope",
    "Session",
    "SessionStore",
    "SessionTool",
    "Turn",
    "open_store",
    "redact_url",
]


class SessionTool(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
    """What the model calls it (a name a model can write, and a tag can hold)."""
    description: str = Field(min_length=1)
    base: str
    """The workspace tool it calls."""
    bind: dict[str, JsonValue] = {}
    """Arguments fixed for every call; the model gives the others."""


class Turn(BaseModel):
    """What one run added to its session."""

    model_config = ConfigDict(defer_build=True)

    run_id: str
    messages: list[Message] = []
    """The run's question, its tool calls and their results, its answer."""
    tools: dict[str, SessionTool] = {}
    """The session tools the run created."""
    base_version: int = Field(0, ge=0)
    """The version the run read; below the turn's position minus one when another writer's
    turn came between (the agent re-read and appended after it)."""


class Session(BaseModel):
    model_config = ConfigDict(defer_build=True)

    id: str
    version: int = 0
    """How many turns are stored: the `expected_version` of the next `append`."""
    messages: list[Message] = []
    """Earlier questions and answers, oldest first."""
    tools: dict[str, SessionTool] = {}
    results: dict[str, JsonValue] = {}
    """Named results as stored (a data frame as its `columns` and `data`)."""

    @classmethod
    def of(
        cls, session_id: str, turns: Sequence[Turn], results: Mapping[str, JsonValue]
    ) -> Session:
        """The session whose stored turns are `turns`, oldest first."""
        tools: dict[str, SessionTool] = {}
        for turn in turns:
            tools.update(turn.tools)
        return cls(
            id=session_id,
            version=len(turns),
            messages=[m for turn in turns for m in turn.messages],
            tools=tools,
            results=dict(results),
        )


class RunRecord(BaseModel):
    """A run as the store knows it: written when it starts and again when it ends."""

    model_config = ConfigDict(defer_build=True)

    run_id: str
    session_id: str | None = None
    query: str
    status: Literal["running"] | RunStatus = "running"
    owner: str = Field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    """The worker running it: host:pid."""
    trajectory: str | None = None
    """Where its trajectory is written (a path), if anywhere."""
    started: datetime = Field(default_factory=lambda: datetime.now(UTC))
    updated: datetime = Field(default_factory=lambda: datetime.now(UTC))


class Scope(BaseModel):
    """What a run's retrieval may look at: whole contexts, or some items of them.

    Written as global ids: `"<context>"` for a whole context, `"<context>/<item>"` for one item.
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    contexts: dict[str, list[str] | None]
    """Context id → its selected item ids, or None for the whole context."""

    @classmethod
    def parse(cls, ids: Iterable[str]) -> Scope:
        contexts: dict[str, list[str] | None] = {}
        for global_id in ids:
            context, _, item = global_id.partition("/")
            if not context:
                msg = f"scope id {global_id!r} has no context: write 'context' or 'context/item'"
                raise ValueError(msg)
            if not item:
                contexts[context] = None
                continue
            items = contexts.setdefault(context, [])
            if items is not None:  # else the whole context is selected already
                items.append(item)
        return cls(contexts=contexts)

    @field_validator("contexts")
    @classmethod
    def _not_empty(cls, value: dict[str, list[str] | None]) -> dict[str, list[str] | None]:
        if not value:
            msg = "a scope names at least one context"
            raise ValueError(msg)
        return value

    def ids(self) -> list[str]:
        """The global ids this scope was parsed from (`parse(scope.ids()) == scope`)."""
        return [
            f"{context}/{item}" if items is not None else context
            for context, items in self.contexts.items()
            for item in (items if items is not None else [None])
        ]

    def allows(self, context: str, item: str | None = None) -> bool:
        """Whether retrieval may read `context` (or one `item` of it)."""
        if context not in self.contexts:
            return False
        items = self.contexts[context]
        return items is None or item is None or item in items


class SessionStore(Protocol):
    """Where sessions and runs are kept. Every method is a coroutine; none blocks the loop.

    `open` connects (and makes the schema on first use); `close` lets go. Both may be called
    again. A backend that cannot reach its database raises `StoreUnavailable`.
    """

    url: str
    """Where it keeps them, as given to `open_store` (any password left out)."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def load(self, session_id: str) -> Session:
        """The session's turns so far: version 0 and empty if it has none."""
        ...

    async def append(self, session_id: str, turn: Turn, expected_version: int) -> int:
        """Store `turn` as the session's next, in one transaction; the new version.

        :raises SessionConflict: the session's version is not `expected_version` (another
            writer appended first); nothing was written
        """
        ...

    async def put_results(self, session_id: str, results: Mapping[str, JsonValue]) -> None:
        """Keep these named results of the session, replacing any of the same names."""
        ...

    async def put_run(self, run: RunRecord) -> None:
        """Keep `run`, replacing the record of the same run id."""
        ...

    async def get_run(self, run_id: str) -> RunRecord | None: ...

    async def list_runs(self, session_id: str | None = None, limit: int = 100) -> list[RunRecord]:
        """The latest runs (of one session), the most recently started first."""
        ...


class MemorySessionStore:
    """Sessions and runs in this process's memory (`memory:`), gone when it ends."""

    def __init__(self) -> None:
        self.url = "memory:"
        self._turns: dict[str, list[Turn]] = {}
        self._results: dict[str, dict[str, JsonValue]] = {}
        self._runs: dict[str, RunRecord] = {}

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def load(self, session_id: str) -> Session:
        # `Session.of` builds new lists of the messages and tools, which are frozen: a caller
        # changing what it read cannot change what is stored. Results are JSON: copied.
        turns = self._turns.get(session_id, [])
        return Session.of(session_id, turns, copy.deepcopy(self._results.get(session_id, {})))

    async def append(self, session_id: str, turn: Turn, expected_version: int) -> int:
        turns = self._turns.setdefault(session_id, [])
        if len(turns) != expected_version:
            raise SessionConflict(session_id, expected_version, len(turns))
        # Its own lists (of frozen messages and tools): the caller's may change after.
        turns.append(
            turn.model_copy(update={"messages": list(turn.messages), "tools": dict(turn.tools)})
        )
        return len(turns)

    async def put_results(self, session_id: str, results: Mapping[str, JsonValue]) -> None:
        self._results.setdefault(session_id, {}).update(copy.deepcopy(dict(results)))

    async def put_run(self, run: RunRecord) -> None:
        self._runs[run.run_id] = run.model_copy()

    async def get_run(self, run_id: str) -> RunRecord | None:
        return self._runs.get(run_id)

    async def list_runs(self, session_id: str | None = None, limit: int = 100) -> list[RunRecord]:
        runs = [r for r in self._runs.values() if session_id in (None, r.session_id)]
        return sorted(runs, key=lambda r: r.started, reverse=True)[:limit]


def open_store(url: str | Path) -> SessionStore:
    """The store `url` names, not yet opened: `memory:`, `sqlite:///relative/file`,
    `sqlite:////absolute/file` (or just a path), `postgresql://user:password@host:port/db`
    (needs the `postgres` extra).

    :raises UserError: a URL of another scheme
    """
    text = str(url)
    scheme = urlsplit(text).scheme if "://" in text or text == "memory:" else ""
    if text == "memory:":
        return MemorySessionStore()
    if scheme in ("postgresql", "postgres"):
        from agentrt.sessions.postgres import PostgresSessionStore

        return PostgresSessionStore(text)
    if scheme == "sqlite":
        from agentrt.sessions.sqlite import SqliteSessionStore

        # As SQLAlchemy writes it: three slashes before a relative path, four before an absolute.
        return SqliteSessionStore(Path(text.removeprefix("sqlite:///")))
    if scheme:
        msg = f"session store {redact_url(text)!r}: use memory:, sqlite:///path or postgresql://"
        raise UserError(msg)
    from agentrt.sessions.sqlite import SqliteSessionStore

    return SqliteSessionStore(Path(text))


def redact_url(url: str) -> str:
    """`url` with any password left out, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}@{host}"))
