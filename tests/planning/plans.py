"""Builders for scripted plans (tests/planning)."""

from __future__ import annotations

import json
from typing import Any


def node(id: str, tool: str, depends_on: list[str] | None = None, **args: Any) -> dict[str, Any]:
    return {"id": id, "tool": tool, "args": args, "depends_on": depends_on or []}


def plan(*nodes: dict[str, Any], text: str = "") -> str:
    """A plan as a schema-bound model writes it."""
    return json.dumps({"plan": text, "nodes": list(nodes)})


def finish(answer: str) -> str:
    """The joiner's answer when the results are enough."""
    return json.dumps({"reason": "the results answer it", "action": "finish", "answer": answer})


def replan(reason: str) -> str:
    return json.dumps({"reason": reason, "action": "replan", "answer": ""})
