"""Which call, written when the embedded model is asked for one more, serves the question."""

from __future__ import annotations

import pytest

from agentrt import Message
from agentrt.models.more_calls import Call, made_calls, serves_more, written_calls

PARIS: Call = ("weather", {"city": "Paris", "unit": "celsius"})


def test_calls_are_read_tagged_bare_and_mixed() -> None:
    text = (
        '<tool_call>\n{"name": "weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
        '{"name": "time", "arguments": {"zone": "CET"}}'
    )
    assert written_calls(text) == [("weather", {"city": "Paris"}), ("time", {"zone": "CET"})]


@pytest.mark.parametrize(
    "text",
    [
        "It is sunny in Paris.",
        '{"name": "weather"}',  # no arguments: not a call
        '{"name": "weather", "arguments": {"city": "Paris"}} and then some words',
        '["weather"]',
        "",
    ],
)
def test_anything_but_calls_is_no_calls(text: str) -> None:
    assert written_calls(text) == []


QUESTION = "Compare the weather in Paris and in Madrid, in celsius, for the next 3 days."


@pytest.mark.parametrize(
    ("call", "serves"),
    [
        (("weather", {"city": "Madrid", "unit": "celsius"}), True),
        (("forecast", {"city": "Madrid", "days": 3}), True),  # another tool, a new value
        (("forecast", {"days": 3.0}), True),  # a number is read as the question writes it
        (PARIS, False),  # the same call again
        (("weather", {"city": "paris ", "unit": "Celsius"}), False),  # the same, spelled apart
        (("weather", {"city": "Paris", "unit": "celsius", "days": 3}), False),  # only added to
        (("weather", {"city": "Paris", "unit": None}), False),
        (("weather", {"city": "Rome", "unit": "celsius"}), False),  # Rome was not asked for
        (("forecast", {"city": "Paris"}), False),  # nothing new of the question
        (("weather", {"city": "Mad", "unit": "celsius"}), False),  # a part of a word is no word
        (("forecast", {"days": 30}), False),
        (("translate", {"text": QUESTION}), False),  # the question again holds Paris
        (("translate", {"text": "the weather in Paris"}), False),
    ],
)
def test_a_call_serves_more_only_with_a_new_part_of_the_question(call: Call, serves: bool) -> None:
    assert serves_more(call, [PARIS], QUESTION) is serves


def test_filling_in_what_the_earlier_call_left_null_asks_nothing_new() -> None:
    shoes: Call = ("search", {"query": "running shoes", "max_price": None})
    question = "Find running shoes under 100."
    assert not serves_more(
        ("search", {"query": "running shoes", "max_price": 100}), [shoes], question
    )


def test_values_are_found_in_nested_arguments_and_booleans_are_nobodys_words() -> None:
    lights: Call = ("set_light", {"room": "hall", "on": False})
    assert serves_more(("set_light", {"room": "office", "on": False}), [lights], "hall, office")
    assert not serves_more(("set_light", {"room": "hall", "on": True}), [lights], "hall on")
    nested: Call = ("send", {"to": ["+12025550102"], "text": "hi"})
    sent: Call = ("send", {"to": ["+12025550101"], "text": "hi"})
    assert serves_more(nested, [sent], 'Text "hi" to +12025550101 and +12025550102.')


def test_a_call_the_conversation_made_already_is_an_earlier_one() -> None:
    """Its result is in a tool message: asked again, it is no new part of the question (the
    quickstart's second turn wrote `finish`, and then the first turn's `add` once more)."""
    messages = [
        Message(role="user", content="What is 1234 + 5678?"),
        Message(role="assistant", content='{"name": "add", "arguments": {"a": 1234, "b": 5678}}'),
        Message(role="tool", content="6912", name="add", arguments='{"a": 1234, "b": 5678}'),
        Message(role="tool", content="?", name="broken", arguments="{not json"),
    ]
    made = made_calls(messages)
    assert made == [("add", {"a": 1234, "b": 5678})]
    again: Call = ("add", {"a": 1234, "b": 5678})
    assert not serves_more(again, [*made, ("finish", {"answer": "6912"})], "What is 1234 + 5678?")
