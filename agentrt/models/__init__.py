"""Model backends, all speaking the `Model` protocol."""

from agentrt.models.base import (
    Message,
    Model,
    ModelChunk,
    ModelRequest,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    ToolConfidenceChunk,
    ToolDefinition,
    UsageChunk,
)
from agentrt.models.scripted import ScriptedModel, ScriptedTurn

__all__ = [
    "Message",
    "Model",
    "ModelChunk",
    "ModelRequest",
    "ReasoningChunk",
    "ScriptedModel",
    "ScriptedTurn",
    "TextChunk",
    "ToolCallChunk",
    "ToolConfidenceChunk",
    "ToolDefinition",
    "UsageChunk",
]
