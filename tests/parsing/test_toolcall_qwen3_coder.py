"""Conformance: Qwen3-Coder / Qwen3.5 XML call bodies, written from their chat template:
``<tool_call>\\n<function=NAME>\\n<parameter=KEY>\\nVALUE\\n</parameter>\\n</function>\\n</tool_call>``,
values typed by the tool's JSON schema."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentrt.parsing import CallPiece, InvalidPiece, TagSpec, ToolCallParser
from tests.parsing.test_toolcalls import FAST, calls, normalize, split, summary

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "ratio": {"type": "number"},
        "metric": {"type": "boolean"},
        "filters": {"type": "object"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "maybe": {"type": ["integer", "null"]},
    },
}
TOOLS = (TagSpec("forecast", parameters=SCHEMA), TagSpec("now"))


def parse(text: str, chunks: list[str] | None = None) -> list[Any]:
    parser = ToolCallParser(TOOLS)
    pieces = [p for chunk in (chunks or [text]) for p in parser.feed(chunk)] + parser.close()
    return normalize(pieces)


def xml_call(name: str, params: dict[str, str]) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


def test_values_are_typed_by_the_schema() -> None:
    text = xml_call(
        "forecast",
        {
            "city": "123",
            "days": "3",
            "ratio": "0.5",
            "metric": "true",
            "filters": '{"rain": true}',
            "tags": '["a", "b"]',
            "maybe": "null",
        },
    )
    [piece] = calls(parse("Checking.\n" + text))
    assert piece == CallPiece(
        "forecast",
        {
            "city": "123",
            "days": 3,
            "ratio": 0.5,
            "metric": True,
            "filters": {"rain": True},
            "tags": ["a", "b"],
            "maybe": None,
        },
        text,
        "qwen3_coder",
    )


def test_multi_line_string_values_keep_their_inner_newlines() -> None:
    text = xml_call("forecast", {"city": "line one\nline two"})
    assert calls(parse(text))[0].arguments == {"city": "line one\nline two"}


def test_a_value_that_does_not_fit_its_type_is_kept_as_written() -> None:
    text = xml_call("forecast", {"days": "three"})
    assert calls(parse(text))[0].arguments == {"days": "three"}


def test_unknown_tools_and_parameters_keep_strings() -> None:
    text = xml_call("other", {"n": "3"})
    assert calls(parse(text)) == [CallPiece("other", {"n": "3"}, text, "qwen3_coder")]


def test_a_call_without_parameters() -> None:
    text = "<tool_call><function=now></function></tool_call>"
    assert calls(parse(text)) == [CallPiece("now", {}, text, "qwen3_coder")]


def test_several_calls_in_a_turn() -> None:
    text = xml_call("now", {}) + "\n" + xml_call("forecast", {"days": "2"})
    assert [(p.name, p.arguments) for p in calls(parse(text))] == [
        ("now", {}),
        ("forecast", {"days": 2}),
    ]


def test_an_unclosed_function_is_invalid() -> None:
    [piece] = calls(parse("<tool_call><function=forecast><parameter=days>3</tool_call>"))
    assert isinstance(piece, InvalidPiece)
    assert piece.name == "forecast"
    assert "<function=forecast> was never closed" in piece.reason


def test_a_whole_call_without_its_closing_tag_at_end_of_stream() -> None:
    text = "<tool_call>\n<function=forecast>\n<parameter=days>\n4\n</parameter>\n</function>\n"
    assert calls(parse(text)) == [CallPiece("forecast", {"days": 4}, text, "qwen3_coder")]


def test_a_body_cut_inside_the_function_at_end_of_stream_is_invalid() -> None:
    [piece] = calls(parse("<tool_call>\n<function=forecast>\n<parameter=days>\n4"))
    assert isinstance(piece, InvalidPiece)


@FAST
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["forecast", "now"]),
            st.dictionaries(st.sampled_from(["days", "city"]), st.integers(0, 99), max_size=2),
        ),
        max_size=3,
    ),
    st.data(),
)
def test_xml_calls_whatever_the_chunking(
    items: list[tuple[str, dict[str, int]]], data: st.DataObject
) -> None:
    text = "x\n".join(xml_call(n, {k: str(v) for k, v in a.items()}) for n, a in items)
    whole = parse(text)
    assert parse(text, split(text, data)) == whole
    assert parse(text, list(text)) == whole
    expected = [
        (n, {k: v if k == "days" and n == "forecast" else str(v) for k, v in a.items()})
        for n, a in items
    ]
    assert [(n, a) for n, a, _ in summary(whole)] == expected
