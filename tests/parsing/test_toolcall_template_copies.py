"""Conformance: what the embedded 1.5B copies from its chat template (Qwen2.5's): calls inside a
``<tools>`` block, and objects with the template's doubled braces ``{{"name": …}}``."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from agentrt.parsing import CallPiece, InvalidPiece, TextPiece
from tests.parsing.test_toolcalls import (
    FAST,
    assert_chunking_invariant,
    calls,
    dispatch_points,
    parse,
    summary,
    visible,
)


def doubled(value: object) -> str:
    return json.dumps(value).replace("{", "{{").replace("}", "}}")


def test_a_doubled_brace_object_is_a_call() -> None:
    text = doubled({"name": "calc", "arguments": {"expression": "2+2"}})
    assert parse(text) == [CallPiece("calc", {"expression": "2+2"}, text, "json")]
    [(at, _)] = dispatch_points(text + " tail")
    assert at == len(text) - 1


def test_a_doubled_brace_object_after_prose_names_an_offered_tool() -> None:
    text = "I will call " + doubled({"name": "now", "arguments": {}}) + "."
    assert [p.name for p in calls(parse(text))] == ["now"]
    other = "Template: " + doubled({"name": "unknown_tool", "arguments": {}})
    assert parse(other) == [TextPiece(other)]


def test_calls_inside_a_tools_block() -> None:
    first = json.dumps({"name": "calc", "arguments": {"expression": "1+1"}})
    second = doubled({"name": "now", "arguments": {}})
    pieces = parse(f"<tools>\n{first}\n{second}\n</tools>\n")
    assert [p.name for p in calls(pieces)] == ["calc", "now"]
    assert visible(pieces) == "\n\n\n\n"


def test_a_doubled_hermes_body() -> None:
    body = doubled({"name": "calc", "arguments": {"x": 1}})
    assert calls(parse(f"<tool_call>{body}</tool_call>"))[0] == CallPiece(
        "calc", {"x": 1}, f"<tool_call>{body}</tool_call>", "hermes"
    )


def test_malformed_doubled_object_is_invalid() -> None:
    [piece] = calls(parse('{{"name": "calc", "arguments": {{"x": 1,}}}}'))
    assert isinstance(piece, InvalidPiece)
    assert piece.name == "calc"


def test_unclosed_doubled_object_at_close_is_text() -> None:
    text = '{{"name": "calc", "arguments": {{"x": 1'
    assert parse(text) == [TextPiece(text)]


def test_template_placeholders_stay_text() -> None:
    for text in ["Hello {{ user }}!", "{{}}", "a {{b}} c\n{{\n"]:
        assert parse(text) == [TextPiece(text)], text


# Doubling is undone textually, so generated strings hold no braces (a model's rarely do).
PLAIN = st.text(st.sampled_from(list('xy "\\\n:,[]日')), max_size=6)
ARGS = st.dictionaries(st.sampled_from(["a", "b"]), st.integers(-3, 3) | PLAIN | st.lists(PLAIN))


@st.composite
def block(draw: st.DrawFn) -> tuple[str, list[tuple[str, dict[str, object], str]]]:
    items = draw(st.lists(st.tuples(st.sampled_from(["calc", "now"]), ARGS), max_size=3))
    lines = [
        (doubled if draw(st.booleans()) else json.dumps)({"name": n, "arguments": a})
        for n, a in items
    ]
    wrap = draw(st.booleans())
    body = "\n".join(lines)
    text = f"<tools>\n{body}\n</tools>\n" if wrap else f"x {body}\n"
    return text, [(n, a, "json") for n, a in items]


@FAST
@given(block(), st.data())
def test_template_copies_whatever_the_chunking(
    doc: tuple[str, list[tuple[str, dict[str, object], str]]], data: st.DataObject
) -> None:
    text, expected = doc
    assert summary(assert_chunking_invariant(text, data)) == expected
