"""Resume: carry on a run that paused for approval, or whose process died, from its trajectory.

    <dir>/<day>/<run_id>.jsonl ──renamed──► <run_id>~1.jsonl   (the earlier attempt, kept)
           │                                    ▲
           └── the resumed attempt, same run_id, header `resumed_from: <run_id>~1.jsonl`

The resumed attempt is the run again, from its query, through today's code, with two seams
fed from the earlier attempt's recording:

- its model (`ResumingModel`) answers each call from the recorded answers of the same purpose,
  in order, while there are any, and asks the live model only after: a recorded turn is never
  asked again. The first live call marks the place with a `run_resumed` event;
- its tool runner (`ResumingTools`) answers each call with the recorded result of the first
  unused completed call of the same tool with the same arguments (the same call id first), and
  runs the tool only when the recording has none. A completed call is never run twice; one
  that had started but not finished when the process died has no result and runs again (at
  least once for an interrupted call, exactly once for a completed one). What a tool did
  besides its result (a session tool it added, files) is not done again.

The decisions on calls held for approval (`Approve`, `Reject`) go to the executor by call id:
a replayed turn writes the same calls with the same ids. They are recorded in `run_resumed`,
with those of earlier resumes, so a run resumed twice keeps the first decisions.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentrt._validation import describe_errors
from agentrt.events import (
    ApprovalRequestedEvent,
    Approve,
    Decision,
    ModelResponseEvent,
    PendingCall,
    RunResumedEvent,
    ToolCallEvent,
    ToolFinishedEvent,
)
from agentrt.exceptions import ToolError, UserError
from agentrt.models.base import Model, ModelChunk, ModelRequest
from agentrt.models.scripted import ScriptedModel, ScriptedTurn
from agentrt.run import RunContext
from agentrt.tool import Tool, ToolContext, ToolRunner
from agentrt.trajectory.format import Trajectory
from agentrt.trajectory.writer import find_trajectory

__all__ = [
    "RecordedAnswers",
    "RecordedResults",
    "ResumingModel",
    "ResumingTools",
    "Resumption",
    "check_resumable",
    "read_recording",
    "recorded_outcome",
    "set_aside_name",
]


def read_recording(folder: Path | None, run_id: str) -> tuple[Path, Trajectory]:
    """Run `run_id`'s trajectory file in `folder` and what it recorded (a half-written last
    line left out: the process died writing it).

    :raises UserError: no folder, no such run, or a file that is not a trajectory
    """
    path = find_trajectory(folder, run_id) if folder is not None else None
    if path is None:
        where = f"in {folder}" if folder is not None else "(no trajectory_dir is set)"
        msg = f"no run {run_id!r} to resume {where}"
        raise UserError(msg)
    try:
        return path, Trajectory.read(path, torn=True)
    except ValueError as exc:
        raise UserError(str(exc)) from None


class RecordedAnswers:
    """A recording's model answers, handed out per purpose (`turn`, `classify`, …) in order."""

    def __init__(self, trajectory: Trajectory) -> None:
        self.left: dict[str, deque[ScriptedTurn]] = {}
        for e in trajectory.events:
            if isinstance(e, ModelResponseEvent):
                turn = ScriptedTurn(
                    text=e.text,
                    reasoning=e.reasoning,
                    tool_calls=e.tool_calls,
                    usage=e.usage,
                    tool_confidence=e.tool_confidence,
                    tools_withheld=e.tools_withheld,
                )
                self.left.setdefault(e.purpose, deque()).append(turn)
        self.recorded = {purpose: len(turns) for purpose, turns in self.left.items()}
        self.used = 0

    def take(self, purpose: str) -> ScriptedTurn | None:
        """The next recorded answer for `purpose`; None when the recording has no more."""
        left = self.left.get(purpose)
        if not left:
            return None
        self.used += 1
        return left.popleft()


@dataclass(slots=True)
class _RecordedCall:
    call_id: str
    name: str
    arguments: dict[str, Any]
    result: ToolFinishedEvent
    used: bool = False


class RecordedResults:
    """A recording's executed calls (not those answered from the run's cache), each handed out
    once: for a call, the first unused one of the same tool with the same arguments (as the
    tool validates them), the one with the same call id first.

    :param completed_only: leave out calls that were cancelled (they did not finish)
    """

    def __init__(self, trajectory: Trajectory, *, completed_only: bool = False) -> None:
        results = {
            e.call_id: e
            for e in trajectory.events
            if isinstance(e, ToolFinishedEvent)
            and not e.cached
            and not (completed_only and e.status == "cancelled")
        }
        self.calls = [
            _RecordedCall(e.call_id, e.name, e.arguments, results[e.call_id])
            for e in trajectory.events
            if isinstance(e, ToolCallEvent) and e.call_id in results
        ]

    def find(
        self, tool: Tool, call_id: str, arguments: Mapping[str, Any]
    ) -> ToolFinishedEvent | None:
        """Take the recorded result for this call, or None when there is none (left)."""
        wanted = tool.args_model.model_validate(dict(arguments)).model_dump(mode="json")
        matches = [c for c in self.calls if not c.used and c.name == tool.name]
        matches = [c for c in matches if _validated(tool, c.arguments) == wanted]
        if not matches:
            return None
        chosen = next((c for c in matches if c.call_id == call_id), matches[0])
        chosen.used = True
        return chosen.result


def _validated(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """Recorded arguments as today's tool would receive them; None if it would refuse them."""
    try:
        return tool.args_model.model_validate(arguments).model_dump(mode="json")
    except ValidationError:
        return None


def recorded_outcome(result: ToolFinishedEvent) -> Any:
    """What a recorded result makes of the call: its output returned, its failure raised as
    the executor reads it (a `TimeoutError` is the call's timeout, in the usual words).

    :raises ToolError: the recorded call failed, or was cancelled
    :raises TimeoutError: it timed out
    """
    if result.status == "ok":
        return result.output
    if result.status == "timeout":
        raise TimeoutError
    if result.status == "cancelled":
        msg = "replay: the recorded call was cancelled; the recording has no result for it"
        raise ToolError(msg)
    raise ToolError(result.error or "")


class ResumingModel:
    """The live model, behind the recorded answers: each call takes the recording's next
    answer of its purpose while there is one; the first call past the recording calls
    `on_live` (once), then asks the live model."""

    def __init__(self, live: Model, answers: RecordedAnswers, on_live: Callable[[], None]) -> None:
        self.live = live
        self.answers = answers
        self.on_live = on_live
        self._live_yet = False
        self._replaying = False

    @property
    def name(self) -> str:
        return self.live.name

    @property
    def native_tools(self) -> bool:
        return self.live.native_tools

    @property
    def starts_in_reasoning(self) -> bool:
        # A recorded answer holds the `<think>` its prompt opened (`ModelResponseEvent.text`):
        # read while it streams, the live model's word would open the block twice.
        return not self._replaying and bool(getattr(self.live, "starts_in_reasoning", False))

    def __getattr__(self, name: str) -> Any:
        # The optional attributes a backend may have (`final_result_tool`,
        # `starts_in_reasoning`, …) are the live model's.
        return getattr(self.live, name)

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        turn = self.answers.take(request.purpose)
        self._replaying = turn is not None
        if turn is not None:
            return ScriptedModel([turn], name=self.live.name).stream(request)
        if not self._live_yet:
            self._live_yet = True
            self.on_live()
        return self.live.stream(request)


class ResumingTools:
    """A `ToolRunner` that answers a call from the recording when it has its result, and runs
    it (with `live`) otherwise."""

    def __init__(self, results: RecordedResults, live: ToolRunner) -> None:
        self.results = results
        self.live = live
        self.reused = 0

    async def __call__(self, tool: Tool, arguments: dict[str, Any], context: ToolContext) -> Any:
        result = self.results.find(tool, context.call_id, arguments)
        if result is None:
            return await self.live(tool, arguments, context)
        self.reused += 1
        return recorded_outcome(result)


def set_aside_name(path: Path) -> Path:
    """Where the earlier attempt of the run at `path` is kept: `<run_id>~<n>.jsonl`, the first
    free `n` (`~` is not a run id's character, so the name is no run's)."""
    n = 1
    while (aside := path.with_name(f"{path.stem}~{n}{path.suffix}")).exists():
        n += 1
    return aside


@dataclass(slots=True)
class Resumption:
    """What one resumed attempt takes from the earlier one, and how it reports catching up."""

    path: Path
    """The run's trajectory: the earlier attempt's until `set_aside`, then the new one's."""
    recording: Trajectory
    decisions: dict[str, Decision]
    """Every decision the run is resumed with: earlier resumes' and this one's."""
    answers: RecordedAnswers
    tools: ResumingTools
    previous: Path = field(init=False)
    inode: int = field(init=False)
    ctx: RunContext | None = None
    _aside: bool = False
    _reported: bool = False

    def __post_init__(self) -> None:
        self.previous = set_aside_name(self.path)
        self.inode = self.path.stat().st_ino
        """Which file this resume read: a later resume of the run writes a new one."""

    def set_aside(self) -> None:
        """Keep the earlier attempt's file beside the new one, renamed.

        :raises UserError: the file is no longer the one this resume read (another resume of
            the run came first) or cannot be renamed; the run ends `error`, and nothing is
            written into the file
        """
        try:
            if self.path.stat().st_ino != self.inode:
                msg = "another resume of the run came first"
                raise OSError(msg)
            self.path.rename(self.previous)
        except OSError as exc:
            if self.ctx is not None:
                self.ctx.writer.detach()
            msg = f"the earlier attempt cannot be set aside, so the run is not resumed: {exc}"
            raise UserError(msg) from None
        self._aside = True

    def caught_up(self) -> None:
        """The recording has run out: say so in the run (once)."""
        if self._reported or not self._aside or self.ctx is None:
            return
        self._reported = True
        self.ctx.emit(
            RunResumedEvent,
            previous=self.previous.name,
            replayed_turns=self.answers.used,
            reused_results=self.tools.reused,
            decisions=self.decisions,
        )


def check_resumable(
    run_id: str,
    recording: Trajectory,
    decisions: Mapping[str, Decision],
    tools: Mapping[str, Tool],
) -> dict[str, Decision]:
    """The decisions the resumed run goes on with, those of earlier resumes included.

    :raises UserError: the run finished (other than `needs_approval`); it awaits approval and
        no decision is given; a decision names a call that is not pending; edited arguments
        do not fit the tool's schema
    """
    end = recording.finished
    if end is not None and end.status != "needs_approval":
        msg = f"run {run_id} finished ({end.status}): there is nothing to resume"
        raise UserError(msg)
    pending = _pending(recording) if end is not None else {}
    if pending and not decisions:
        msg = f"run {run_id} awaits approval of {_listed(pending)}: give a decision for each"
        raise UserError(msg)
    for call_id, decision in decisions.items():
        call = pending.get(call_id)
        if call is None:
            waiting = f"pending: {_listed(pending)}" if pending else "no call is pending"
            msg = f"run {run_id} has no call {call_id!r} awaiting approval ({waiting})"
            raise UserError(msg)
        if isinstance(decision, Approve) and decision.arguments is not None:
            _check_edit(call, decision.arguments, tools)
    earlier = next(
        (e.decisions for e in reversed(recording.events) if isinstance(e, RunResumedEvent)), {}
    )
    return {**earlier, **decisions}


def _pending(recording: Trajectory) -> dict[str, PendingCall]:
    asked = next(
        (e for e in reversed(recording.events) if isinstance(e, ApprovalRequestedEvent)), None
    )
    return {c.call_id: c for c in asked.calls} if asked is not None else {}


def _listed(pending: Mapping[str, PendingCall]) -> str:
    return ", ".join(
        f"{c.call_id} ({c.tool} {json.dumps(c.arguments, ensure_ascii=False)})"
        for c in pending.values()
    )


def _check_edit(call: PendingCall, arguments: Mapping[str, Any], tools: Mapping[str, Tool]) -> None:
    if call.node is not None:
        msg = (
            f"call {call.call_id} is node {call.node} of a plan, which is approved or rejected "
            "as a whole: reject it with a reason to have the model plan again"
        )
        raise UserError(msg)
    tool = tools.get(call.tool)
    if tool is None:
        msg = f"call {call.call_id}: tool {call.tool!r} is not one of this agent's"
        raise UserError(msg)
    try:
        tool.args_model.model_validate(dict(arguments))
    except ValidationError as exc:
        problems = describe_errors(exc, root="arguments")
        msg = f"call {call.call_id}: the edited arguments do not fit {tool.name}: {problems}"
        raise UserError(msg) from None
