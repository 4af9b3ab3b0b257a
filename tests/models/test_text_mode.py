"""Tool results as a model without native tool calls sees them: one user message that ends with
the request's nudge (a strategy's `results_nudge`, or the default "answer now")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llama_cpp.llama_grammar import json_schema_to_gbnf

from agentrt import LocalModel, Message, ModelRequest
from agentrt.catalog.builtins import builtin_tools
from agentrt.models.base import TOOL_RESULTS_NUDGE, for_llama_grammar, text_mode_messages
from agentrt.models.grammar import answer_grammar, tool_turn_grammar
from agentrt.models.local import RETRY_TEMPERATURE
from agentrt.planning.dag import plan_schema
from agentrt.planning.vm import program_schema
from tests.helpers import llama_accepts

CONVERSATION = [
    Message(role="system", content="Be brief."),
    Message(role="user", content="How many guides are there?"),
    Message(role="assistant", content='{"name": "count", "arguments": {}}'),
    Message(role="tool", content='{"items": 3}', tool_call_id="c1", name="count", arguments="{}"),
    Message(role="tool", content='{"chunks": 9}', tool_call_id="c2", name="count"),
]
NUDGE = "Now call finish_retrieval with the answer; do not answer in plain text."


@pytest.fixture
def unloaded(tmp_path: Path) -> LocalModel:
    """A local model over an empty file: building its call arguments never loads weights."""
    path = tmp_path / "never-loaded.gguf"
    path.touch()
    return LocalModel(path, max_tokens=32)


class TestTextModeMessages:
    def test_results_fold_into_one_message_ending_with_the_nudge(self) -> None:
        """The tool messages become one user message listing each result by call."""
        out = text_mode_messages(CONVERSATION, NUDGE)
        assert [m.role for m in out] == ["system", "user", "assistant", "user"]
        assert out[-1].content == (
            "Results of your tool calls:\n"
            '- count {} → {"items": 3}\n'
            '- count  → {"chunks": 9}\n'
            "\n" + NUDGE
        )

    def test_the_default_is_answer_now(self) -> None:
        """Without a nudge, and on a request that sets none, the results ask for a plain
        answer, as before strategies could choose."""
        assert text_mode_messages(CONVERSATION)[-1].content.endswith("\n\n" + TOOL_RESULTS_NUDGE)
        assert ModelRequest(messages=CONVERSATION).results_nudge == TOOL_RESULTS_NUDGE
        assert TOOL_RESULTS_NUDGE.startswith("Answer the user's question now, in plain text")


class TestLocalModelArguments:
    def test_the_requests_nudge_reaches_the_chat_messages(self, unloaded: LocalModel) -> None:
        request = ModelRequest(messages=CONVERSATION, results_nudge=NUDGE)
        messages = unloaded.completion_arguments(request)["messages"]
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
        assert messages[-1]["content"].endswith("\n\n" + NUDGE)
        assert TOOL_RESULTS_NUDGE not in messages[-1]["content"]

    def test_a_json_step_may_run_longer_than_a_turn(self, unloaded: LocalModel) -> None:
        """A dag plan of a dozen nodes passes 512 tokens: cut there, it is invalid."""
        step = ModelRequest(messages=CONVERSATION, json_schema={"type": "object"})
        assert unloaded.completion_arguments(step)["max_tokens"] == unloaded.max_json_tokens
        assert (
            unloaded.completion_arguments(ModelRequest(messages=CONVERSATION))["max_tokens"] == 32
        )
        capped = step.model_copy(update={"max_tokens": 64})
        assert unloaded.completion_arguments(capped)["max_tokens"] == 64

    def test_a_retry_is_sampled_not_greedily(self, unloaded: LocalModel) -> None:
        """At temperature 0 a repair would come back as the answer it was asked to repair."""
        first = unloaded.completion_arguments(ModelRequest(messages=CONVERSATION))
        again = unloaded.completion_arguments(ModelRequest(messages=CONVERSATION, retry=2))
        assert (first["temperature"], first["seed"]) == (0.0, 0)
        assert (again["temperature"], again["seed"]) == (RETRY_TEMPERATURE, 2)

    def test_default_request(self, unloaded: LocalModel) -> None:
        arguments = unloaded.completion_arguments(ModelRequest(messages=CONVERSATION))
        assert arguments["messages"][-1]["content"].endswith("\n\n" + TOOL_RESULTS_NUDGE)
        assert arguments["max_tokens"] == 32


def test_a_parameter_of_any_value_is_a_grammar_too(small_model_path: Path) -> None:
    """`llm_generate`'s `context` (a `JsonValue`: only a description and a default) made
    llama.cpp's converter fail, so every react turn offering it (a vm run's fallback) ended
    `error`; plans and programs that may call it too."""
    definition = builtin_tools()["llm_generate"].definition
    context = definition.parameters["properties"]["context"]
    assert not {"type", "anyOf", "$ref"} & set(context)  # what pydantic writes for JsonValue
    assert llama_accepts(tool_turn_grammar([definition]), small_model_path)
    for schema in (program_schema([definition]), plan_schema([definition])):
        grammar = json_schema_to_gbnf(json.dumps(for_llama_grammar(schema)))
        assert llama_accepts(grammar, small_model_path)


def test_the_answer_only_grammar_is_one_llama_cpp_reads(small_model_path: Path) -> None:
    """A grammar llama.cpp refuses is dropped, and the turn samples unconstrained."""
    assert llama_accepts(answer_grammar(), small_model_path)
