"""Errors, in two families kept apart: mistakes of the developer, and failures at run time.

    AgentrtError
    ├── UserError ─────────── the application developer must fix something
    │   ├── WorkspaceError ── a strategy, prompt or tool pack cannot be loaded
    │   └── ToolDefinitionError ── a function cannot be turned into a tool
    ├── ModelError ────────── a model call failed; the run ends with status `error`
    │   ├── RequestRejected ── the server refused the request (a 4xx other than 429)
    │   ├── RetriesExhausted ─ 429s, 5xx or network errors outlasted the retries
    │   ├── StreamInterrupted ─ the answer broke off mid-stream; the turn may be retried
    │   └── ScriptExhausted ── a scripted model was asked for more turns than it has
    ├── TokenLimitReached ─── an answer passed the token budget or the per-call cap as it
    │                         streamed; the run ends `budget_exhausted`
    ├── PlanFailed ────────── a planner could not carry its plan out; the run ends `error`
    │   ├── ProgramFailed ─── a `vm` program's step could not complete
    │   └── PipelineFailed ── no `pipeline` plan covers the question, or it could not run
    ├── OutputInvalid ─────── the final answer is not of the `output_type`, after every retry;
    │                         the run ends `error`
    ├── RunFailed ─────────── `RunResult.output` of a run that did not end `ok`
    ├── SessionConflict ───── a turn appended at a version its session no longer has (another
    │                         writer's came first); the agent appends after it
    ├── StoreUnavailable ──── the session store's database cannot be reached, or was lost;
    │                         the run ends `error`
    └── ToolError ─────────── raised by a tool: its message goes to the model verbatim
        ├── ShellError ────── a virtual shell command failed (agentrt.knowledge.vfs)
        ├── QueryRefused ──── a SQL statement was not run: `reason` says why (agentrt.sql.guard)
        └── QueryTimeout ──── a SQL statement ran past its deadline and was stopped

Inside a run nothing here escapes as an exception: a planner's failures (`ModelError`,
`PlanFailed`) end it with status `error`, and the run ends with one `run_finished`. They
escape only from set-up (loading a workspace, building a tool).

Two exceptions live outside the tree and never leave agentrt: `agentrt.parsing`'s
`JSONProblem` (a `ValueError`, as `json.JSONDecodeError` is: a text is not the JSON asked for;
each caller catches it where it asks and turns it into a value the model reads), and
`agentrt.models.openai`'s private `_Retryable` (what tenacity retries on).
"""

from __future__ import annotations

__all__ = [
    "AgentrtError",
    "ModelError",
    "OutputInvalid",
    "PipelineFailed",
    "PlanFailed",
    "ProgramFailed",
    "QueryRefused",
    "QueryTimeout",
    "RequestRejected",
    "RetriesExhausted",
    "RunFailed",
    "ScriptExhausted",
    "SessionConflict",
    "ShellError",
    "StoreUnavailable",
    "StreamInterrupted",
    "TokenLimitReached",
    "ToolDefinitionError",
    "ToolError",
    "UserError",
    "WorkspaceError",
]


class AgentrtError(Exception):
    """Base of every error agentrt raises."""


class UserError(AgentrtError):
    """A usage mistake by the application developer: the message says what to change."""


class OutputInvalid(AgentrtError):
    """The model's final answer did not validate as the output type, after every retry."""


class RunFailed(AgentrtError):
    """A run's typed output was asked for, but the run did not end `ok`."""


class WorkspaceError(UserError):
    """A workspace file is missing or invalid; the message names the file and the field."""


class ToolDefinitionError(UserError):
    """A function cannot be made into a tool as declared."""


class ModelError(AgentrtError):
    """A model call failed."""


class RequestRejected(ModelError):
    """The server refused the request as such (a 4xx other than 429): retrying cannot help."""


class RetriesExhausted(ModelError):
    """The server stayed unavailable (429, 5xx, network errors) through every retry."""


class StreamInterrupted(ModelError):
    """The answer broke off after it had begun: what arrived is discarded, the turn may be
    asked again."""


class ScriptExhausted(ModelError):
    """A scripted model was asked for a turn beyond the end of its script."""


class TokenLimitReached(AgentrtError):
    """A model's answer was cut mid-stream: the run's token budget or the per-call cap was
    passed. The planner ends the run `budget_exhausted`; the partial answer is recorded."""


class PlanFailed(AgentrtError):
    """A planner could not carry its plan out; the message says which step and why."""


class ProgramFailed(PlanFailed):
    """A `vm` program's step could not complete; the message names the step."""


class PipelineFailed(PlanFailed):
    """The pipeline could not produce a plan that covers the question, or run it."""


class ToolError(AgentrtError):
    """Raise inside a tool to tell the model what went wrong, in words it can act on."""


class ShellError(ToolError):
    """A command failed: the message, like a shell's, names the path or pattern at fault."""


class QueryRefused(ToolError):
    """The statement was not run. The message (and `reason`) says why, for the model."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class QueryTimeout(ToolError):
    """The statement ran past its deadline and SQLite stopped it."""


class SessionConflict(AgentrtError):
    """A turn was appended at a version the session no longer has: another writer appended
    first. Nothing was written; re-read the session and append after the other turn."""

    def __init__(self, session_id: str, expected: int, actual: int) -> None:
        super().__init__(
            f"session {session_id!r} is at version {actual}, not {expected}: another writer "
            "appended a turn first"
        )
        self.session_id, self.expected, self.actual = session_id, expected, actual


class StoreUnavailable(AgentrtError):
    """The session store's database could not be reached, or its connection was lost (the
    message names its URL, without any password)."""
