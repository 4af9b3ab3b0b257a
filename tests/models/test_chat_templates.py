"""Each bundled model's own chat template agrees with agentrt: the format `auto` picks for it is
the one the template shows, and the call the template writes is read back as a call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentrt.models.formats import format_for_metadata, template_starts_in_reasoning
from agentrt.parsing import CallPiece, ToolCallParser

# The tags each format's calls are written between in a rendered conversation (the formats
# the bundled models use; a new bundled model adds its own).
CALL_TAGS = {"hermes": ("<tool_call>", "</tool_call>")}

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}


def _metadata(path: Path) -> dict[str, Any]:
    """The GGUF's metadata, read with only its vocabulary loaded (no weights)."""
    from llama_cpp import Llama

    llama = Llama(model_path=str(path), vocab_only=True, verbose=False)
    return dict(llama.metadata)


def _render(template: str) -> str:
    """A conversation with a tool and one call to it, rendered as the model would see it."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    call = {"name": "get_weather", "arguments": {"city": "Lyon", "days": 2}}
    messages = [
        {"role": "user", "content": "Weather in Lyon for two days?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "type": "function", "function": call}],
        },
        {"role": "tool", "content": "sunny", "tool_call_id": "c1", "name": "get_weather"},
    ]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template).render(
        messages=messages, tools=[WEATHER], add_generation_prompt=True
    )


def test_the_small_models_template_and_the_parser_agree(small_model_path: Path) -> None:
    """Qwen2.5: `auto` picks hermes, and the `<tool_call>` it renders parses as the call."""
    metadata = _metadata(small_model_path)
    chosen = format_for_metadata(metadata)
    assert chosen == "hermes"
    rendered = _render(metadata["tokenizer.chat_template"])
    # The preamble shows the form with placeholders; the assistant's turn shows a real call.
    turn = rendered.split("<|im_start|>assistant\n", 1)[1].split("<|im_end|>", 1)[0]
    start, end = CALL_TAGS[chosen]
    written = turn[turn.index(start) : turn.index(end) + len(end)]
    parser = ToolCallParser()
    pieces = [*parser.feed(written), *parser.close()]
    calls = [p for p in pieces if isinstance(p, CallPiece)]
    assert [(c.name, c.arguments) for c in calls] == [
        ("get_weather", {"city": "Lyon", "days": 2})
    ], json.dumps(written)


def test_the_small_models_template_opens_no_think(small_model_path: Path) -> None:
    """Qwen2.5 does not reason: its generation prompt leaves no ``<think>`` open."""
    template = _metadata(small_model_path)["tokenizer.chat_template"]
    assert not template_starts_in_reasoning(template)
