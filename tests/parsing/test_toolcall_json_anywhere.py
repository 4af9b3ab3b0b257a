"""Conformance: calls written as JSON outside a line's start (after prose, after a vendor token,
glued to ``</think>``), Llama 3.x ``parameters`` objects, arrays of calls, ``;``-separated calls,
an unclosed ``<tool_call>`` at the end of the stream, and the unbalanced-brace defect."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from agentrt.parsing import CallPiece, InvalidPiece, TextPiece, ToolCallParser
from tests.parsing.test_toolcalls import (
    ARGS,
    FAST,
    assert_chunking_invariant,
    calls,
    dispatch_points,
    parse,
    summary,
    visible,
)

CALC = '{"name": "calc", "arguments": {"expression": "2+2"}}'


# --- the unbalanced-brace defect ---------------------------------------------------------------


def test_an_unbalanced_brace_does_not_hide_the_lines_after_it() -> None:
    text = '{"Hello, here is my plan.\n<calc>{"x": 1}</calc>\nThen ' + CALC + "\nend"
    pieces = parse(text)
    assert [p.name for p in calls(pieces) if isinstance(p, CallPiece)] == ["calc", "calc"]
    assert visible(pieces) == '{"Hello, here is my plan.\n\nThen \nend'


def test_the_line_after_an_unbalanced_brace_is_released_at_its_newline() -> None:
    parser = ToolCallParser()
    assert parser.feed('{"oops, not a call') == []
    assert parser.feed("\nmore") == [TextPiece('{"oops, not a call\nmore')]


HERMES = '<tool_call>{"name": "calc", "arguments": {"expression": "3*3"}}</tool_call>'


def test_a_call_tag_after_an_unbalanced_brace_on_the_same_line_is_read() -> None:
    text = '{"a": "b", "c": 1 ' + HERMES + " done"
    pieces = parse(text)
    assert summary(pieces) == [("calc", {"expression": "3*3"}, "hermes")]
    assert visible(pieces) == '{"a": "b", "c": 1  done'


def test_an_unclosed_call_before_a_call_tag_is_invalid_and_the_tag_still_runs() -> None:
    for broken in (
        '{"name": "calc", "arguments": {"expression": "2+2"} ',  # at a line's start
        'Sure: {"name": "calc", "arguments": {"expression": "2+2" ',  # mid-line, a known tool
    ):
        pieces = parse(broken + HERMES + "\n")
        [bad, good] = calls(pieces)
        assert isinstance(bad, InvalidPiece)
        assert bad.name == "calc"
        assert "braces are still open" in bad.reason
        assert broken.endswith(bad.raw)
        assert good == CallPiece("calc", {"expression": "3*3"}, HERMES, "hermes")


def test_a_less_than_sign_inside_a_string_is_still_json() -> None:
    text = '{"name": "calc", "arguments": {"expression": "1 < 2"}}'
    assert summary(parse(text)) == [("calc", {"expression": "1 < 2"}, "json")]


@FAST
@given(
    st.sampled_from(['{"x": 1 ', '{"name": "calc", "arguments": {"e": 2 ', '[{"q": 3 ']), st.data()
)
def test_a_broken_object_then_a_call_tag_whatever_the_chunking(
    broken: str, data: st.DataObject
) -> None:
    pieces = assert_chunking_invariant("ok " + broken + HERMES + " end", data)
    assert summary(pieces)[-1] == ("calc", {"expression": "3*3"}, "hermes")


def test_a_bare_call_on_the_next_line_is_found() -> None:
    text = '{"a": "never closed\n' + CALC + "\n"
    assert calls(parse(text)) == [CallPiece("calc", {"expression": "2+2"}, CALC, "json")]


def test_multi_line_calls_still_parse() -> None:
    for obj in [
        '{"name": "calc",\n "arguments": {"expression": "2+2"}}',
        '{\n  "arguments": {\n    "expression": "2+2"\n  },\n  "name": "calc"\n}',
        '{"name": "calc", "arguments": {"expression": "line one\nline two"}}',
    ]:
        [piece] = calls(parse(obj))
        assert isinstance(piece, CallPiece), obj


def test_multi_line_json_that_is_not_a_call_stays_text() -> None:
    text = '{\n  "title": "x",\n  "items": [1, 2]\n}\n'
    assert parse(text) == [TextPiece(text)]


# --- a <tool_call> left open at the end of the stream ------------------------------------------


def test_a_complete_body_without_its_closing_tag_is_a_call_at_close() -> None:
    parser = ToolCallParser()
    assert parser.feed("<tool_call>\n" + CALC + "\n") == []
    assert parser.close() == [
        CallPiece("calc", {"expression": "2+2"}, "<tool_call>\n" + CALC + "\n", "hermes")
    ]


def test_an_incomplete_body_at_close_is_invalid() -> None:
    [piece] = calls(parse('<tool_call>{"name": "calc", "arguments": {"expression": "2+'))
    assert isinstance(piece, InvalidPiece)
    assert piece.name == "calc"
    assert "never closed" in piece.reason


# --- JSON anywhere -----------------------------------------------------------------------------


def test_a_call_after_prose_on_the_same_line() -> None:
    text = f"Here is the result: {CALC} and more."
    assert parse(text) == [
        TextPiece("Here is the result: "),
        CallPiece("calc", {"expression": "2+2"}, CALC, "json"),
        TextPiece(" and more."),
    ]


def test_a_call_glued_to_the_end_of_reasoning() -> None:
    pieces = parse("I should add.</think>" + CALC)
    assert visible(pieces) == "I should add.</think>"
    assert [p.name for p in calls(pieces)] == ["calc"]


def test_llama_parameters_after_the_python_tag_token() -> None:
    obj = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
    assert parse("<|python_tag|>" + obj) == [
        CallPiece("get_weather", {"city": "Paris"}, obj, "json")
    ]


def test_the_function_call_token_is_not_shown() -> None:
    obj = '{"name": "now", "arguments": {}}'
    assert parse("Sure. <|function_call|>" + obj) == [
        TextPiece("Sure. "),
        CallPiece("now", {}, obj, "json"),
    ]


def test_json_in_prose_naming_no_offered_tool_is_text() -> None:
    for text in [
        'An object looks like {"name": "Alice", "age": 3} in JSON.',
        'The API returns {"name": "search", "arguments": {"q": "x"}} for that.',
        'Use [{"name": "Bob"}, {"name": "Eve"}] as input.',
        "```python\nprint({'name': 'calc'})\n```\n",
    ]:
        assert parse(text) == [TextPiece(text)], text


def test_a_call_naming_no_offered_tool_is_one_only_before_any_prose() -> None:
    # At a reply's start it is a call (the run refuses it, naming the offered tools).
    unknown = '{"name": "lookup_cup_winner", "arguments": {"year": 1998}}'
    assert calls(parse(unknown)) == [
        CallPiece("lookup_cup_winner", {"year": 1998}, unknown, "json")
    ]
    # After prose it is an example the answer shows, fenced or not.
    for text in [
        f"France won that year. To look it up:\n```json\n{unknown}\n```\n",
        f"France won that year.\n{unknown}",
    ]:
        assert parse(text) == [TextPiece(text)], text
    # An offered tool is called after prose too, and a call token says a call follows.
    assert [p.name for p in calls(parse(f"Checking.\n```json\n{CALC}\n```"))] == ["calc"]
    assert [p.name for p in calls(parse(f"Checking. <|python_tag|>{unknown}"))] == [
        "lookup_cup_winner"
    ]


def test_malformed_json_in_mid_line_naming_an_offered_tool_is_invalid() -> None:
    [piece] = calls(parse('Calling {"name": "calc", "arguments": {"expression": 2+2}} now'))
    assert isinstance(piece, InvalidPiece)
    assert piece.name == "calc"
    assert piece.reason.startswith('the call of "calc" is not valid JSON')


def test_an_array_of_calls_gives_each_call_as_it_completes() -> None:
    first, second = CALC, '{"name": "now", "arguments": {}}'
    text = f"Both: [{first}, {second}] done"
    assert parse(text) == [
        TextPiece("Both: "),
        CallPiece("calc", {"expression": "2+2"}, first, "json"),
        CallPiece("now", {}, second, "json"),
        TextPiece(" done"),
    ]
    points = dispatch_points(text)
    assert [at for at, _ in points] == [text.index(first) + len(first) - 1, text.index("]") - 1]


def test_an_array_on_its_own_lines_and_in_a_fence() -> None:
    items = [{"name": "calc", "arguments": {"expression": "1"}}, {"name": "now"}]
    pretty = json.dumps(items, indent=2)
    fenced = parse(f"Calling:\n```json\n{pretty}\n```\nDone.")
    assert [p.name for p in calls(fenced)] == ["calc", "now"]
    assert visible(fenced) == "Calling:\nDone."
    assert [p.name for p in calls(parse(json.dumps(items)))] == ["calc", "now"]


def test_an_array_whose_first_item_is_not_a_call_is_text() -> None:
    text = '[{"id": 1}, {"id": 2}]'
    assert parse(text) == [TextPiece(text)]


def test_semicolon_separated_calls() -> None:
    first, second = CALC, '{"name": "now", "parameters": {}}'
    pieces = parse(f"<|python_tag|>{first}; {second}")
    assert [p.name for p in calls(pieces)] == ["calc", "now"]
    assert visible(pieces) == ""


def test_an_unclosed_object_in_mid_line_at_close_is_text() -> None:
    text = 'Result: {"name": "calc", "arguments": {"expression": "2'
    assert parse(text) == [TextPiece(text)]


# --- chunking ----------------------------------------------------------------------------------

NAMES = st.sampled_from(["calc", "now", "wiki_search"])
PROSE = st.text(st.sampled_from(list("ab :.,<>/日\n")), max_size=8)


@st.composite
def anywhere_document(draw: st.DrawFn) -> tuple[str, list[tuple[str, dict[str, object], str]]]:
    parts: list[str] = []
    expected: list[tuple[str, dict[str, object], str]] = []
    for _ in range(draw(st.integers(1, 4))):
        items = draw(st.lists(st.tuples(NAMES, ARGS), min_size=1, max_size=3))
        objs = [json.dumps({"name": n, "parameters": a}) for n, a in items]
        shape = draw(st.sampled_from(["prose", "token", "array", "semicolons"]))
        if shape == "array":
            call = "[" + ", ".join(objs) + "]"
        elif shape == "semicolons":
            call = "<|python_tag|>" + "; ".join(objs)
        else:
            objs = objs[:1]
            items = items[:1]
            call = ("<|python_tag|>" if shape == "token" else "") + objs[0]
        parts.append(draw(PROSE) + "x " + call + " y")
        expected += [(n, a, "json") for n, a in items]
    return "".join(parts), expected


@FAST
@given(anywhere_document(), st.data())
def test_calls_anywhere_are_found_whatever_the_chunking(
    document: tuple[str, list[tuple[str, dict[str, object], str]]], data: st.DataObject
) -> None:
    text, expected = document
    assert summary(assert_chunking_invariant(text, data)) == expected
