"""Internal. What every model backend speaks: messages in, a stream of chunks out."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal, Protocol, runtime_checkable

import pydantic.dataclasses
from pydantic import BaseModel, ConfigDict, Field

from agentrt.events import NativeToolCall, Usage

__all__ = [
    "TOOL_RESULTS_NUDGE",
    "Message",
    "Model",
    "ModelChunk",
    "ModelRequest",
    "ReasoningChunk",
    "TextChunk",
    "ToolCallChunk",
    "ToolConfidenceChunk",
    "ToolDefinition",
    "UsageChunk",
    "for_llama_grammar",
    "text_mode_messages",
]


# A validating dataclass rather than a BaseModel: a run holds every message of its conversation,
# and a BaseModel instance carries a per-instance set of the fields given (a 1 KB table once it
# has five) where a slotted dataclass carries nothing but its fields.
@pydantic.dataclasses.dataclass(frozen=True, slots=True, config=ConfigDict(defer_build=True))
class Message:
    """One message of a conversation, in the shape OpenAI-compatible servers take."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: tuple[NativeToolCall, ...] = ()
    """Native calls the assistant made in this message."""
    tool_call_id: str | None = None
    """For a `tool` message: the call it answers."""
    name: str | None = None
    """For a `tool` message: the tool that produced it."""
    arguments: str | None = None
    """For a `tool` message: the call's arguments (JSON), shown to models that take results as
    text so that each result is read against its call."""


class ToolDefinition(BaseModel):
    """A tool as a model sees it: name, description and a JSON schema of its arguments."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]


TOOL_RESULTS_NUDGE = (
    "Answer the user's question now, in plain text, using these results; call another tool "
    "only if something is still missing."
)


class ModelRequest(BaseModel):
    """One model call."""

    model_config = ConfigDict(defer_build=True)

    messages: list[Message]
    tools: list[ToolDefinition] = Field(default_factory=list)
    """Tools offered for native tool calling; backends that prompt in text ignore them."""
    json_schema: dict[str, Any] | None = None
    """When set, the answer must be one JSON value matching this schema."""
    constrain_tools: Literal["auto", "on", "off"] = "auto"
    """With `tools`: whether a backend that can (the embedded model) constrains the answer to
    text or valid calls of them (`AgentSettings.constrain_tools`); `auto` leaves it to the
    backend. Others ignore it."""
    weigh_tools: bool = False
    """With `tools`: the caller takes a `ToolConfidenceChunk` that withholds them (it then asks
    again without them), so a backend that can measure how sure its model is that one serves
    the message (the embedded model) may. Callers that cannot leave it False."""
    answer_tools: list[str] = Field(default_factory=list)
    """With `weigh_tools`: the tools whose call is the answer (`finish`, a typed output's
    tool), not a use of a tool, left out of the measure."""
    must_call: list[str] = Field(default_factory=list)
    """With `tools`: the answer must be a call of one of these (of `tools`), where the backend
    can hold it to that: the embedded model by grammar (unless `constrain_tools` is `off`), a
    server with native tools by `tool_choice` (the one tool, or `required` for several). A
    text-mode server is only told so by the conversation."""
    answer_only: bool = False
    """The answer must be text, not a call (a react turn asked for its answer after a loop),
    where the backend can hold it to that: the embedded model by grammar (unless
    `constrain_tools` is `off`). Offered no tools, the 1.5B copilot still wrote its query
    again as a call in such a turn, each time until its budget ran out (issue 24)."""
    purpose: str = "turn"
    """What the call is for (`turn`, `classify`, …); backends may tune sampling by it."""
    retry: int = 0
    """How many answers to this request were found wrong before (a plan sent back for repair):
    a backend that samples greedily varies its sampling with it, so that a repair is not the
    failed answer again (the embedded model's were byte-identical in 8 of 12, issue 24)."""
    max_tokens: int | None = None
    results_nudge: str = TOOL_RESULTS_NUDGE
    """What a backend that gives the model tool results as text appends to them (see
    `text_mode_messages`); a strategy may set its own."""


class TextChunk(BaseModel):
    model_config = ConfigDict(defer_build=True)

    kind: Literal["text"] = "text"
    text: str


class ReasoningChunk(BaseModel):
    """Reasoning a server sends apart from the answer's text (`delta.reasoning_content`, or
    `delta.reasoning`, from vLLM, SGLang, llama.cpp, DeepSeek): streamed as `reasoning_delta`
    events, never part of the answer."""

    model_config = ConfigDict(defer_build=True)

    kind: Literal["reasoning"] = "reasoning"
    text: str


class ToolCallChunk(BaseModel):
    """A piece of a native tool call; pieces of one call share `index`."""

    model_config = ConfigDict(defer_build=True)

    kind: Literal["tool_call"] = "tool_call"
    index: int
    id: str | None = None
    name: str | None = None
    arguments: str | None = None


class ToolConfidenceChunk(BaseModel):
    """How sure the model is that one of the offered tools serves the message, measured before
    it wrote (the embedded model: `LocalModel.min_tool_confidence`). Sent before the answer;
    when `withheld`, it is the answer: the caller asks again without the tools (`react` offers
    only those that answer, and says that no tool fits)."""

    model_config = ConfigDict(defer_build=True)

    kind: Literal["tool_confidence"] = "tool_confidence"
    confidence: float
    """The probability of the likeliest offered tool's name at the start of a call; below the
    threshold, a bound (the search stops there)."""
    withheld: bool
    """It was below the model's threshold: nothing was written."""


class UsageChunk(BaseModel):
    model_config = ConfigDict(defer_build=True)

    kind: Literal["usage"] = "usage"
    usage: Usage


ModelChunk = TextChunk | ReasoningChunk | ToolCallChunk | ToolConfidenceChunk | UsageChunk


@runtime_checkable
class Model(Protocol):
    """A language model that streams its answer.

    `stream` raises `ModelError` (or a subclass) when the call fails; a partial stream that
    ends with an exception is discarded by the caller.

    A backend may also say `final_result_tool = True` (read with `getattr`, default False):
    its model gives a typed output well as a native tool call (`agentrt.output`), so it needs
    no extra, schema-bound final step. Leave it False where calls are written as text or a
    server's tool-call parsing is unreliable (the embedded model, llama.cpp, vLLM): the
    schema-bound step is valid by construction.

    A backend may also say `starts_in_reasoning = True` (read with `getattr`, default False,
    once its answer's first text arrives, so a backend may learn it while loading): its
    prompt ends inside an open ``<think>`` block (DeepSeek-R1's chat template, Qwen3's with
    thinking on), so the answer begins with reasoning and only the closing ``</think>``
    arrives. A server that sends the reasoning apart (`ReasoningChunk`) has split it already:
    once one of those came first, the text is read as content regardless.

    A backend may also have `async def detect_tool_format() -> ToolFormat` (read with
    `getattr`): the tool-call format its model's family writes, when the backend knows better
    than its name does (the embedded model reads its chat template). Without it, the model's
    name decides (`agentrt.models.formats.format_for_name`).

    A backend may also say `calls_in_text = True` (read with `getattr`, default False): though
    it shows the model the tools itself (`native_tools`), the model writes its calls as text in
    its family's format, which agentrt reads (the embedded model). The react prompt then shows
    one reply of several calls in that format, where `prompts/tool_formats/several/` has one: a
    0.5B model otherwise wrote one call for several things asked, or packed them into one
    argument. A server that parses the calls itself leaves it False: its model is shown no
    text form of a call.
    """

    @property
    def name(self) -> str: ...

    @property
    def native_tools(self) -> bool:
        """True: the backend shows the model `request.tools` itself (as native tools, or
        through the model's own chat template), so the prompt need not describe them. False:
        the prompt describes the tools and how to write a call. Either way, calls written in
        the text are parsed and run."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]: ...


def text_mode_messages(messages: list[Message], nudge: str = TOOL_RESULTS_NUDGE) -> list[Message]:
    """The conversation as a model without native tool calling should see it.

    Each run of `tool` messages becomes one `user` message listing the results by call and
    ending with `nudge` (what to do next): chat templates of small models handle a `tool` role
    badly or not at all, and a 0.5B model takes the next turn well only when told plainly what
    to do with the results.
    """
    out: list[Message] = []
    results: list[str] = []
    for message in [*messages, None]:
        if message is not None and message.role == "tool":
            results.append(f"- {message.name} {message.arguments or ''} → {message.content}")
            continue
        if results:
            body = "Results of your tool calls:\n" + "\n".join(results) + "\n\n" + nudge
            out.append(Message(role="user", content=body))
            results = []
        if message is not None:
            out.append(message)
    return out


_ANY_JSON = ["string", "number", "boolean", "null", "array", "object"]
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMAS = frozenset({"items", "additionalProperties", "not", "contains"})
_TYPING = frozenset(
    {"type", "enum", "const", "$ref", "properties", "items", "pattern", *_SCHEMA_LISTS}
)
"""Keys that say what a schema's values are: a schema with none of them (`{}`, or only a
description and a default) holds any value."""


def for_llama_grammar(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with every sub-schema that holds any JSON value (as pydantic writes `JsonValue`:
    `{}`, or only a description and a default) spelled out as a union of every JSON type.

    llama.cpp's schema-to-grammar converter reads an empty schema as "an object" (a field
    meant to hold any value would be forced into `{"value": {}}` shapes), and fails on one
    with only annotations (`Unrecognized schema`: the `vm` planner's `llm_generate` made every
    react fallback of a `vm` run end `error`).
    """
    if not _TYPING.intersection(schema):
        return {**schema, "type": list(_ANY_JSON)}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: for_llama_grammar(v) for name, v in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [for_llama_grammar(v) for v in value]
        elif key in _SCHEMAS and isinstance(value, dict):
            out[key] = for_llama_grammar(value)
        else:
            out[key] = value
    return out
