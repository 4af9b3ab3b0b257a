"""Internal. What the HTTP API takes and returns: the pydantic models behind its OpenAPI schema.

Events themselves are not redefined here: streams and trajectories carry `agentrt.events.Event`
exactly as a run emits it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentrt.events import Decision, Event
from agentrt.trajectory.format import TrajectoryHeader

__all__ = [
    "ID_PATTERN",
    "ApprovalRequest",
    "ErrorBody",
    "FieldError",
    "LimitErrorBody",
    "MessageRequest",
    "RunInfo",
    "RunRequest",
    "RunState",
    "RunSummary",
    "SessionInfo",
    "TrajectoryFile",
    "TrajectoryList",
    "ValidationErrorBody",
]

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
"""Run and session ids: no slash and no leading dot, so an id can never name another path."""

RunState = Literal[
    "running",
    "ok",
    "needs_input",
    "needs_approval",
    "budget_exhausted",
    "cancelled",
    "error",
    "unfinished",
]
"""`running` while the run is live on this server; `unfinished` for a trajectory file without a
`run_finished` that no live run is writing (its process stopped); otherwise the run's status."""

_QUERY = Field(
    min_length=1,
    max_length=20_000,
    description="The question to answer.",
    # Something besides whitespace (as Python counts it: \s and the separators \x1c-\x1f); in
    # the schema for clients and fuzzers, checked by `_not_blank` for a readable error.
    json_schema_extra={"pattern": r"[^\s\x1c-\x1f]"},
)
_STRATEGY = Field(
    None,
    min_length=1,
    max_length=200,
    description="Use this strategy of the workspace instead of classifying the query.",
    json_schema_extra={"x-strategy": True},
)


class MessageRequest(BaseModel):
    """The next message of a session."""

    model_config = ConfigDict(extra="forbid")

    query: str = _QUERY
    strategy: str | None = _STRATEGY

    @field_validator("query")
    @classmethod
    def _not_blank(cls, query: str) -> str:
        if not query.strip():
            msg = "the query is empty (only whitespace)"
            raise ValueError(msg)
        return query


class RunRequest(MessageRequest):
    """A run to start."""

    session_id: str | None = Field(
        None,
        pattern=ID_PATTERN,
        description="Runs of one session see the session's earlier questions and answers.",
    )


class ApprovalRequest(BaseModel):
    """A person's decisions on the calls a run holds (its `approval_requested` event)."""

    model_config = ConfigDict(extra="forbid")

    decisions: dict[str, Decision] = Field(
        description='By call id: `{"decision": "approve"}` (with `arguments` to edit them) '
        'or `{"decision": "reject", "reason": …}` (the model reads the reason).',
        min_length=1,
    )


class RunSummary(BaseModel):
    """One run, without its events."""

    run_id: str
    state: RunState
    query: str
    session_id: str | None = None
    answer: str | None = None
    """The answer, once the run has ended with one."""


class RunInfo(RunSummary):
    """One run and its trajectory: the events so far while it runs, the recorded file after."""

    header: TrajectoryHeader | None = None
    """The trajectory's header; None while the run is live (it is completed as the run goes)."""
    events: list[Event]


class SessionInfo(BaseModel):
    """A session's runs on this server, oldest first."""

    session_id: str
    runs: list[RunSummary]


class TrajectoryFile(BaseModel):
    """A trajectory file the server can open (with `GET /runs/{run_id}`)."""

    run_id: str
    path: str
    """Relative to the server's trajectory folder."""
    size: int
    modified: datetime
    query: str | None = None
    """From the file's header; None when the header cannot be read."""


class TrajectoryList(BaseModel):
    """The most recent trajectory files, newest first."""

    directory: str
    files: list[TrajectoryFile]


class ErrorBody(BaseModel):
    """Why a request was refused."""

    detail: str


class LimitErrorBody(ErrorBody):
    """A run refused because too many are in progress."""

    limit: Literal["server", "token"]
    """Which limit is full: the server's (`max_runs`) or the caller's token's
    (`max_runs_per_token`)."""


class FieldError(BaseModel):
    loc: list[str | int]
    """Where in the request: e.g. `["body", "query"]`."""
    msg: str
    type: str


class ValidationErrorBody(ErrorBody):
    """A request whose parameters or body do not validate; `detail` sums up `errors`."""

    errors: list[FieldError]
