"""Classification: one strict-schema model call; any failure falls back, and says so."""

from __future__ import annotations

import json

import pytest

from agentrt import ClassifiedEvent, ModelError, ModelRequest, StrategySelectedEvent, Workspace
from tests.helpers import TEST_WORKSPACE, MakeAgent, agentrt_logs, classified


async def classify_with(
    make_agent: MakeAgent, answer: object
) -> tuple[ClassifiedEvent, str, ModelRequest]:
    agent = make_agent([answer, "fine"])
    events = [e async for e in agent.run("How many moons has Mars?")]
    (c,) = [e for e in events if isinstance(e, ClassifiedEvent)]
    (s,) = [e for e in events if isinstance(e, StrategySelectedEvent)]
    return c, s.strategy, agent.model.requests[0]  # type: ignore[attr-defined]


async def test_the_model_chooses(make_agent: MakeAgent) -> None:
    """The classifier's answer picks the strategy; it was asked under a strict schema."""
    c, strategy, request = await classify_with(make_agent, classified("direct"))
    assert (c.query_type, c.method, c.reason, c.language) == ("direct", "model", None, "eng")
    assert strategy == "direct"
    assert request.purpose == "classify"
    assert request.json_schema is not None
    assert request.json_schema["additionalProperties"] is False
    strategies = request.json_schema["properties"]["query_type"]["enum"]
    assert strategies == sorted(Workspace(TEST_WORKSPACE).strategies)
    assert "- direct: Answerable without tools." in request.messages[0].content


async def test_fenced_answer_is_accepted(make_agent: MakeAgent) -> None:
    """Small models wrap JSON in a fence; that is still an answer."""
    c, _, _ = await classify_with(make_agent, "```json\n" + classified("direct") + "\n```")
    assert (c.query_type, c.method) == ("direct", "model")


def _raises(request: ModelRequest) -> str:
    raise ModelError("server unavailable")


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("I think it's a direct question.", "the answer did not fit the schema"),
        (
            json.dumps({"query_type": "poetry", "language": "eng", "suggested_contexts": []}),
            "unknown query type 'poetry'",
        ),
        (
            json.dumps({"query_type": "direct", "mood": "happy"}),
            "the answer did not fit the schema",
        ),
        (_raises, "the model call failed: server unavailable"),
    ],
    ids=["prose", "unknown-type", "extra-field", "model-error"],
)
async def test_failures_fall_back(make_agent: MakeAgent, answer: object, reason: str) -> None:
    """Any failure falls back to the default strategy, and the event says so and why; the
    warning is logged with the run's id bound."""
    with agentrt_logs() as logs:
        c, strategy, _ = await classify_with(make_agent, answer)
    (warning,) = [entry for entry in logs if entry["event"] == "classification failed"]
    assert warning["log_level"] == "warning"
    assert warning["run_id"]
    assert warning["reason"] == c.reason
    assert (c.query_type, c.method, strategy) == ("exploratory", "fallback", "exploratory")
    assert c.reason is not None
    assert c.reason.startswith(reason)
