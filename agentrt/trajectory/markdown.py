"""Internal. A trajectory as Markdown, for people: `agentrt show`, and `Trajectory.to_markdown`."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentrt.events import (
    ApprovalRequestedEvent,
    ClassifiedEvent,
    Event,
    ReasoningDeltaEvent,
    RunResumedEvent,
    StrategySelectedEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolCallInvalidEvent,
    ToolFinishedEvent,
    TurnStartedEvent,
)

if TYPE_CHECKING:
    from agentrt.trajectory.format import Trajectory

__all__ = ["render_markdown"]


def render_markdown(trajectory: Trajectory) -> str:
    """A readable account of the run: steps, reasoning (quoted), visible text, tool calls,
    answer."""
    h = trajectory.header
    out = [f"# Run {h.run_id}", "", f"**Query:** {h.query}", ""]
    end = trajectory.finished
    status = (
        f"{end.status} | {end.steps} | {end.usage.total_tokens} | {end.timings.total:.2f}"
        if end
        else "unfinished | - | - | -"
    )
    out += [
        "| model | strategy | status | steps | tokens | seconds |",
        "|---|---|---|---|---|---|",
        f"| {h.model} | {h.strategy or '-'} | {status} |",
        "",
    ]
    out += _body(trajectory.events)
    if end is not None:
        heading = {
            "needs_input": "## Question to the user",
            "needs_approval": "## Waiting for approval",
        }.get(end.status, "## Answer")
        out += ["", heading, "", end.answer or f"(none: {end.error or end.status})"]
        calls = Counter(e.name for e in trajectory.events if isinstance(e, ToolCallEvent))
        if calls:
            out += ["", "Tool calls: " + ", ".join(f"{n} × {c}" for n, c in calls.items())]
    return "\n".join(out) + "\n"


def _body(events: Sequence[Event]) -> list[str]:
    """Steps and what happened in them; the text streamed between two other events joined
    into one paragraph, and reasoning quoted."""
    out: list[str] = []
    for kind, group in itertools.groupby(events, key=_streamed):
        if kind is None:
            out += (line for e in group for line in _describe(e))
            continue
        text = "".join(e.text for e in group if isinstance(e, _DELTAS)).strip()
        if text and kind == "reasoning_delta":
            out += ["", "> *Reasoning*", ">", *(f"> {line}".rstrip() for line in text.splitlines())]
            out.append("")
        elif text:
            out += ["", text, ""]
    return out


_DELTAS = (TextDeltaEvent, ReasoningDeltaEvent)


def _streamed(e: Event) -> str | None:
    return e.type if isinstance(e, _DELTAS) else None


def _describe(e: Event) -> list[str]:
    if isinstance(e, ClassifiedEvent):
        note = f" ({e.method}: {e.reason})" if e.reason else f" ({e.method})"
        return [f"Classified as **{e.query_type}**{note}."]
    if isinstance(e, StrategySelectedEvent):
        return [f"Strategy **{e.strategy}**: planner `{e.planner}`, budget {e.step_budget}."]
    if isinstance(e, TurnStartedEvent):
        return ["", f"## Step {e.step}", ""]
    if isinstance(e, ToolCallEvent):
        return [f"- call `{e.call_id}` **{e.name}** `{_compact(e.arguments)}`"]
    if isinstance(e, ToolCallInvalidEvent):
        return [f"- invalid call `{e.call_id}`: {e.reason}"]
    if isinstance(e, ApprovalRequestedEvent):
        pending = ", ".join(f"`{c.call_id}` **{c.tool}**" for c in e.calls)
        return ["", f"Waiting for approval: {pending}."]
    if isinstance(e, RunResumedEvent):
        return [
            "",
            f"Resumed from `{e.previous}`: {e.replayed_turns} model turns replayed, "
            f"{e.reused_results} tool results reused; live from here.",
        ]
    if isinstance(e, ToolFinishedEvent):
        result = e.error if e.status != "ok" else _compact(e.output)
        cached = ", from cache" if e.cached else ""
        return [f"  - `{e.call_id}` {e.status} in {e.duration:.3f} s{cached}: {result}"]
    return []


def _compact(value: object, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more chars)"
