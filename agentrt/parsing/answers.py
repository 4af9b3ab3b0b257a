"""Internal. The JSON value in a model's whole answer, which small models fence or wrap in prose.

Every planner step that asks for one JSON answer (a plan, a program, a verdict, a
classification) reads it through `find_json`, so a fenced or chatty answer is read the same
way wherever it is asked for.
"""

from __future__ import annotations

from typing import Any

from agentrt.parsing._jsonscan import JSONProblem, loads

__all__ = ["JSONProblem", "find_json"]


def find_json(text: str, *, object_only: bool = False) -> Any:
    """The JSON value in `text`.

    :param object_only: the answer must be an object: read the outermost `{…}`, whatever
        surrounds it. Otherwise the whole text (unfenced) is read first, then the span from the
        first `{` or `[` to the last `}` or `]`.
    :raises JSONProblem: no such span parses as JSON
    """
    text = _unfenced(text.strip())
    if object_only:
        return loads(_span(text, "{", "}") or text)
    try:
        return loads(text)
    except JSONProblem:
        span = _span(text, "{[", "}]")
        if span is None:
            raise
        return loads(span)


def _unfenced(text: str) -> str:
    if not text.startswith("```"):
        return text
    body = text.split("\n", 1)[1] if "\n" in text else ""
    return body.rsplit("```", 1)[0]


def _span(text: str, opens: str, closes: str) -> str | None:
    """From the first of `opens` to the last of `closes`, or None when there is no such span."""
    start = min((i for i in (text.find(c) for c in opens) if i >= 0), default=-1)
    end = max(text.rfind(c) for c in closes)
    return text[start : end + 1] if 0 <= start < end else None
