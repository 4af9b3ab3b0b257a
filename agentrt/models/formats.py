"""Internal. The tool-call format a model writes, chosen by its family; and whether its chat
template opens a ``<think>`` block in the prompt.

`AgentSettings.tool_format` names one, or is `auto`: then the model's family decides. A local
GGUF model is known by its chat template (what it was trained to write is what the template
shows), else by the name in its metadata; a server's model, by its name. The parser reads every
format whatever the choice: the choice only decides what the prompt asks for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, get_args

from agentrt.settings import ToolFormat

__all__ = [
    "MODEL_FAMILIES",
    "TEMPLATE_MARKERS",
    "TOOL_FORMATS",
    "ToolFormat",
    "format_for_metadata",
    "format_for_name",
    "format_in_template",
    "template_starts_in_reasoning",
]

TOOL_FORMATS: tuple[ToolFormat, ...] = get_args(ToolFormat)

MODEL_FAMILIES: dict[str, ToolFormat] = {
    "qwen3-coder": "qwen3_coder",
    "qwen3.5": "qwen3_coder",
    "qwen": "hermes",
    "hermes": "hermes",
    "llama-3": "llama",
    "llama3": "llama",
    "mistral": "mistral",
    "mixtral": "mistral",
    "devstral": "mistral",
    "magistral": "mistral",
    "ministral": "mistral",
    "deepseek": "deepseek",
    "glm-4": "glm4",
    "glm4": "glm4",
    "kimi": "kimi_k2",
    "minimax": "minimax",
    "gpt-oss": "harmony",
    "lfm2": "pythonic",
    "olmo": "pythonic",
}
"""A piece of a model's name (lower case, `_` and spaces read as `-`) → its family's format;
the first piece found wins, so more specific pieces come first. A name with none is `hermes`."""

TEMPLATE_MARKERS: dict[str, ToolFormat] = {
    "<parameter=": "qwen3_coder",
    "<arg_key>": "glm4",
    "<|tool_calls_section_begin|>": "kimi_k2",
    "<minimax:tool_call>": "minimax",
    "<｜tool▁calls▁begin｜>": "deepseek",
    "<tool_call>": "hermes",
    "[TOOL_CALLS]": "mistral",
    "<|channel|>": "harmony",
    "<|tool_call_start|>": "pythonic",
    "<|python_tag|>": "llama",
}
"""What a chat template shows of the calls it was trained on → their format; the first found
wins (GLM-4 and Qwen3-Coder wrap their own bodies in `<tool_call>`, so they come first)."""


def format_for_name(name: str) -> ToolFormat:
    """The format of the family `name` belongs to (`hermes` for a name of no known family)."""
    return _family(name) or "hermes"


def format_in_template(template: str) -> ToolFormat | None:
    """The format a chat template shows its model writing, if it shows one."""
    return next((f for marker, f in TEMPLATE_MARKERS.items() if marker in template), None)


def format_for_metadata(metadata: Mapping[str, Any]) -> ToolFormat:
    """The format of a GGUF model, from its metadata (llama-cpp's `Llama.metadata`): its chat
    template's, else its name's or architecture's family's, else `hermes`."""
    template = metadata.get("tokenizer.chat_template")
    if isinstance(template, str) and (found := format_in_template(template)) is not None:
        return found
    for key in ("general.name", "general.basename", "general.architecture"):
        value = metadata.get(key)
        if isinstance(value, str) and (family := _family(value)) is not None:
            return family
    return "hermes"


_ASKED = "\x00agentrt-question\x00"
"""A user message no template writes itself: what the template renders after it is the
generation prompt."""


def template_starts_in_reasoning(template: str) -> bool:
    """Whether a chat template's generation prompt ends inside an open ``<think>`` block
    (DeepSeek-R1's does, Qwen3's with thinking on), so the model's answer begins with its
    reasoning and only ``</think>`` arrives. The template is rendered as llama.cpp renders a
    GGUF's (a sandboxed jinja2, blocks trimmed); one that fails to render opens nothing."""
    # Imported here, as the workspace does: only the embedded model reads a chat template, and
    # jinja2 would cost every `import agentrt` ~15 ms, programs that never render one included.
    from jinja2 import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    try:
        prompt = env.from_string(template).render(
            messages=[{"role": "user", "content": _ASKED}],
            add_generation_prompt=True,
            bos_token="",
            eos_token="",
        )
    except Exception:  # a template is third-party code: any failure means it says nothing
        return False
    _, asked, generation = prompt.rpartition(_ASKED)
    return bool(asked) and generation.rfind("<think>") > generation.rfind("</think>")


def _family(name: str) -> ToolFormat | None:
    normal = re.sub(r"[\s_]+", "-", name.lower())
    return next((f for piece, f in MODEL_FAMILIES.items() if piece in normal), None)
