"""Internal. A model that plays a script: for tests, benchmarks, replay and the offline demo."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Sequence

import anyio
from pydantic import BaseModel, ConfigDict, Field

from agentrt.events import NativeToolCall, Usage
from agentrt.exceptions import ModelError, ScriptExhausted
from agentrt.models.base import (
    ModelChunk,
    ModelRequest,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    ToolConfidenceChunk,
    UsageChunk,
)

__all__ = ["ScriptedModel", "ScriptedTurn"]

_TOKEN = re.compile(r"\s*\S+|\s+")


class ScriptedTurn(BaseModel):
    """One scripted answer: text, and optionally native tool calls."""

    model_config = ConfigDict(defer_build=True, arbitrary_types_allowed=True)

    text: str = ""
    reasoning: str = ""
    """Reasoning sent apart from the text (`ReasoningChunk`s, before the text), as servers
    with a reasoning parser send it."""
    tool_calls: list[NativeToolCall] = Field(default_factory=list)
    usage: Usage | None = None
    """Reported usage; when None, tokens are counted as whitespace-separated words."""
    error: ModelError | None = None
    """Raised once the text has been streamed: a server that breaks off mid-answer."""
    tool_confidence: float | None = None
    """Sent first when set (`ToolConfidenceChunk`), as the embedded model measures it."""
    tools_withheld: bool = False
    """With `tool_confidence`: below the model's threshold, so the turn is that alone."""


ScriptItem = str | ScriptedTurn | Callable[[ModelRequest], "str | ScriptedTurn"]


class ScriptedModel:
    """Plays its turns in order, one per model call, streaming word by word.

    A turn is a string, a `ScriptedTurn`, or a function of the request that returns either
    (to answer depending on what the model was sent, e.g. the tool results).

    :param turns: the answers, in call order; a call past the end raises `ScriptExhausted`
    :param token_delay: seconds to wait before each streamed token, to simulate a slow model
    :param name: the name the model reports
    :param native_tools: report native tool calling (the prompt then omits the text format)
    """

    __test__ = False  # not a pytest test class, despite living near tests

    def __init__(
        self,
        turns: Sequence[ScriptItem],
        *,
        token_delay: float = 0.0,
        name: str = "scripted",
        native_tools: bool = False,
    ) -> None:
        self._turns = list(turns)
        self._next = 0
        self.token_delay = token_delay
        self._name = name
        self.native_tools = native_tools
        """Whether tool definitions are expected natively; the script decides what it answers."""
        self.final_result_tool = native_tools
        """A typed output is asked for as a `final_result` call when the tools are native."""
        self.requests: list[ModelRequest] = []
        """Every request received, for tests to inspect."""

    @property
    def name(self) -> str:
        return self._name

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        self.requests.append(request)
        if self._next >= len(self._turns):
            msg = (
                f"scripted model {self._name!r} has {len(self._turns)} turn(s) and was asked "
                f"for turn {self._next + 1}"
            )
            raise ScriptExhausted(msg)
        item = self._turns[self._next]
        self._next += 1
        turn = item(request) if callable(item) else item
        if isinstance(turn, str):
            turn = ScriptedTurn(text=turn)
        if turn.tool_confidence is not None:
            yield ToolConfidenceChunk(confidence=turn.tool_confidence, withheld=turn.tools_withheld)

        thoughts = _TOKEN.findall(turn.reasoning)
        for token in thoughts:
            if self.token_delay:
                await anyio.sleep(self.token_delay)
            yield ReasoningChunk(text=token)
        tokens = _TOKEN.findall(turn.text)
        for token in tokens:
            if self.token_delay:
                await anyio.sleep(self.token_delay)
            yield TextChunk(text=token)
        if turn.error is not None:
            raise turn.error
        for index, call in enumerate(turn.tool_calls):
            if self.token_delay:
                await anyio.sleep(self.token_delay)
            yield ToolCallChunk(index=index, id=call.id, name=call.name, arguments=call.arguments)
        prompt = sum(len(m.content.split()) for m in request.messages)
        yield UsageChunk(
            usage=turn.usage
            or Usage(
                prompt_tokens=prompt,
                completion_tokens=len(thoughts) + len(tokens) + len(turn.tool_calls),
            )
        )
