"""Internal. Finding tool calls in what a model streams.

`ToolCallParser` reads streamed text and separates visible text from the tool calls written
into it (tool tags, Hermes ``<tool_call>`` elements, bare or fenced JSON objects);
`NativeToolCallAssembler` joins OpenAI-style ``tool_calls`` deltas. Both are pure and
synchronous, and both return each call the moment it is complete. `ReasoningSplitter` runs
before the parser: it takes the reasoning (``<think>`` blocks, gpt-oss's analysis channel) out
of the text, so that no call drafted in it is ever read.
"""

from agentrt.parsing.native import NativeToolCallAssembler
from agentrt.parsing.reasoning import ContentPiece, ReasoningPiece, ReasoningSplitter, SplitPiece
from agentrt.parsing.toolcalls import (
    CallPiece,
    InvalidPiece,
    ParsedPiece,
    TagSpec,
    TextPiece,
    ToolCallParser,
)

__all__ = [
    "CallPiece",
    "ContentPiece",
    "InvalidPiece",
    "NativeToolCallAssembler",
    "ParsedPiece",
    "ReasoningPiece",
    "ReasoningSplitter",
    "SplitPiece",
    "TagSpec",
    "TextPiece",
    "ToolCallParser",
]
