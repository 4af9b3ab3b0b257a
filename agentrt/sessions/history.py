"""Internal. The memory manager: which of a session's earlier turns a run sees, within a token
budget.

A history within the budget is shown whole. A longer one: the latest turns whole, newest first
while they fit in three quarters of the budget; the older ones summarised in one system message
in the rest, a line per turn (the question and the start of the answer), the oldest lines
dropped if even those do not fit. It is deterministic and needs no model call, so
a run over a long session costs the same and replays the same.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from agentrt.models.base import Message

__all__ = ["SUMMARY_HEADING", "estimate_tokens", "fit_history"]

SUMMARY_HEADING = "Earlier in this conversation (summarised, oldest first):"

_WHOLE_SHARE = 0.75
"""Of a budget the history overflows, the part for whole turns; the rest is the summary's."""

_LINE_CHARS = 100
"""A summarised question or answer is cut to this many characters."""


def estimate_tokens(text: str) -> int:
    """About how many tokens `text` is: a quarter of its characters, the usual ratio for
    English with BPE tokenizers (no one tokenizer serves every model a run may use)."""
    return math.ceil(len(text) / 4)


def fit_history(messages: Sequence[Message], budget: int) -> list[Message]:
    """The part of a session's `messages` a run is shown, within about `budget` tokens."""
    if sum(estimate_tokens(m.content) for m in messages) <= budget:
        return list(messages)
    turns = _turns(messages)
    kept: list[list[Message]] = []
    spent = 0
    for turn in reversed(turns):
        cost = sum(estimate_tokens(m.content) for m in turn)
        if spent + cost > budget * _WHOLE_SHARE:
            break
        kept.insert(0, turn)
        spent += cost
    older = turns[: len(turns) - len(kept)]
    recent = [m for turn in kept for m in turn]
    lines = [_summary_line(turn) for turn in older]
    left = budget - spent
    while lines and estimate_tokens(_summary(lines, len(older))) > left:
        lines.pop(0)
    if not lines:
        return recent
    return [Message(role="system", content=_summary(lines, len(older))), *recent]


def _turns(messages: Sequence[Message]) -> list[list[Message]]:
    """`messages` cut into turns, each starting at a user message."""
    turns: list[list[Message]] = []
    for message in messages:
        if message.role == "user" or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def _summary_line(turn: list[Message]) -> str:
    asked = " ".join(_cut(m.content) for m in turn if m.role == "user")
    answered = " ".join(_cut(m.content) for m in turn if m.role == "assistant")
    return f"- User: {asked} → Assistant: {answered or '(no answer)'}"


def _summary(lines: list[str], turns: int) -> str:
    omitted = turns - len(lines)
    note = [f"({omitted} earlier turns omitted)"] if omitted else []
    return "\n".join([SUMMARY_HEADING, *note, *lines])


def _cut(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _LINE_CHARS else flat[: _LINE_CHARS - 1] + "…"
