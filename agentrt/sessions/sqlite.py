"""Internal. Sessions kept in a SQLite file, so that a conversation outlives the process that began
it.

    sessions (id, tools, updated)          one row per session; its session tools as JSON
    messages (session_id, position, json)  the conversation, oldest first
    results  (session_id, name, json)      named results: the data frames its tools kept

A session is read from the file the first time a process asks for it and written back after
each run. Of a session's artifacts, only pandas data frames (what the SQL and analysis tools
keep by name) are stored, as JSON columns and rows (dates as ISO text); anything else a tool
keeps there (a database connection, an index) lives as long as the process.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from agentrt.models.base import Message
from agentrt.sessions.store import Session, SessionStore, SessionTool

__all__ = ["SqliteSessionStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, tools TEXT NOT NULL, updated TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL, position INTEGER NOT NULL, message TEXT NOT NULL,
    PRIMARY KEY (session_id, position)
);
CREATE TABLE IF NOT EXISTS results (
    session_id TEXT NOT NULL, name TEXT NOT NULL, frame TEXT NOT NULL,
    PRIMARY KEY (session_id, name)
);
"""

_MESSAGE = TypeAdapter(Message)
_TOOLS = TypeAdapter(dict[str, SessionTool])


class SqliteSessionStore(SessionStore):
    """Sessions by id, in memory and in the SQLite file at `path` (made if missing).

    Writes are small and synchronous, at the end of a run; several agents (or processes) may
    share one file, the last run of a session to end writes it.
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.executescript(_SCHEMA)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection for one transaction: committed on success, always closed."""
        with contextlib.closing(sqlite3.connect(self.path)) as db, db:
            yield db

    def get(self, session_id: str) -> Session:
        if session_id not in self._sessions:
            with self._connect() as db:
                row = db.execute(
                    "SELECT tools FROM sessions WHERE id = ?", (session_id,)
                ).fetchone()
                messages = db.execute(
                    "SELECT message FROM messages WHERE session_id = ? ORDER BY position",
                    (session_id,),
                ).fetchall()
            if row is not None:
                self._sessions[session_id] = Session(
                    id=session_id,
                    messages=[_MESSAGE.validate_json(m) for (m,) in messages],
                    tools=_TOOLS.validate_json(row[0]),
                )
        return super().get(session_id)

    def artifacts(self, session_id: str) -> dict[str, object]:
        if session_id not in self._artifacts:
            with self._connect() as db:
                rows = db.execute(
                    "SELECT name, frame FROM results WHERE session_id = ?", (session_id,)
                ).fetchall()
            if rows:
                # Only a file with data frames in it gets here, so pandas is installed.
                import pandas as pd  # type: ignore[import-untyped]

                self._artifacts[session_id] = {
                    name: pd.DataFrame(frame["data"], columns=frame["columns"])
                    for name, frame in ((n, json.loads(f)) for n, f in rows)
                }
        return super().artifacts(session_id)

    def put(self, session: Session) -> None:
        super().put(session)
        frames = _frames(self._artifacts.get(session.id, {}))
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?)",
                (
                    session.id,
                    _TOOLS.dump_json(session.tools).decode(),
                    datetime.now(UTC).isoformat(),
                ),
            )
            db.execute("DELETE FROM messages WHERE session_id = ?", (session.id,))
            db.executemany(
                "INSERT INTO messages VALUES (?, ?, ?)",
                [
                    (session.id, i, _MESSAGE.dump_json(m).decode())
                    for i, m in enumerate(session.messages)
                ],
            )
            db.execute("DELETE FROM results WHERE session_id = ?", (session.id,))
            db.executemany(
                "INSERT INTO results VALUES (?, ?, ?)",
                [(session.id, name, frame) for name, frame in frames.items()],
            )


def _frames(artifacts: dict[str, Any]) -> dict[str, str]:
    """The data frames among `artifacts`, as JSON (`columns`, `data`)."""
    # No data frame exists unless pandas was imported: the store never imports it to look.
    pd = sys.modules.get("pandas")
    if pd is None:
        return {}
    return {
        name: value.to_json(orient="split", index=False, date_format="iso")
        for name, value in artifacts.items()
        if isinstance(value, pd.DataFrame)
    }
