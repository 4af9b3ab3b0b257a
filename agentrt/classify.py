"""Internal. Classification: one short model call that picks the query type, under a strict JSON
schema."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentrt.exceptions import ModelError
from agentrt.models.base import Message, ModelRequest
from agentrt.run import RunContext
from agentrt.strategy import Strategy
from agentrt.workspace import Workspace

__all__ = ["Classification", "ClassificationFailed", "classification_schema", "classify"]


class ClassificationFailed(Exception):
    """The classifier gave no usable answer; the message says why. The run falls back."""


class Classification(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query_type: str
    language: str = Field("und", description="ISO 639-3 code of the query's language")
    suggested_contexts: list[str] = Field(default_factory=list)


def classification_schema(
    strategies: dict[str, Strategy], contexts: list[str] | None = None
) -> dict[str, Any]:
    """The JSON schema the classifier must answer in: the query types are the strategy names,
    the suggested contexts are among the workspace's (none when it has none)."""
    suggested: dict[str, Any] = {"type": "array", "items": {"type": "string", "enum": contexts}}
    if not contexts:
        # With `items` given, grammar builders (llama.cpp's) honour maxItems; without, they
        # allow any array, and a small model fills it with invented text.
        suggested = {"type": "array", "items": {"type": "string"}, "maxItems": 0}
    return {
        "type": "object",
        "properties": {
            "query_type": {"type": "string", "enum": sorted(strategies)},
            "language": {"type": "string", "minLength": 2, "maxLength": 3},
            "suggested_contexts": suggested,
        },
        "required": ["query_type", "language", "suggested_contexts"],
        "additionalProperties": False,
    }


async def classify(ctx: RunContext, workspace: Workspace, query: str) -> Classification:
    """Classify the query, or raise `ClassificationFailed` saying why."""
    strategies = workspace.strategies
    request = ModelRequest(
        messages=[
            Message(
                role="system",
                content=workspace.render("classify.j2", strategies=list(strategies.values())),
            ),
            Message(role="user", content=query),
        ],
        json_schema=classification_schema(
            strategies,
            [c.id for c in workspace.knowledge.contexts] if workspace.knowledge else None,
        ),
        purpose="classify",
        max_tokens=200,
    )
    try:
        text = await ctx.complete(request)
    except ModelError as exc:
        msg = f"the model call failed: {exc}"
        raise ClassificationFailed(msg) from exc
    try:
        result = Classification.model_validate_json(_json_object(text))
    except ValidationError as exc:
        msg = f"the answer did not fit the schema ({exc.errors()[0]['msg']}): {text[:200]!r}"
        raise ClassificationFailed(msg) from None
    if result.query_type not in strategies:
        msg = f"unknown query type {result.query_type!r}"
        raise ClassificationFailed(msg)
    return result


def _json_object(text: str) -> str:
    """The outermost `{…}` of an answer: small models wrap JSON in fences or prose."""
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else text
