"""Conformance: Mistral ``[TOOL_CALLS]`` (the JSON-array form and ``NAME[ARGS]{…}``), pythonic
lists ``[f(k=v), …]`` (Llama 3.2/4, LFM2's ``<|tool_call_start|>``), attribute tags
``<name k="v"/>`` and gpt-oss harmony calls, written from their chat templates."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentrt.parsing import CallPiece, InvalidPiece, TagSpec, TextPiece, ToolCallParser
from tests.parsing.test_toolcalls import FAST, calls, normalize, split

SCHEMA = {
    "type": "object",
    "properties": {"sql": {"type": "string"}, "limit": {"type": "integer"}},
}
TOOLS = (TagSpec("get_weather"), TagSpec("add"), TagSpec("run_sql", parameters=SCHEMA))


def parse(text: str, chunks: list[str] | None = None) -> list[Any]:
    parser = ToolCallParser(TOOLS)
    pieces = [p for chunk in (chunks or [text]) for p in parser.feed(chunk)] + parser.close()
    return normalize(pieces)


def visible(text: str) -> str:
    return "".join(p.text for p in parse(text) if isinstance(p, TextPiece))


def dispatch_points(text: str) -> list[int]:
    parser = ToolCallParser(TOOLS)
    return [i for i, c in enumerate(text) for p in parser.feed(c) if not isinstance(p, TextPiece)]


def invalid(text: str) -> InvalidPiece:
    [piece] = calls(parse(text))
    assert isinstance(piece, InvalidPiece)
    return piece


# --- Mistral -----------------------------------------------------------------------------------


def test_mistral_array_form() -> None:
    text = (
        '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "lookup", "arguments": {"q": "x"}}]'
    )
    pieces = parse(text)
    assert [(p.name, p.arguments, p.format) for p in pieces] == [
        ("get_weather", {"city": "Paris"}, "mistral"),
        ("lookup", {"q": "x"}, "mistral"),  # the marker is unambiguous: any name is a call
    ]


def test_mistral_name_args_form_several_in_a_row() -> None:
    first = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'
    second = '[TOOL_CALLS]add[ARGS]{"a": 1,\n "b": 2}'
    assert parse("Sure.\n" + first + second) == [
        TextPiece("Sure.\n"),
        CallPiece("get_weather", {"city": "Paris"}, first, "mistral"),
        CallPiece("add", {"a": 1, "b": 2}, second, "mistral"),
    ]


def test_mistral_call_id_is_accepted() -> None:
    text = '[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Oslo"}'
    assert calls(parse(text)) == [CallPiece("get_weather", {"city": "Oslo"}, text, "mistral")]


def test_mistral_call_is_dispatched_at_its_closing_brace() -> None:
    text = '[TOOL_CALLS]add[ARGS]{"a": {"b": 1}} then'
    assert dispatch_points(text) == [text.index("} then") + 0]


def test_mistral_malformed_arguments_are_invalid() -> None:
    piece = invalid('[TOOL_CALLS]add[ARGS]{"a": 1,}')
    assert piece.name == "add"
    assert "[TOOL_CALLS]add[ARGS]{" in piece.reason


def test_mistral_array_of_non_calls_is_invalid() -> None:
    assert "[TOOL_CALLS] is followed by calls" in invalid('[TOOL_CALLS][{"x": 1}]').reason


def test_mistral_unclosed_arguments_at_end_are_invalid() -> None:
    piece = invalid('[TOOL_CALLS]add[ARGS]{"a": 1')
    assert piece.name == "add"
    assert "never closed" in piece.reason


@pytest.mark.parametrize("text", ["[TOOL_CALLS] done", "[TOOL_CALLS]add and more", "[TOOLS] x"])
def test_a_marker_without_a_call_is_text(text: str) -> None:
    assert visible(text) == text


# --- pythonic ----------------------------------------------------------------------------------


def test_pythonic_list_anywhere() -> None:
    text = 'Let me check. [get_weather(city="Paris"), add(a=1, b=2.5)] ok'
    assert parse(text) == [
        TextPiece("Let me check. "),
        CallPiece("get_weather", {"city": "Paris"}, 'get_weather(city="Paris")', "pythonic"),
        CallPiece("add", {"a": 1, "b": 2.5}, "add(a=1, b=2.5)", "pythonic"),
        TextPiece(" ok"),
    ]


def test_pythonic_literals_and_lfm2_tokens() -> None:
    text = (
        "<|tool_call_start|>[add(xs=[1, 'two', None], opts={'deep': True}, flag=true, "
        'note="a ) ] inside")]<|tool_call_end|>'
    )
    [piece] = calls(parse(text))
    assert isinstance(piece, CallPiece)
    assert piece.arguments == {
        "xs": [1, "two", None],
        "opts": {"deep": True},
        "flag": True,
        "note": "a ) ] inside",
    }
    assert visible(text) == ""


def test_pythonic_calls_are_dispatched_at_each_closing_parenthesis() -> None:
    text = "[get_weather(city='A'), add(a=1)]"
    assert dispatch_points(text) == [text.index(")"), text.rindex(")")]


def test_positional_arguments_are_invalid_and_name_the_form() -> None:
    piece = invalid('[get_weather("Paris")]')
    assert piece.name == "get_weather"
    assert "get_weather(key=value" in piece.reason


def test_a_value_that_is_not_a_literal_is_invalid() -> None:
    assert "not a literal" in invalid("[add(a=__import__('os'))]").reason


def test_an_unknown_name_after_a_call_is_invalid() -> None:
    pieces = calls(parse("[add(a=1), rm(path='/')]"))
    assert isinstance(pieces[1], InvalidPiece)
    assert "rm is not one of your tools" in pieces[1].reason


@pytest.mark.parametrize(
    "text",
    [
        "[see above]",
        "[rm(path='/')]",  # not an offered tool
        "[add (a=1)]",
        "[add](https://example.com)",
        "[1, 2]",
        "[get_weather]",
    ],
)
def test_brackets_that_are_not_calls_are_text(text: str) -> None:
    assert visible(text) == text


def test_an_unclosed_pythonic_call_is_invalid_at_end() -> None:
    piece = invalid('[get_weather(city="Pa')
    assert "never closed" in piece.reason


# --- attribute tags ----------------------------------------------------------------------------


def test_attribute_tag_with_schema_typed_values() -> None:
    text = '<run_sql sql="SELECT * FROM t WHERE a &gt; 1 AND b > 2" limit="5"/>'
    assert parse("Running: " + text) == [
        TextPiece("Running: "),
        CallPiece(
            "run_sql",
            {"sql": "SELECT * FROM t WHERE a > 1 AND b > 2", "limit": 5},
            text,
            "xml_attributes",
        ),
    ]


def test_attribute_tag_single_quotes_spaces_and_no_attributes() -> None:
    text = "<run_sql sql = 'SELECT 1' />\n<get_weather/>"
    assert [(p.name, p.arguments) for p in calls(parse(text))] == [
        ("run_sql", {"sql": "SELECT 1"}),
        ("get_weather", {}),
    ]


def test_attribute_tag_is_dispatched_at_its_closing_bracket() -> None:
    text = '<run_sql sql="x"/> more'
    assert dispatch_points(text) == [text.index("/>") + 1]


@pytest.mark.parametrize(
    "text",
    [
        "use <run_sql with care, then stop",
        '<run_sql sql="SELECT 1">',  # not self-closing
        '<other sql="x"/>',  # not an offered tool
        "<run_sql don't>",
    ],
)
def test_attribute_lookalikes_are_text(text: str) -> None:
    assert visible(text) == text


def test_an_unclosed_attribute_tag_is_invalid_at_end() -> None:
    piece = invalid('<run_sql sql="SELECT')
    assert piece.name == "run_sql"
    assert '<run_sql key="value"/>' in piece.reason


# --- harmony -----------------------------------------------------------------------------------

ON_CHANNEL = (
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"city": "SF"}<|call|>'
)
IN_ROLE = (
    "<|start|>assistant to=functions.get_weather<|channel|>commentary json"
    '<|message|>{"city": "SF"}<|call|>'
)


@pytest.mark.parametrize(
    "text", [ON_CHANNEL, IN_ROLE, ON_CHANNEL.removeprefix("<|start|>assistant")]
)
def test_harmony_call(text: str) -> None:
    assert parse(text) == [CallPiece("get_weather", {"city": "SF"}, text, "harmony")]
    assert dispatch_points(text) == [len(text) - 1]


def test_harmony_bad_body_is_invalid() -> None:
    piece = invalid(ON_CHANNEL.replace('{"city": "SF"}', "city=SF"))
    assert piece.name == "get_weather"
    assert "to=functions.NAME" in piece.reason


def test_harmony_without_recipient_is_invalid() -> None:
    assert "recipient" in invalid("<|channel|>commentary<|message|>{}<|call|>").reason


def test_harmony_unclosed_is_invalid_with_the_name() -> None:
    piece = invalid(ON_CHANNEL.removesuffix("<|call|>"))
    assert piece.name == "get_weather"


# --- chunking ----------------------------------------------------------------------------------

SAMPLES = [
    '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]add[ARGS]{"a": 1}',
    '[TOOL_CALLS] [{"name": "add", "arguments": {"a": 1}}]',
    "[get_weather(city='a\\'b'), add(a=[1, (2, 3)])]",
    '<run_sql sql="SELECT \'x\' > 1" limit="2"/>',
    ON_CHANNEL,
    IN_ROLE,
    "[see] [add (x)] <run_sql with care, [TOOL_CALLS] x",
]


@FAST
@given(st.lists(st.sampled_from(SAMPLES), min_size=1, max_size=4), st.data())
def test_any_chunking_gives_the_same_pieces(parts: list[str], data: st.DataObject) -> None:
    text = " text\n".join(parts)
    whole = parse(text)
    assert parse(text, split(text, data)) == whole
    assert parse(text, list(text)) == whole


FRAGMENTS = [
    "[", "]", "(", ")", "{", "}", ",", "=", "'", '"', " ", "\n", "/>", ">", "1", "x",
    "add", "TOOL_CALLS", "[ARGS]", "<run_sql ", "sql=", "<|start|>", "<|message|>",
    "<|call|>", " to=functions.add", "<|tool_call_start|>",
]  # fmt: skip


@FAST
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=30), st.data())
def test_fragment_soup_is_chunk_invariant(parts: list[str], data: st.DataObject) -> None:
    text = "".join(parts)
    whole = parse(text)
    assert parse(text, split(text, data)) == whole
    assert parse(text, list(text)) == whole
