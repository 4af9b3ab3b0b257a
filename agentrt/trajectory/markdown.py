"""Internal. A trajectory as Markdown, for people: `agentrt show`, and `Trajectory.to_markdown`."""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING

from agentrt.events import (
    ClassifiedEvent,
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
    """A readable account of the run: steps, visible text, tool calls, answer."""
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
    text: list[str] = []

    def flush_text() -> None:
        if "".join(text).strip():
            out.extend(["", "".join(text).strip(), ""])
        text.clear()

    for e in trajectory.events:
        if isinstance(e, TextDeltaEvent):
            text.append(e.text)
            continue
        flush_text()
        if isinstance(e, ClassifiedEvent):
            note = f" ({e.method}: {e.reason})" if e.reason else f" ({e.method})"
            out.append(f"Classified as **{e.query_type}**{note}.")
        elif isinstance(e, StrategySelectedEvent):
            out.append(f"Strategy **{e.strategy}**: planner `{e.planner}`, budget {e.step_budget}.")
        elif isinstance(e, TurnStartedEvent):
            out += ["", f"## Step {e.step}", ""]
        elif isinstance(e, ToolCallEvent):
            out.append(f"- call `{e.call_id}` **{e.name}** `{_compact(e.arguments)}`")
        elif isinstance(e, ToolCallInvalidEvent):
            out.append(f"- invalid call `{e.call_id}`: {e.reason}")
        elif isinstance(e, ToolFinishedEvent):
            result = e.error if e.status != "ok" else _compact(e.output)
            cached = ", from cache" if e.cached else ""
            out.append(f"  - `{e.call_id}` {e.status} in {e.duration:.3f} s{cached}: {result}")
    flush_text()
    if end is not None:
        heading = "## Question to the user" if end.status == "needs_input" else "## Answer"
        out += ["", heading, "", end.answer or f"(none: {end.error or end.status})"]
        calls = Counter(e.name for e in trajectory.events if isinstance(e, ToolCallEvent))
        if calls:
            out += ["", "Tool calls: " + ", ".join(f"{n} × {c}" for n, c in calls.items())]
    return "\n".join(out) + "\n"


def _compact(value: object, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more chars)"
