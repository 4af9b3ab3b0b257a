"""Internal. The engine's own tools: in every workspace, needing no metadata.

- `finish` ends the run with its answer; every run offers it.
- `ask_user` ends the run with a clarifying question (status `needs_input`); the session's next
  run takes the reply. Offered to `react` runs whose strategy lists it.
- `llm_generate` asks the model for text or JSON about some context; `vm` runs offer it (the
  StackVM programs lean on it), and so does any strategy that lists it.
"""

from __future__ import annotations

import functools
import json
from typing import Literal

from pydantic import JsonValue

from agentrt.exceptions import ToolError
from agentrt.models.base import Message, ModelRequest
from agentrt.parsing.answers import JSONProblem, find_json
from agentrt.tool import Tool, ToolContext

__all__ = ["BUILTINS", "builtin_tools"]

BUILTINS = ("finish", "ask_user", "llm_generate")


def finish(answer: str) -> str:
    """Give the final answer to the user and end the run.

    Args:
        answer: The complete answer, in the user's language.
    """
    return answer


def ask_user(question: str) -> str:
    """Ask the user a clarifying question and wait for the reply, when the request is ambiguous
    or misses something only the user knows. Ask one short question; do not guess instead.

    Args:
        question: The question, in the user's language.
    """
    return question


async def llm_generate(
    ctx: ToolContext,
    prompt: str,
    context: JsonValue = None,
    response_format: Literal["text", "json"] = "text",
) -> JsonValue:
    """Ask the language model: write, summarise, extract or judge, from the given context.

    Args:
        prompt: What to do, in full sentences (say which keys a JSON answer must have).
        context: The material to work from (text, or any JSON value such as a tool's result).
        response_format: "json" for a JSON object, "text" for prose.
    """
    content = prompt
    if context is not None:
        material = context if isinstance(context, str) else json.dumps(context, ensure_ascii=False)
        content = f"{prompt}\n\nContext:\n{material}"
    as_json = response_format == "json"
    request = ModelRequest(
        messages=[Message(role="user", content=content)],
        json_schema={"type": "object"} if as_json else None,
        purpose="llm_generate",
    )
    text = await ctx.complete(request)
    if not as_json:
        return text
    try:
        value: JsonValue = find_json(text, object_only=True)
    except JSONProblem:
        msg = f"the model's answer is not the JSON asked for: {text[:200]!r}"
        raise ToolError(msg) from None
    return value


@functools.cache
def builtin_tools() -> dict[str, Tool]:
    """The built-in tools, built on first use."""
    return {
        # Not cached: a refused finish (the react planner's early-finish guard) may be repeated.
        "finish": Tool(finish, ends_run=True, cache=False),
        # Not cached either: the same question may be refused early, then asked again.
        "ask_user": Tool(ask_user, asks_user=True, cache=False),
        "llm_generate": Tool(llm_generate),
    }
