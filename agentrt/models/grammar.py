"""Internal. A llama.cpp grammar for a react turn: free text, or tool calls that fit the offered
tools' schemas.

A constrained turn is either an answer — text that does not start like a call — or one or more
calls, each a JSON object naming an offered tool with arguments its schema accepts, inside a
`<tool_call>` block (the form Qwen's chat template shows the embedded model) or bare (the form
the 0.5B writes first: forbidding it made the model answer in prose instead of calling). So a
call is never invalid: the grammar leaves no way to write an unknown tool, a missing argument
or broken JSON. Text that merely mentions a call later on is still text to the grammar, and
the parser reads it as always.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from agentrt.models.base import ToolDefinition, for_llama_grammar

__all__ = ["answer_grammar", "next_call_grammar", "tool_turn_grammar"]

_TURN = r"""
root ::= [ \n]* (calls | answer)
"""
"""The turn's shape. An answer may not open like a call (`<`, `{`, `[`, a fence): those go
through `calls`, where the schemas hold."""
_ANSWER = r"""
answer ::= [^<{\[`\n \t] [^\x00]*
"""
"""An answer: text that does not open like a call."""
_CALLS_ONLY = r"""
root ::= [ \n]* calls
"""
"""A turn that must call (`ModelRequest.must_call`): no answer in text."""
_NEXT_CALL = r"""
root ::= call-object "\n</tool_call>"
"""
"""One more call, its `<tool_call>` tag already written (`LocalModel.probe_calls`)."""
_CALLS = r"""
calls ::= call ([ \n]* call)*
call ::= "<tool_call>\n" call-object "\n</tool_call>" | call-object
"""


def tool_turn_grammar(tools: list[ToolDefinition], *, answer: bool = True) -> str:
    """The GBNF text of a turn that answers (unless `answer` is False), or calls some of
    `tools` with valid arguments."""
    head = _TURN + _ANSWER if answer else _CALLS_ONLY
    return head.strip() + _CALLS + _call_object(tuple(t.model_dump_json() for t in tools))


def answer_grammar() -> str:
    """The GBNF text of a turn that must answer in text (`ModelRequest.answer_only`): nothing
    that opens like a call."""
    return "root ::= [ \\n]* answer" + _ANSWER


def next_call_grammar(tools: list[ToolDefinition]) -> str:
    """The GBNF text of one call of `tools` after an open `<tool_call>` tag, and its close."""
    return _NEXT_CALL.strip() + "\n" + _call_object(tuple(t.model_dump_json() for t in tools))


@functools.lru_cache(maxsize=32)
def _call_object(tools: tuple[str, ...]) -> str:
    """The rules of `call-object`: a JSON object naming one of `tools` with its arguments."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    alternatives: list[dict[str, Any]] = []
    for text in tools:
        tool = json.loads(text)
        alternatives.append(
            {
                "type": "object",
                "properties": {
                    "name": {"const": tool["name"]},
                    "arguments": for_llama_grammar(tool["parameters"]),
                },
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    schema = json.dumps({"anyOf": alternatives})
    object_rules = json_schema_to_gbnf(schema, ["name", "arguments"])
    # The converter names its start `root`; here it is one call's object.
    return re.sub(r"^root ::=", "call-object ::=", object_rules, flags=re.MULTILINE)
