"""Model specs: the short strings (`local:small`, `openai:NAME`, `demo`) that name a model.

A spec is plain data, so a process that only has the string (a Ray worker, say) builds the same
model as the one that chose it.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from agentrt.exceptions import UserError
from agentrt.models.base import Model, ModelRequest
from agentrt.models.scripted import ScriptedModel

__all__ = ["MODEL_HELP", "demo_model", "load_model", "model_factory"]

MODEL_HELP = (
    "Which model answers: 'local' (the embedded Qwen2.5-Coder-1.5B), 'local:small' (its 0.5B "
    "sibling), 'local:PATH.gguf', 'openai' or 'openai:NAME' (an OpenAI-compatible server, "
    "configured by AGENTRT_OPENAI_* variables), or 'demo' (a scripted recording)."
)


def model_factory(spec: str) -> Callable[[], Model]:
    """A function that gives the model for each run under `spec`.

    The demo is a script of one conversation, so every run gets a new one; the other models
    are built once and shared, since their weights or connections serve concurrent runs.

    :raises UserError: the spec names no known kind of model
    """
    kind, _, rest = spec.partition(":")
    if kind == "demo":
        return demo_model
    if kind == "local":
        from agentrt.models.local import DEFAULT_PACK, SMALL_PACK, LocalModel

        local = LocalModel({"": DEFAULT_PACK, "small": SMALL_PACK}.get(rest, rest))
        return lambda: local
    if kind == "openai":
        from agentrt.models.openai import OpenAIModel, OpenAISettings

        remote = OpenAIModel(OpenAISettings(model=rest) if rest else OpenAISettings())
        return lambda: remote
    msg = f"unknown model {spec!r}: {MODEL_HELP}"
    raise UserError(msg)


def load_model(spec: str) -> Model:
    """The model `spec` names (see `MODEL_HELP`)."""
    return model_factory(spec)()


def demo_model() -> Model:
    """A scripted stand-in that plays a fixed exchange, streaming it like a model would."""

    def answer(request: ModelRequest) -> str:
        results = {m.tool_call_id: m.content for m in request.messages if m.role == "tool"}
        days, root = results.get("call_1_1", "?"), results.get("call_1_2", "?")
        text = (
            f"From 2024-02-10 to 2025-03-01 there are {days} days; "
            f"the square root of 1764 is {root}."
        )
        return _call("finish", answer=text)

    return ScriptedModel(
        [
            '{"query_type": "exploratory", "language": "eng", "suggested_contexts": []}',
            "I need a date difference and a square root; both can be computed at once.\n"
            + _call("days_between", start="2024-02-10", end="2025-03-01")
            + "\n"
            + _call("calculate", expression="sqrt(1764)"),
            answer,
        ],
        token_delay=0.02,
        name="scripted-demo",
    )


def _call(name: str, **arguments: str) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"
