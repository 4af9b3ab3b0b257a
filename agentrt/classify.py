"""Internal. Classification: one short model call that picks the query type, under a strict JSON
schema."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentrt.exceptions import ModelError
from agentrt.models.base import Message, ModelRequest
from agentrt.parsing.answers import JSONProblem, find_json
from agentrt.run import RunContext
from agentrt.strategy import Strategy
from agentrt.workspace import Workspace

__all__ = ["Classification", "Unclassified", "classification_schema", "classify"]


@dataclass(frozen=True, slots=True)
class Unclassified:
    """The classifier gave no usable answer: the run falls back to the default strategy."""

    reason: str


class Classification(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

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


async def classify(
    ctx: RunContext, workspace: Workspace, query: str
) -> Classification | Unclassified:
    """Classify the query, or say why it could not be."""
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
        return Unclassified(f"the model call failed: {exc}")
    try:
        result = Classification.model_validate(find_json(text, object_only=True))
    except JSONProblem as exc:
        return Unclassified(f"the answer did not fit the schema ({exc}): {text[:200]!r}")
    except ValidationError as exc:
        msg = f"the answer did not fit the schema ({exc.errors()[0]['msg']}): {text[:200]!r}"
        return Unclassified(msg)
    if result.query_type not in strategies:
        return Unclassified(f"unknown query type {result.query_type!r}")
    return result
