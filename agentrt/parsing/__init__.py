"""Internal. Finding tool calls in what a model streams.

`ToolCallParser` reads streamed text and separates visible text from the tool calls written
into it (tool tags, Hermes ``<tool_call>`` elements, bare or fenced JSON objects);
`NativeToolCallAssembler` joins OpenAI-style ``tool_calls`` deltas. Both are pure and
synchronous, and both return each call the moment it is complete.
"""

from agentrt.parsing.native import NativeToolCallAssembler
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
    "InvalidPiece",
    "NativeToolCallAssembler",
    "ParsedPiece",
    "TagSpec",
    "TextPiece",
    "ToolCallParser",
]
