"""Replay: run a recorded trajectory's model outputs through today's code and compare.

Each `model_response` event holds one model call's complete output, so a model built from them
answers a new run exactly as the model answered the old one. What differs between the two event
streams is then the code's doing (or a tool's). Recorded answers are handed out per purpose
(`turn`, `classify`, `llm_generate`, …), each in its recorded order: a tool's own model call
that runs beside a turn cannot take the turn's answer, and when tools are not run (below) the
answers their calls got are simply left over.

Tools run live by default. With `tools="recorded"` no tool runs: each call is answered with the
output or error the recording has for the same tool and arguments (in call order, the same call
id first), so only the engine is checked, not the tools or the data behind them. A call the
recording lacks gets an error result, and shows as a difference. What a tool does to the run
besides its result (a session tool it creates) is not replayed, nor are the model calls a tool
makes itself (`llm_generate`): recorded answers of a purpose today's run never asks for are
left out of the comparison.

Compared: every event field except the ones that measure time (`t`, `duration`, `timings`),
the run id and `seq`, in a canonical order. Numbers compare within a tolerance when either is a
float (`REL_TOL` of the larger, or `ABS_TOL` near zero): a retrieval score computed in float32
on another CPU differs in its last digits (`0.5985548496246338` recorded, `0.598554790019989`
replayed), which is the machine, not the behaviour; a score that moves by more, or a different
order of results, is still a difference. The model's stream and each tool call run
concurrently, so how their events interleave depends on timing, not on the code: each call's
`tool_started` / `guard` / `tool_finished` are placed right after its `tool_call`, and
consecutive `text_delta` events of a step are joined, and so are `reasoning_delta` ones (how a
stream was cut into chunks is the transport's business, not the agent's). Paths into a run's
own output folder contain its run id; both runs' are written `<run>`, so where the files went
is no difference either. Paths into the workspace are written `<workspace>`, so a replay in
another checkout of it (or against `workspace=` a copy) compares what the run did, not where
the folder is.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from agentrt._validation import describe_errors
from agentrt.agent import Agent
from agentrt.events import (
    ClassifiedEvent,
    Event,
    GuardEvent,
    ModelResponseEvent,
    ReasoningDeltaEvent,
    RunFinishedEvent,
    RunResumedEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolFinishedEvent,
    ToolStartedEvent,
    Usage,
)
from agentrt.exceptions import ScriptExhausted, ToolError, UserError
from agentrt.mcp.client import describe_changes
from agentrt.models.base import ModelRequest
from agentrt.models.scripted import ScriptedModel, ScriptedTurn
from agentrt.resume import RecordedAnswers, RecordedResults, recorded_outcome
from agentrt.settings import AgentSettings
from agentrt.tool import Tool, ToolContext, run_tool
from agentrt.trajectory.format import Trajectory, TrajectoryHeader
from agentrt.workspace import Workspace

__all__ = [
    "ABS_TOL",
    "REL_TOL",
    "Difference",
    "Outcome",
    "RecordedTools",
    "ReplayReport",
    "ToolSource",
    "first_difference",
    "recorded_model",
    "replay",
    "replay_files",
    "same",
    "trajectory_files",
]

ToolSource = Literal["live", "recorded"]
"""Where tool results come from in a replay: today's tools, or the recording."""

Outcome = Literal["same", "differs", "error"]
"""How one replayed run compares: identical events, a difference, or it could not be replayed."""

REL_TOL = 1e-5
"""Two floats are the same when they differ by at most this fraction of the larger: float32
arithmetic (embeddings, their scores) carries about 7 significant digits, and differs between
CPUs in the last ones."""
ABS_TOL = 1e-6
"""...or by at most this much, for values near zero, where a relative tolerance is no use: a
cosine of unit float32 vectors that comes out near 0 is still off by about 1e-7."""

_VOLATILE = frozenset({"t", "seq", "run_id", "started_at", "duration", "timings"})
_CALL_LIFECYCLE = (ToolStartedEvent, GuardEvent, ToolFinishedEvent)


@dataclass(frozen=True, slots=True)
class Difference:
    """The first place where two runs part ways."""

    index: int
    """Position in the normalised event lists."""
    seq: int | None
    """The recorded event's `seq` (line `seq + 2` of the file); None when the recording ended
    first."""
    recorded: dict[str, Any] | None
    """The event as recorded; None when the recording ended first."""
    replayed: dict[str, Any] | None
    """The event of today's run; None when it ended first."""

    def summary(self, limit: int = 80) -> str:
        """One line: which event, and each field that differs as `recorded → today`."""
        old, new = self.recorded, self.replayed
        if old is None or new is None:
            present = new if old is None else old
            assert present is not None
            ended = "the recording" if old is None else "today's run"
            return f"{ended} ended first; the other has {_label(present)}"
        if old["type"] != new["type"]:
            return f"recorded {_label(old)}, today {_label(new)}"
        changed = [k for k in {**old, **new} if not same(old.get(k), new.get(k))]
        fields = "; ".join(
            f"{k}: {_short(old.get(k), limit)} → {_short(new.get(k), limit)}" for k in changed
        )
        return f"{_label(old)}: {fields}"


def _label(event: dict[str, Any]) -> str:
    parts = [event["type"], event.get("name"), event.get("call_id")]
    return " ".join(str(p) for p in parts if p is not None)


def _short(value: object, limit: int) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ReplayReport(BaseModel):
    """How one trajectory file fared in a replay."""

    model_config = ConfigDict(frozen=True)

    path: str
    outcome: Outcome
    events: int = 0
    """Events in the recording (0 when it could not be read)."""
    difference: Difference | None = None
    """The first difference, when the outcome is `differs`."""
    error: str | None = None
    """Why the run could not be replayed, when the outcome is `error`."""
    mcp_changes: list[str] = []
    """How the MCP servers' tools changed since the run (`describe_changes`): a likely cause
    of a difference."""


def recorded_model(trajectory: Trajectory) -> ScriptedModel:
    """A model that answers each call as the recorded run's model answered the call of the
    same purpose at the same place in the order."""
    answers = RecordedAnswers(trajectory)
    recorded = Counter(answers.recorded)

    def answer(request: ModelRequest) -> ScriptedTurn:
        turn = answers.take(request.purpose)
        if turn is None:
            msg = (
                f"the recording has {recorded[request.purpose]} model call(s) for "
                f"{request.purpose!r}; today's run asks for more"
            )
            raise ScriptExhausted(msg)
        return turn

    return ScriptedModel([answer] * recorded.total(), name=trajectory.header.model)


class RecordedTools:
    """A `ToolRunner` that runs no tool: each call gets the result a recording has for it.

    The recording's executed calls (not those answered from the run's cache) are handed out
    once each: for a call, the first unused one of the same tool with the same arguments,
    the one with the same call id first.
    """

    def __init__(self, trajectory: Trajectory) -> None:
        self.results = RecordedResults(trajectory)

    async def __call__(self, tool: Tool, arguments: dict[str, Any], context: ToolContext) -> Any:
        return recorded_outcome(self.take(tool, context.call_id, arguments))

    def take(self, tool: Tool, call_id: str, arguments: Mapping[str, Any]) -> ToolFinishedEvent:
        """The recorded result of the first unused call of `tool` with these arguments,
        preferring the one with the same call id.

        :raises ToolError: the recording has no such call
        """
        result = self.results.find(tool, call_id, arguments)
        if result is None:
            wanted = tool.args_model.model_validate(dict(arguments)).model_dump(mode="json")
            given = json.dumps(wanted, ensure_ascii=False, sort_keys=True)
            msg = f"replay: the recording has no (further) call of {tool.name} with {given}"
            raise ToolError(msg)
        return result


async def replay(
    trajectory: Trajectory,
    *,
    workspace: str | Path | Workspace | None = None,
    agent: Agent[Any, Any] | None = None,
    tools: ToolSource = "live",
    deps: Any = None,
) -> tuple[Trajectory, Difference | None]:
    """Re-run `trajectory` with its recorded model outputs; return the new run and the first
    difference, or None when the runs agree.

    :param workspace: defaults to the workspace the trajectory names
    :param agent: an agent like the one that made the run, for its workspace, output type and
        deps type (a code-first agent's workspace is not in any folder); its model is not used
    :param tools: `live` runs today's tools; `recorded` answers each call from the recording
    :param deps: what the tools get as `ctx.deps` when they run (`live`): the recorded run's
        own are never kept, so a replay can check a run against a test database
    :raises UserError: the workspace cannot be loaded, or the recorded settings or strategy
        do not fit it
    """
    header = trajectory.header
    loaded = _replay_workspace(header, agent.workspace if agent is not None else workspace)
    forced = next(
        (
            e.query_type
            for e in trajectory.events
            if isinstance(e, ClassifiedEvent) and e.method == "forced"
        ),
        None,
    )
    # The replay is recorded in a folder of its own, removed afterwards: the files its tools
    # write (charts, tables) go beside its trajectory, not into the user's folders. Nor does
    # it touch the recorded run's session store.
    with tempfile.TemporaryDirectory(prefix="agentrt-replay-") as scratch:
        settings = _replay_settings(header, scratch)
        model = recorded_model(trajectory)
        runner = RecordedTools(trajectory) if tools == "recorded" else run_tool
        like: dict[str, Any] = (
            {"output_type": agent.output.type, "deps_type": agent.deps_type} if agent else {}
        )
        again_agent = Agent(model, workspace=loaded, settings=settings, tool_runner=runner, **like)
        # A workspace loaded from its folder brings the MCP servers its mcp.yaml declares.
        async with again_agent:
            result = await again_agent.run(
                header.query, **_as_recorded(trajectory), strategy=forced, deps=deps
            )
        again = result.trajectory  # read back from its file before the folder goes
    unasked: set[str] = set()
    if tools == "recorded":
        asked = {r.purpose for r in model.requests}
        unasked = {e.purpose for e in trajectory.events if isinstance(e, ModelResponseEvent)}
        unasked -= asked
    return again, first_difference(
        trajectory.events,
        again.events,
        run_ids=(header.run_id, again.header.run_id),
        workspaces=[str(w) for w in (header.workspace, loaded.root) if w is not None],
        unasked=unasked,
    )


def _as_recorded(trajectory: Trajectory) -> dict[str, Any]:
    """The recorded run's session and scope, and the decisions a resumed run carried on with: its
    replay runs the calls held for approval as the person decided."""
    decided = next((e.decisions for e in trajectory.events if isinstance(e, RunResumedEvent)), None)
    header = trajectory.header
    return {"session_id": header.session_id, "scope": header.scope, "decisions": decided}


def _replay_settings(header: TrajectoryHeader, scratch: str) -> AgentSettings:
    try:
        return AgentSettings.model_validate(
            {**header.settings, "trajectory_dir": scratch, "session_store": None}
        )
    except ValidationError as exc:
        problem = describe_errors(exc, root=None, quote=False, limit=1)
        msg = f"the recorded settings do not fit today's agent: {problem}"
        raise UserError(msg) from None


def _replay_workspace(
    header: TrajectoryHeader, workspace: str | Path | Workspace | None
) -> Workspace:
    if isinstance(workspace, Workspace):
        return workspace
    if workspace is None and header.workspace is None:
        msg = (
            "the run's workspace was held in memory (a code-first agent): pass the agent, "
            "replay(trajectory, agent=agent)"
        )
        raise UserError(msg)
    return Workspace(workspace if workspace is not None else header.workspace)


def first_difference(
    recorded: list[Event],
    replayed: list[Event],
    *,
    run_ids: Sequence[str] = (),
    workspaces: Sequence[str] = (),
    unasked: Collection[str] = (),
) -> Difference | None:
    """The first place where the normalised event lists differ, or None.

    :param run_ids: the runs' ids, so that paths into their output folders compare equal
    :param workspaces: the runs' workspace folders, so that paths into them compare equal
        (a replay against a workspace that has moved, or another checkout of it)
    :param unasked: purposes of model calls left out (those only tools made, when tools
        were not run)
    """
    places = _places(run_ids, workspaces)
    old = _normalise(recorded, places, unasked)
    new = _normalise(replayed, places, unasked)
    for index in range(max(len(old), len(new))):
        seq, a = old[index] if index < len(old) else (None, None)
        b = new[index][1] if index < len(new) else None
        if not same(a, b):
            return Difference(index, seq, a, b)
    return None


def same(recorded: Any, replayed: Any) -> bool:
    """Whether two JSON values are equal, floats within `REL_TOL` (or `ABS_TOL`): containers
    item by item (dicts by the same keys, lists in the same order), everything else exactly."""
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        return recorded.keys() == replayed.keys() and all(
            same(v, replayed[k]) for k, v in recorded.items()
        )
    if isinstance(recorded, list) and isinstance(replayed, list):
        return len(recorded) == len(replayed) and all(map(same, recorded, replayed))
    if _is_number(recorded) and _is_number(replayed) and float in (type(recorded), type(replayed)):
        return math.isclose(recorded, replayed, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return bool(recorded == replayed)


def _is_number(value: Any) -> bool:
    # A bool is an int to Python, not a number to a run.
    return isinstance(value, int | float) and not isinstance(value, bool)


def trajectory_files(path: Path) -> list[Path]:
    """`path` if it is a file; every trajectory under it (recursively, sorted) if a folder.

    In a folder, a `*.jsonl` file whose first line is JSON but not a trajectory header is some
    other record kept beside the runs (`agentrt eval`'s `results.jsonl`) and is passed over;
    one whose first line is not JSON at all is kept, to be reported as unreadable.

    :raises UserError: `path` does not exist, or the folder holds no trajectory
    """
    if path.is_file():
        return [path]
    if not path.is_dir():
        msg = f"{path}: no such file or folder"
        raise UserError(msg)
    files = sorted(p for p in path.rglob("*.jsonl") if p.is_file() and _may_be_trajectory(p))
    if not files:
        msg = f"{path}: no trajectory files (*.jsonl) in this folder"
        raise UserError(msg)
    return files


def _may_be_trajectory(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8") as f:
            first = json.loads(f.readline())
    except (OSError, UnicodeDecodeError, ValueError):
        return True
    return not isinstance(first, dict) or first.get("type") == "header"


async def replay_files(
    paths: Sequence[Path],
    *,
    workspace: Path | None = None,
    tools: ToolSource = "live",
    on_report: Callable[[ReplayReport], None] | None = None,
) -> list[ReplayReport]:
    """Replay each file in turn and report how it fared; a file that cannot be read or
    replayed is reported as an `error`, and the others still run.

    One at a time, on purpose: live tools may share state between runs (a database, a
    counter), which concurrent replays would make differ by timing.

    :param workspace: replay every file against this workspace instead of the recorded one
    :param on_report: called as each file is done (a progress bar)
    """
    loaded: dict[str, Workspace] = {}
    reports: list[ReplayReport] = []
    for path in paths:
        report = await _replay_file(path, workspace, tools, loaded)
        reports.append(report)
        if on_report is not None:
            on_report(report)
    return reports


async def _replay_file(
    path: Path, workspace: Path | None, tools: ToolSource, loaded: dict[str, Workspace]
) -> ReplayReport:
    try:
        trajectory = Trajectory.read(path)
        root = str(workspace if workspace is not None else trajectory.header.workspace)
        if root not in loaded:
            loaded[root] = Workspace(root)
        again, difference = await replay(trajectory, workspace=loaded[root], tools=tools)
    except (OSError, ValueError, UserError) as exc:
        return ReplayReport(path=str(path), outcome="error", error=str(exc))
    return ReplayReport(
        path=str(path),
        outcome="same" if difference is None else "differs",
        events=len(trajectory.events),
        difference=difference,
        mcp_changes=describe_changes(trajectory.header.mcp_servers, again.header.mcp_servers),
    )


def _places(run_ids: Sequence[str], workspaces: Sequence[str]) -> re.Pattern[str] | None:
    """Paths that name where a run was, not what it did: into a run's output folder (up to and
    including its id), and a workspace folder (the longest first)."""
    alternatives = [r"(?P<run>\S*(?:" + "|".join(map(re.escape, run_ids)) + "))"] if run_ids else []
    if workspaces:
        roots = sorted({w.rstrip("/") for w in workspaces if w}, key=len, reverse=True)
        alternatives.append("(?P<workspace>" + "|".join(map(re.escape, roots)) + ")")
    return re.compile("|".join(alternatives)) if alternatives else None


def _normalise(
    events: list[Event], places: re.Pattern[str] | None, unasked: Collection[str]
) -> list[tuple[int, dict[str, Any]]]:
    """The events to compare, each with its `seq`, in the canonical order (module docstring)."""
    lifecycle: dict[str, list[Event]] = {}
    for e in events:
        if isinstance(e, _CALL_LIFECYCLE):
            lifecycle.setdefault(e.call_id, []).append(e)
    out: list[tuple[int, dict[str, Any]]] = []
    left_out = Usage()
    for e in events:
        if isinstance(e, RunResumedEvent):
            continue  # where a resume caught up: a replay runs straight through
        if isinstance(e, ModelResponseEvent) and e.purpose in unasked:
            left_out += e.usage
            continue
        if isinstance(e, _CALL_LIFECYCLE):
            continue
        if isinstance(e, RunFinishedEvent) and left_out.total_tokens:
            # The run's usage counts the calls left out, too.
            usage = Usage(
                prompt_tokens=e.usage.prompt_tokens - left_out.prompt_tokens,
                completion_tokens=e.usage.completion_tokens - left_out.completion_tokens,
            )
            e = e.model_copy(update={"usage": usage})
        if (
            isinstance(e, TextDeltaEvent | ReasoningDeltaEvent)
            and out
            and out[-1][1]["type"] == e.type
            and out[-1][1]["step"] == e.step
        ):
            out[-1][1]["text"] += e.text
            continue
        out.append((e.seq, _strip(e.model_dump(mode="json"))))
        if isinstance(e, ToolCallEvent):
            out.extend(
                (x.seq, _strip(x.model_dump(mode="json"))) for x in lifecycle.pop(e.call_id, [])
            )
    return [(seq, _rewrite(x, places)) for seq, x in out] if places is not None else out


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _rewrite(value: Any, places: re.Pattern[str]) -> Any:
    if isinstance(value, str):
        return places.sub(lambda m: f"<{m.lastgroup}>", value)
    if isinstance(value, dict):
        return {k: _rewrite(v, places) for k, v in value.items()}
    if isinstance(value, list):
        return [_rewrite(v, places) for v in value]
    return value
