"""Internal. Trajectories: a run's event stream as JSONL, headed by what is needed to reproduce it.

    line 1     TrajectoryHeader   (type "header": model, strategy, tool schema hashes, version…)
    line 2…    one Event per line, in `seq` order, the last one `run_finished`

The header's `format_version` says how to read the rest. A reader loads every format agentrt
has written: an older file is upgraded line by line through `UPGRADES`, a newer one refused with
the version that wrote it. `json_schema()` publishes today's format
(`schemas/trajectory.schema.json`, rewritten by `scripts/trajectory_schema.py`).

The Markdown rendering is derived from the file, never written separately.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentrt._validation import describe_errors
from agentrt._version import __version__
from agentrt.events import (
    Event,
    RunFinishedEvent,
    event_adapter,
)
from agentrt.logs import get_logger
from agentrt.trajectory.markdown import render_markdown

__all__ = [
    "FORMAT_VERSION",
    "UPGRADES",
    "Trajectory",
    "TrajectoryHeader",
    "json_schema",
]

FORMAT_VERSION = 1
"""The format this agentrt writes. Raise it when a change to the header or an event would make
an older reader misread a file, and add the upgrade from the previous format to `UPGRADES`."""

Lines = list[dict[str, Any]]
"""A trajectory file as parsed JSON, one object per line, the header first."""

UPGRADES: dict[int, Callable[[Lines], Lines]] = {}
"""Format N → the function that rewrites a file of format N as format N + 1 (header
included). Empty while format 1 is the only one agentrt has written."""

log = get_logger("agentrt.trajectory.format")


class TrajectoryHeader(BaseModel):
    model_config = ConfigDict(defer_build=True)

    type: Literal["header"] = "header"
    format_version: int = FORMAT_VERSION
    # A factory, not a default: the published schema must not change with every release.
    agentrt_version: str = Field(default_factory=lambda: __version__)
    run_id: str
    created: datetime
    query: str
    session_id: str | None = None
    scope: list[str] | None = None
    """The retrieval scope the run was given (`Agent.run(scope=…)`): a resume or replay keeps it."""
    model: str
    tool_format: str | None = None
    """The tool-call format the prompt asks for (see `RunStartedEvent.tool_format`)."""
    workspace: str | None
    """The workspace folder the run used; None for one held in memory (a code-first agent)."""
    workspace_fingerprint: str
    """Hash of the workspace's strategies and tool schemas at the time of the run."""
    strategy: str | None = None
    """The strategy chosen; None when the run ended before choosing."""
    tools: dict[str, str] = {}
    """The tools offered to the model: name → schema hash."""
    mcp_servers: dict[str, dict[str, str]] = {}
    """Every tool of each MCP server the agent had started: server name → tool name → schema
    hash, so that a replay can say which server's tools changed since."""
    settings: dict[str, Any] = {}
    deps_type: str | None = None
    """The type of the deps the run's tools were given (its name: never the value)."""
    output_type: str | None = None
    """The run's output type, when it is not `str`."""
    resumed_from: str | None = None
    """A resumed run (`agent.resume`): the file of its earlier attempt, kept beside this one
    (`<run_id>~<n>.jsonl`)."""


class Trajectory(BaseModel):
    """A recorded run."""

    model_config = ConfigDict(defer_build=True)

    header: TrajectoryHeader
    events: list[Event]

    @classmethod
    def read(cls, path: str | Path, *, torn: bool = False) -> Trajectory:
        """Load a trajectory file of any format agentrt has written, upgraded to today's.

        :param torn: the file may end in a half-written line (its process died writing it):
            a last line without its newline is left out

        :raises ValueError: the file is empty, a line is not what it should be (the message
            names the file and the line), or a newer agentrt wrote it
        """
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        if torn and lines and not text.endswith("\n"):
            lines.pop()
        if not lines:
            msg = f"{path}: empty file, not a trajectory"
            raise ValueError(msg)
        try:
            stamp = _Stamp.model_validate_json(lines[0])
        except ValidationError as exc:
            problem = describe_errors(exc, root=None, quote=False, limit=1)
            msg = f"{path}:1: not a trajectory header: {problem}"
            raise ValueError(msg) from None
        if stamp.format_version > FORMAT_VERSION:
            msg = (
                f"{path}: written by agentrt {stamp.agentrt_version}, format "
                f"{stamp.format_version}; this agentrt ({__version__}) reads up to format "
                f"{FORMAT_VERSION}: upgrade agentrt to read it"
            )
            raise ValueError(msg)
        if stamp.format_version < FORMAT_VERSION:
            return cls._from_lines(path, _upgrade(path, lines, stamp.format_version))
        return cls._from_lines(path, lines)

    @classmethod
    def _from_lines(cls, path: Path, lines: list[str] | Lines) -> Trajectory:
        """Validate a file of today's format, given as its text lines or as parsed JSON."""

        def fault(number: int, what: str, exc: ValidationError) -> ValueError:
            problem = describe_errors(exc, root=None, quote=False, limit=1)
            return ValueError(f"{path}:{number}: not {what}: {problem}")

        first, rest = lines[0], lines[1:]
        try:
            header = (
                TrajectoryHeader.model_validate_json(first)
                if isinstance(first, str)
                else TrajectoryHeader.model_validate(first)
            )
        except ValidationError as exc:
            raise fault(1, "a trajectory header", exc) from None
        events: list[Event] = []
        for number, line in enumerate(rest, start=2):
            try:
                events.append(
                    event_adapter.validate_json(line)
                    if isinstance(line, str)
                    else event_adapter.validate_python(line)
                )
            except ValidationError as exc:
                raise fault(number, "an event", exc) from None
        return cls(header=header, events=events)

    @property
    def finished(self) -> RunFinishedEvent | None:
        last = self.events[-1] if self.events else None
        return last if isinstance(last, RunFinishedEvent) else None

    def to_markdown(self) -> str:
        """A readable account of the run: steps, visible text, tool calls, answer."""
        return render_markdown(self)


class _Stamp(BaseModel):
    """What a header of any format holds: enough to choose how to read the rest."""

    model_config = ConfigDict(defer_build=True)

    type: Literal["header"]
    format_version: int = Field(ge=1)
    agentrt_version: str = "unknown"


def _upgrade(path: Path, text: list[str], version: int) -> Lines:
    """The lines of a format-`version` file, rewritten step by step as today's format."""
    lines: Lines = []
    for number, line in enumerate(text, start=1):
        try:
            value = json.loads(line)
        except ValueError as exc:
            msg = f"{path}:{number}: not JSON: {exc}"
            raise ValueError(msg) from None
        if not isinstance(value, dict):
            msg = f"{path}:{number}: not a JSON object"
            raise ValueError(msg)
        lines.append(value)
    while version < FORMAT_VERSION:
        step = UPGRADES.get(version)
        if step is None:
            msg = f"{path}: format {version} is not one agentrt has written (no upgrade from it)"
            raise ValueError(msg)
        lines = step(lines)
        version += 1
    return lines


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a trajectory file of today's format (`schemas/trajectory.schema.json`).

    JSON Lines has no schema language of its own, so the file is described as the array of its
    lines: the first (`prefixItems`) a header, every later one (`items`) an event. A line alone
    validates against `#/$defs/TrajectoryHeader` or `#/$defs/Event`.
    """
    ref = "#/$defs/{model}"
    header = TrajectoryHeader.model_json_schema(ref_template=ref)
    event = event_adapter.json_schema(ref_template=ref)
    defs: dict[str, Any] = {**header.pop("$defs", {}), **event.pop("$defs")}
    defs |= {"TrajectoryHeader": header, "Event": event}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"agentrt trajectory, format {FORMAT_VERSION}",
        "description": (
            "A trajectory file is JSON Lines: a header line, then one event per line in seq "
            "order. This schema describes the file as the JSON array of its lines."
        ),
        "type": "array",
        "minItems": 1,
        "prefixItems": [{"$ref": "#/$defs/TrajectoryHeader"}],
        "items": {"$ref": "#/$defs/Event"},
        "$defs": dict(sorted(defs.items())),
    }
