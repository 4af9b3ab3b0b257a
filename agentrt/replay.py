"""Replay: run a recorded trajectory's model outputs through today's code and compare.

Each `model_response` event holds one model call's complete output, so a `ScriptedModel`
built from them answers a new run exactly as the model answered the old one. What differs
between the two event streams is then the code's doing (or a tool's).

Compared: every event field except the ones that measure time (`t`, `duration`, `timings`),
the run id and `seq`, in a canonical order. The model's stream and each tool call run
concurrently, so how their events interleave depends on timing, not on the code: each call's
`tool_started` / `guard` / `tool_finished` are placed right after its `tool_call`, and
consecutive `text_delta` events of a step are joined (how a stream was cut into chunks is the
transport's business, not the agent's).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrt.agent import Agent
from agentrt.events import (
    ClassifiedEvent,
    Event,
    GuardEvent,
    ModelResponseEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolFinishedEvent,
    ToolStartedEvent,
)
from agentrt.models.scripted import ScriptedModel, ScriptedTurn
from agentrt.settings import AgentSettings
from agentrt.trajectory import Trajectory
from agentrt.workspace import Workspace

__all__ = ["Difference", "recorded_model", "replay"]

_VOLATILE = frozenset({"t", "seq", "run_id", "started_at", "duration", "timings"})
_CALL_LIFECYCLE = (ToolStartedEvent, GuardEvent, ToolFinishedEvent)


@dataclass(frozen=True, slots=True)
class Difference:
    """The first place where two runs part ways."""

    index: int
    """Position in the normalised event lists."""
    recorded: dict[str, Any] | None
    """The event as recorded; None when the recording ended first."""
    replayed: dict[str, Any] | None
    """The event of today's run; None when it ended first."""


def recorded_model(trajectory: Trajectory) -> ScriptedModel:
    """A model that answers each call as the recorded run's model did."""
    turns = [
        ScriptedTurn(text=e.text, tool_calls=e.tool_calls, usage=e.usage)
        for e in trajectory.events
        if isinstance(e, ModelResponseEvent)
    ]
    return ScriptedModel(turns, name=trajectory.header.model)


async def replay(
    trajectory: Trajectory, *, workspace: str | Path | Workspace | None = None
) -> tuple[Trajectory, Difference | None]:
    """Re-run `trajectory` with its recorded model outputs; return the new run and the first
    difference, or None when the runs agree.

    :param workspace: defaults to the workspace the trajectory names
    """
    header = trajectory.header
    settings = AgentSettings.model_validate({**header.settings, "trajectory_dir": None})
    agent = Agent(
        workspace if workspace is not None else header.workspace,
        model=recorded_model(trajectory),
        settings=settings,
    )
    forced = next(
        (
            e.query_type
            for e in trajectory.events
            if isinstance(e, ClassifiedEvent) and e.method == "forced"
        ),
        None,
    )
    result = await agent.run_to_completion(
        header.query, session_id=header.session_id, strategy=forced
    )
    return result.trajectory, first_difference(trajectory.events, result.trajectory.events)


def first_difference(recorded: list[Event], replayed: list[Event]) -> Difference | None:
    old, new = _normalise(recorded), _normalise(replayed)
    for index in range(max(len(old), len(new))):
        a = old[index] if index < len(old) else None
        b = new[index] if index < len(new) else None
        if a != b:
            return Difference(index, a, b)
    return None


def _normalise(events: list[Event]) -> list[dict[str, Any]]:
    lifecycle: dict[str, list[Event]] = {}
    for e in events:
        if isinstance(e, _CALL_LIFECYCLE):
            lifecycle.setdefault(e.call_id, []).append(e)
    out: list[dict[str, Any]] = []
    for e in events:
        if isinstance(e, _CALL_LIFECYCLE):
            continue
        if (
            isinstance(e, TextDeltaEvent)
            and out
            and out[-1]["type"] == "text_delta"
            and out[-1]["step"] == e.step
        ):
            out[-1]["text"] += e.text
            continue
        out.append(_strip(e.model_dump(mode="json")))
        if isinstance(e, ToolCallEvent):
            out.extend(_strip(x.model_dump(mode="json")) for x in lifecycle.pop(e.call_id, []))
    return out


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value
