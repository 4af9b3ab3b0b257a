"""Internal. Sessions: the conversation so far, and the tools created for it.

A session tool is created during a run by a tool (say, a search that found a document offers
`get_more_content_from_<item>` afterwards). It is data, not code: a registered base tool, some
of its arguments fixed, a new name and description. So it can be kept with the session, shown
again on the session's later runs, and never seen by another session.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from agentrt.models.base import Message

__all__ = ["Scope", "Session", "SessionStore", "SessionTool"]


class SessionTool(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
    """What the model calls it (a name a model can write, and a tag can hold)."""
    description: str = Field(min_length=1)
    base: str
    """The workspace tool it calls."""
    bind: dict[str, JsonValue] = {}
    """Arguments fixed for every call; the model gives the others."""


class Session(BaseModel):
    id: str
    messages: list[Message] = []
    """Earlier questions and answers, oldest first."""
    tools: dict[str, SessionTool] = {}


class Scope(BaseModel):
    """What a run's retrieval may look at: whole contexts, or some items of them.

    Written as global ids: `"<context>"` for a whole context, `"<context>/<item>"` for one item.
    """

    model_config = ConfigDict(frozen=True)

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

    def allows(self, context: str, item: str | None = None) -> bool:
        """Whether retrieval may read `context` (or one `item` of it)."""
        if context not in self.contexts:
            return False
        items = self.contexts[context]
        return items is None or item is None or item in items


class SessionStore:
    """Sessions by id, in memory. Each session's tools stay in it.

    The agent `get`s a run's session before the run and `put`s it back after; a store that
    persists (`agentrt.sessions.sqlite.SqliteSessionStore`) writes it there.
    """

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._artifacts: dict[str, dict[str, object]] = {}

    def get(self, session_id: str) -> Session:
        """The session, new and empty the first time it is asked for."""
        session = self._sessions.get(session_id)
        if session is None:
            session = self._sessions[session_id] = Session(id=session_id)
        return session

    def artifacts(self, session_id: str) -> dict[str, object]:
        """What the session's tools keep between runs (data frames, …): in memory only."""
        return self._artifacts.setdefault(session_id, {})

    def put(self, session: Session) -> None:
        """Keep `session` (after a run changed it, or one restored from storage), replacing any
        of the same id."""
        self._sessions[session.id] = session
