"""The streaming text parser: every call format, malformed calls, dispatch timing, chunking."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentrt.parsing import CallPiece, InvalidPiece, ParsedPiece, TagSpec, TextPiece, ToolCallParser
from agentrt.parsing.toolcalls import JSON_LIMIT

TAGS = (
    TagSpec("calc"),
    TagSpec("wiki_search", param="query", split="|"),
    TagSpec("echo", param="text"),
    TagSpec("now"),
)


def normalize(pieces: Iterable[ParsedPiece]) -> list[ParsedPiece]:
    """Pieces with consecutive text merged: where text is cut is not part of the contract."""
    out: list[ParsedPiece] = []
    for piece in pieces:
        if isinstance(piece, TextPiece) and out and isinstance(out[-1], TextPiece):
            out[-1] = TextPiece(out[-1].text + piece.text)
        else:
            out.append(piece)
    return out


def parse_chunks(chunks: Iterable[str], tags: Iterable[TagSpec] = TAGS) -> list[ParsedPiece]:
    parser = ToolCallParser(tags)
    pieces: list[ParsedPiece] = []
    for chunk in chunks:
        pieces += parser.feed(chunk)
    pieces += parser.close()
    assert all(p.text for p in pieces if isinstance(p, TextPiece))
    return normalize(pieces)


def parse(text: str, tags: Iterable[TagSpec] = TAGS) -> list[ParsedPiece]:
    return parse_chunks([text], tags)


def visible(pieces: Iterable[ParsedPiece]) -> str:
    return "".join(p.text for p in pieces if isinstance(p, TextPiece))


def calls(pieces: Iterable[ParsedPiece]) -> list[CallPiece | InvalidPiece]:
    return [p for p in pieces if not isinstance(p, TextPiece)]


def only_call(text: str) -> CallPiece:
    [piece] = calls(parse(text))
    assert isinstance(piece, CallPiece)
    return piece


def only_invalid(text: str) -> InvalidPiece:
    [piece] = calls(parse(text))
    assert isinstance(piece, InvalidPiece)
    return piece


def dispatch_points(text: str, tags: Iterable[TagSpec] = TAGS) -> list[tuple[int, ParsedPiece]]:
    """Feed one character at a time; each call with the index of the character that freed it."""
    parser = ToolCallParser(tags)
    out = [(i, p) for i, char in enumerate(text) for p in parser.feed(char)]
    out += [(len(text), p) for p in parser.close()]
    return [(i, p) for i, p in out if not isinstance(p, TextPiece)]


# --- tool tags ---------------------------------------------------------------------------------


def test_tag_with_json_arguments() -> None:
    text = 'Let me compute. <calc>{"expression": "2+2"}</calc> Done.'
    pieces = parse(text)
    assert pieces == [
        TextPiece("Let me compute. "),
        CallPiece("calc", {"expression": "2+2"}, '<calc>{"expression": "2+2"}</calc>', "tag"),
        TextPiece(" Done."),
    ]


def test_tag_body_is_stripped_and_an_empty_body_means_no_arguments() -> None:
    assert only_call('<calc>\n  {"a": 1}\n</calc>').arguments == {"a": 1}
    assert only_call("<now></now>").arguments == {}
    assert only_call("<now> \n </now>").arguments == {}


def test_tag_param_takes_a_plain_text_body() -> None:
    piece = only_call("<echo>  hello there  </echo>")
    assert piece == CallPiece(
        "echo", {"text": "hello there"}, "<echo>  hello there  </echo>", "tag"
    )


def test_tag_param_still_accepts_json() -> None:
    assert only_call('<echo>{"text": "hi"}</echo>').arguments == {"text": "hi"}


def test_split_tag_gives_one_call_per_part_in_order() -> None:
    text = "<wiki_search>capital of France|capital of Germany</wiki_search>"
    assert calls(parse(text)) == [
        CallPiece("wiki_search", {"query": "capital of France"}, text, "tag"),
        CallPiece("wiki_search", {"query": "capital of Germany"}, text, "tag"),
    ]


def test_split_tag_strips_parts_and_drops_empty_ones() -> None:
    pieces = calls(parse("<wiki_search> a | |b ||</wiki_search>"))
    assert [p.arguments for p in pieces if isinstance(p, CallPiece)] == [
        {"query": "a"},
        {"query": "b"},
    ]


def test_split_tag_with_nothing_in_it_is_invalid() -> None:
    piece = only_invalid("<wiki_search> | </wiki_search>")
    assert piece.name == "wiki_search"
    assert piece.reason.startswith("<wiki_search> is empty")


def test_tags_are_found_mid_line_and_next_to_each_other() -> None:
    pieces = parse('a<calc>{"x": 1}</calc><now></now>b')
    assert [type(p).__name__ for p in pieces] == [
        "TextPiece",
        "CallPiece",
        "CallPiece",
        "TextPiece",
    ]
    assert visible(pieces) == "ab"


def test_tag_with_invalid_json_names_the_json_error() -> None:
    piece = only_invalid('<calc>{"a": 1 "b": 2}</calc>')
    assert piece.name == "calc"
    assert piece.raw == '<calc>{"a": 1 "b": 2}</calc>'
    assert piece.reason.startswith(
        "arguments of <calc> are not valid JSON: Expecting ',' delimiter (line 1 column 9)."
    )


def test_tag_without_param_given_plain_text_is_told_to_use_json() -> None:
    piece = only_invalid("<calc>2+2</calc>")
    assert piece.name == "calc"
    assert "<calc> takes its arguments as a JSON object" in piece.reason
    assert '<calc>{"parameter": "value"}</calc>' in piece.reason


def test_unregistered_tags_are_text() -> None:
    text = "<unknown_tag>x</unknown_tag> <b>bold</b> <calcx>1</calcx> </calc> <CALC>1</CALC>"
    assert parse(text) == [TextPiece(text)]


def test_unclosed_tag_at_close_is_invalid() -> None:
    pieces = parse('Sure. <calc>{"expression": "1+1"}')
    assert pieces[0] == TextPiece("Sure. ")
    piece = pieces[1]
    assert isinstance(piece, InvalidPiece)
    assert piece.raw == '<calc>{"expression": "1+1"}'
    assert piece.name == "calc"
    assert piece.reason == "<calc> was never closed: end the call with </calc>."


def test_first_closing_tag_ends_the_body() -> None:
    piece = only_call("<echo>a</echo>")
    assert piece.arguments == {"text": "a"}
    assert visible(parse("<echo>a</echo>b</echo>")) == "b</echo>"


# --- Hermes / Qwen -----------------------------------------------------------------------------


def test_hermes_call() -> None:
    body = '{"name": "lookup", "arguments": {"q": "x"}}'
    text = f"Checking.\n<tool_call>\n{body}\n</tool_call>\nWaiting."
    pieces = parse(text)
    assert pieces == [
        TextPiece("Checking.\n"),
        CallPiece("lookup", {"q": "x"}, f"<tool_call>\n{body}\n</tool_call>", "hermes"),
        TextPiece("\nWaiting."),
    ]


def test_hermes_arguments_may_be_a_json_string() -> None:
    text = '<tool_call>{"name": "calc", "arguments": "{\\"expression\\": \\"1+1\\"}"}</tool_call>'
    assert only_call(text).arguments == {"expression": "1+1"}


def test_hermes_list_body_gives_several_calls() -> None:
    body = json.dumps([{"name": "a", "arguments": {"n": 1}}, {"name": "b", "arguments": {}}])
    pieces = calls(parse(f"<tool_call>{body}</tool_call>"))
    assert [(p.name, p.arguments) for p in pieces if isinstance(p, CallPiece)] == [
        ("a", {"n": 1}),
        ("b", {}),
    ]


def test_hermes_missing_arguments_mean_none() -> None:
    assert only_call('<tool_call>{"name": "now"}</tool_call>').arguments == {}


def test_hermes_unknown_tool_is_still_a_call() -> None:
    assert only_call('<tool_call>{"name": "nope", "arguments": {}}</tool_call>').name == "nope"


@pytest.mark.parametrize(
    ("body", "reason", "name"),
    [
        (
            '{"name": "calc", "arguments": {]}',
            "the <tool_call> body is not valid JSON: Expecting property name enclosed in double"
            " quotes (line 1 column 32).",
            None,
        ),
        ('{"arguments": {}}', 'the <tool_call> object has no "name" string', None),
        ('{"name": 7, "arguments": {}}', 'the <tool_call> object has no "name" string', None),
        (
            '{"name": "calc", "arguments": [1]}',
            'the arguments of "calc" must be a JSON object, not a list',
            "calc",
        ),
        (
            '{"name": "calc", "arguments": "2+2"}',
            'the arguments of "calc" are a string that does not hold a JSON object',
            "calc",
        ),
        ('"calc"', "a <tool_call> holds a JSON object, not a string", None),
        ("[]", "the <tool_call> list is empty", None),
    ],
)
def test_malformed_hermes_calls(body: str, reason: str, name: str | None) -> None:
    piece = only_invalid(f"<tool_call>{body}</tool_call>")
    assert piece.reason.startswith(reason)
    assert piece.name == name
    assert piece.raw == f"<tool_call>{body}</tool_call>"


def test_hermes_list_with_a_bad_entry_keeps_the_good_ones() -> None:
    pieces = calls(parse('<tool_call>[{"name": "a"}, 3]</tool_call>'))
    assert isinstance(pieces[0], CallPiece)
    assert isinstance(pieces[1], InvalidPiece)


def test_unclosed_tool_call_with_a_whole_body_is_a_call() -> None:
    # Generation stopped at end-of-sequence before "</tool_call>": the JSON is complete.
    text = '<tool_call>\n{"name": "calc", "arguments": {"x": 1}}\n'
    assert parse(text) == [CallPiece("calc", {"x": 1}, text, "hermes")]
    assert calls(parse('<tool_call>[{"name": "now"}, {"name": "calc"}]')) == [
        CallPiece("now", {}, '<tool_call>[{"name": "now"}, {"name": "calc"}]', "hermes"),
        CallPiece("calc", {}, '<tool_call>[{"name": "now"}, {"name": "calc"}]', "hermes"),
    ]


def test_unclosed_tool_call_is_invalid_and_keeps_the_name() -> None:
    piece = only_invalid('<tool_call>{"name": "calc", "arguments": {"x": ')
    assert piece.name == "calc"
    assert piece.reason == "<tool_call> was never closed: end the call with </tool_call>."
    assert only_invalid("<tool_call>{").name is None


# --- bare JSON ---------------------------------------------------------------------------------


def test_bare_json_call() -> None:
    obj = '{"name": "calc", "arguments": {"expression": "2+2"}}'
    assert parse(obj) == [CallPiece("calc", {"expression": "2+2"}, obj, "json")]


def test_bare_json_call_on_its_own_indented_line() -> None:
    obj = '{"tool": "calc", "args": {"expression": "2+2"}}'
    pieces = parse(f"I will compute.\n  {obj}\nthen answer.")
    assert pieces == [
        TextPiece("I will compute.\n  "),
        CallPiece("calc", {"expression": "2+2"}, obj, "json"),
        TextPiece("\nthen answer."),
    ]


@pytest.mark.parametrize(
    "obj",
    [
        '{"name": "calc", "parameters": {"expression": "2+2"}}',
        '{"name": "calc", "arguments": "{\\"expression\\": \\"2+2\\"}"}',
        '{\n  "name": "calc",\n  "arguments": {\n    "expression": "2+2"\n  }\n}',
    ],
)
def test_bare_json_key_variants(obj: str) -> None:
    assert only_call(obj).arguments == {"expression": "2+2"}


def test_bare_json_with_a_registered_name_needs_no_arguments_key() -> None:
    assert only_call('{"name": "now"}') == CallPiece("now", {}, '{"name": "now"}', "json")


def test_bare_json_that_is_not_call_shaped_is_text() -> None:
    for text in [
        '{"name": "Alice", "age": 3}',
        '{"a": {"b": "}"}}',
        "{}",
        '{"name": 5, "arguments": {}}',
        '{"arguments": {}}',
    ]:
        assert parse(text) == [TextPiece(text)], text


def test_json_mid_line_naming_no_registered_tool_is_text() -> None:
    text = 'Call it like x = {"name": "calculator", "arguments": {}} please.'
    assert parse(text) == [TextPiece(text)]


def test_braces_in_prose_are_text() -> None:
    text = "Sets look like {1, 2}.\n{this is not json}\n{ } and {\n}\n  {x}"
    assert parse(text) == [TextPiece(text)]


def test_nested_braces_and_escaped_quotes_inside_strings() -> None:
    args = {"code": 'if (a) { b("}\\"{") }', "nested": {"deep": {"q": '"\\\\'}}}
    obj = json.dumps({"name": "run", "arguments": args})
    [(at, piece)] = dispatch_points(obj + " tail")
    assert piece == CallPiece("run", args, obj, "json")
    assert at == len(obj) - 1


def test_malformed_bare_json_that_looks_like_a_call_is_invalid() -> None:
    obj = '{"name": "calc", "arguments": {"expression": "2+2",}}'
    piece = only_invalid(f"{obj}\n")
    assert piece.raw == obj
    assert piece.name == "calc"
    assert piece.reason.startswith(
        'the call of "calc" is not valid JSON: Expecting property name enclosed in double quotes'
        " (line 1 column 52)."
    )


def test_malformed_bare_json_naming_a_registered_tag_is_invalid() -> None:
    assert only_invalid('{"name": "now",}').name == "now"


def test_malformed_bare_json_that_does_not_look_like_a_call_is_text() -> None:
    text = '{"name": "Bob", age: 3}'
    assert parse(text) == [TextPiece(text)]


def test_bare_json_with_bad_string_arguments_is_invalid() -> None:
    piece = only_invalid('{"name": "calc", "arguments": "nope"}')
    assert piece.reason.startswith('the arguments of "calc" are a string that does not hold')


def test_json_candidate_is_released_at_once_when_not_json() -> None:
    parser = ToolCallParser(TAGS)
    assert parser.feed("{") == []
    assert parser.feed("  ") == []
    assert parser.feed("x") == [TextPiece("{  x")]


def test_a_brace_after_an_abandoned_candidate_can_start_a_call() -> None:
    obj = '{"name": "now"}'
    assert parse("{\n" + obj) == [TextPiece("{\n"), CallPiece("now", {}, obj, "json")]


def test_unbalanced_json_at_close_is_text() -> None:
    text = 'intro\n{"name": "calc", "arguments": {"expression": "2+2"}'
    assert parse(text) == [TextPiece(text)]


def test_json_candidate_past_the_limit_is_released_as_text() -> None:
    long_value = "x" * JSON_LIMIT
    junk = '{"name": "calc", "arguments": {"a": "' + long_value  # never closes
    call = '{"name": "now"}'
    text = f"{junk}\n{call}\nend"
    expected = [TextPiece(junk + "\n"), CallPiece("now", {}, call, "json"), TextPiece("\nend")]
    assert parse(text) == expected
    size = 7919
    assert parse_chunks(text[k : k + size] for k in range(0, len(text), size)) == expected
    # The decision is made at the limit, not at the end of the stream.
    parser = ToolCallParser(TAGS)
    assert parser.feed(junk[:JSON_LIMIT]) == []
    assert parser.feed(junk[JSON_LIMIT]) == [TextPiece(junk[: JSON_LIMIT + 1])]


@pytest.mark.parametrize(("last_line", "line_start"), [("x", False), ("", True), ("  ", True)])
def test_a_fence_right_after_a_released_candidate(last_line: str, line_start: bool) -> None:
    head = '{"name": "\n'  # looks like a call on its first line, so it is held to the limit
    junk = head + "x" * (JSON_LIMIT - len(head) - len(last_line) - 1) + "\n" + last_line
    assert len(junk) == JSON_LIMIT
    obj = '{"name": "calc", "arguments": {}}'
    # A fence opens only at a line's start (and is then not shown); in mid-line its ticks are
    # text, and the call on the next line is read as a bare one.
    pieces = parse(f"{junk}```json\n{obj}\n```")
    assert [(p.name, p.arguments) for p in calls(pieces)] == [("calc", {})]
    assert visible(pieces) == (junk if line_start else f"{junk}```json\n\n```")


def test_json_call_just_under_the_limit_is_a_call() -> None:
    head = '{"name": "echo", "arguments": {"text": "'
    value = "y" * (JSON_LIMIT - len(head) - 3)
    obj = head + value + '"}}'
    assert len(obj) == JSON_LIMIT
    assert only_call(obj).arguments == {"text": value}


# --- fenced JSON -------------------------------------------------------------------------------


@pytest.mark.parametrize("opener", ["```json", "```", "  ```json  ", "```\t"])
def test_fenced_call(opener: str) -> None:
    obj = '{"name": "calc", "arguments": {"expression": "6*7"}}'
    text = f"Computing:\n{opener}\n{obj}\n```\nThe answer follows."
    pieces = parse(text)
    indent = opener[: len(opener) - len(opener.lstrip())]
    fence = opener.lstrip() + "\n" + obj
    assert pieces == [
        TextPiece("Computing:\n" + indent),
        CallPiece("calc", {"expression": "6*7"}, fence, "json"),
        TextPiece("The answer follows."),
    ]


def test_fenced_call_is_dispatched_at_its_brace_and_the_fence_is_consumed_later() -> None:
    obj = '{"name": "now"}'
    parser = ToolCallParser(TAGS)
    assert parser.feed("```json\n" + obj[:-1]) == []
    assert parser.feed("}") == [CallPiece("now", {}, "```json\n" + obj, "json")]
    assert parser.feed("\n``") == []
    assert parser.feed("`") == []
    assert parser.feed("\nafter") == [TextPiece("after")]
    assert parser.close() == []


def test_fenced_call_at_end_of_stream() -> None:
    assert visible(parse('```json\n{"name": "now"}\n```')) == ""
    assert visible(parse('```json\n{"name": "now"}\n```  ')) == ""


def test_fenced_call_without_closing_fence_releases_what_follows() -> None:
    pieces = parse('```json\n{"name": "now"}\nNo fence here.')
    assert [type(p).__name__ for p in pieces] == ["CallPiece", "TextPiece"]
    assert visible(pieces) == "\nNo fence here."


def test_fenced_malformed_call_is_invalid() -> None:
    text = '```json\n{"name": "calc", "arguments": {"expression": 2+2}}\n```\n'
    piece = only_invalid(text)
    assert piece.raw == text[: text.rindex("}") + 1]
    assert piece.reason.startswith('the call of "calc" is not valid JSON: Expecting')
    assert visible(parse(text)) == ""


def test_text_right_after_a_closing_fence_is_visible() -> None:
    pieces = parse('```json\n{"name": "now"}\n```Done\n')
    assert visible(pieces) == "Done\n"


def test_an_object_after_a_fenced_call_on_its_own_line_is_a_bare_call() -> None:
    first, second = '{"name": "now"}', '{"name": "calc", "arguments": {}}'
    pieces = parse(f"```json\n{first}\n{second}\n```\n")
    assert calls(pieces) == [
        CallPiece("now", {}, f"```json\n{first}", "json"),
        CallPiece("calc", {}, second, "json"),
    ]
    assert visible(pieces) == "\n\n```\n"


def test_an_empty_fence_before_a_call_fence_stays_visible() -> None:
    obj = '{"name": "now"}'
    pieces = parse(f"```\n```json\n{obj}\n```\n")
    assert pieces == [TextPiece("```\n"), CallPiece("now", {}, f"```json\n{obj}", "json")]


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"a": 1, "b": [1, 2]}\n```\nnext',
        "```\nprint('hi')\n```\n",
        '```json\n{"name": "Alice"}\n```',
        "```python\n{'a': 1}\n```\n",
        "```\n{x}\n```",
        "``` json\n{}\n```",
        "```json\n",
        "```json",
        "`` `\n``\n",
    ],
)
def test_fences_without_a_call_are_visible_as_written(text: str) -> None:
    assert parse(text) == [TextPiece(text)]


@pytest.mark.parametrize("opener", ["``", "``` json", "````", "```jsonx", "x```"])
def test_a_line_that_is_not_a_fence_opener_leaves_a_bare_call_after_it(opener: str) -> None:
    obj = '{"name": "now"}'
    assert parse(f"{opener}\n{obj}") == [
        TextPiece(f"{opener}\n"),
        CallPiece("now", {}, obj, "json"),
    ]


def test_two_fences_with_a_call_in_the_second() -> None:
    text = '```json\n{"a": 1}\n```\n```json\n{"name": "now"}\n```\nend'
    pieces = parse(text)
    assert visible(pieces) == '```json\n{"a": 1}\n```\nend'
    assert calls(pieces) == [CallPiece("now", {}, '```json\n{"name": "now"}', "json")]


# --- prose that must stay text -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "if a < b and c > d then",
        "x<y",
        "a <= b, <-- arrow, <<>>, < >, <",
        "<html><body><p>hi</p></body></html>",
        "</calc> <tool_cal> <tool_calls> <tool_call",
        "{} {{ }} }{ {\n}",
        "`code` and ``more`` and ```fence``` inline",
        "Ünïcödé ✓ 日本語 🙂 <日本> {🙂}\n",
        "",
    ],
)
def test_prose_is_text(text: str) -> None:
    assert visible(parse(text)) == text
    assert calls(parse(text)) == []


def test_text_is_released_as_soon_as_it_cannot_be_a_call() -> None:
    parser = ToolCallParser(TAGS)
    assert parser.feed("Hello <") == [TextPiece("Hello ")]
    assert parser.feed("c") == []
    assert parser.feed("x") == [TextPiece("<cx")]
    assert parser.feed("x<y") == [TextPiece("x<y")]
    assert parser.feed("<tool_") == []
    assert parser.feed("x") == [TextPiece("<tool_x")]
    assert parser.feed("line\n") == [TextPiece("line\n")]
    assert parser.feed("  ") == [TextPiece("  ")]
    assert parser.feed("`") == []
    assert parser.feed("x") == [TextPiece("`x")]
    assert parser.close() == []


def test_close_releases_a_held_prefix() -> None:
    parser = ToolCallParser(TAGS)
    assert parser.feed("a <tool") == [TextPiece("a ")]
    assert parser.close() == [TextPiece("<tool")]


# --- dispatch timing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        '<calc>{"expression": "2+2"}</calc>',
        "<wiki_search>a|b</wiki_search>",
        '<tool_call>{"name": "x", "arguments": {}}</tool_call>',
        '{"name": "calc", "arguments": {"a": "{}"}}',
        '```json\n{"name": "calc", "arguments": {"a": "{}"}}',
        '<calc>{"a" 1}</calc>',
    ],
)
def test_a_call_is_returned_by_the_feed_that_completes_it(call: str) -> None:
    text = f"Before.\n{call}\n```\nmore text after"
    points = dispatch_points(text)
    assert points
    assert {at for at, _ in points} == {text.index(call) + len(call) - 1}


def test_parser_is_reusable_after_close() -> None:
    parser = ToolCallParser(TAGS)
    parser.feed("<calc>{")
    assert len(parser.close()) == 1
    assert parser.feed('{"name": "now"}') == [CallPiece("now", {}, '{"name": "now"}', "json")]


@pytest.mark.parametrize("spec", [TagSpec("x", split="|"), TagSpec("x", param="p", split="")])
def test_split_without_a_param_is_refused(spec: TagSpec) -> None:
    with pytest.raises(ValueError, match="split needs"):
        ToolCallParser([spec])


def test_two_different_specs_of_one_name_are_refused() -> None:
    ToolCallParser([TagSpec("a"), TagSpec("a")])
    with pytest.raises(ValueError, match="twice"):
        ToolCallParser([TagSpec("a"), TagSpec("a", param="p")])


def test_names_that_cannot_be_tags_are_left_out() -> None:
    parser_tags = [TagSpec(""), TagSpec("a b"), TagSpec("a>b"), TagSpec("x/y")]
    text = "<a b>1</a b> <a>b>1</a>b> <x/y>1</x/y> <>1</>"
    assert parse(text, parser_tags) == [TextPiece(text)]
    hermes = '<tool_call>{"name": "tool_call", "arguments": {}}</tool_call>'
    assert calls(parse(hermes, [TagSpec("tool_call")])) == [
        CallPiece("tool_call", {}, hermes, "hermes")
    ]


def test_long_stream_fed_one_character_at_a_time() -> None:
    unit = (
        "Prose with a < b, {braces} and `ticks`.\n"
        '{"name": "calc", "arguments": {"expression": "2+2"}}\n'
        "<wiki_search>a|b</wiki_search> <tool_call>"
        '{"name": "x", "arguments": {}}</tool_call>\n'
        '```json\n{"name": "now"}\n```\n'
    )
    units = 200_000 // len(unit)
    text = unit * units + "<echo>" + "z" * 50_000 + "</echo>\n{" + '"' + "q" * 60_000
    parser = ToolCallParser(TAGS)
    pieces: list[ParsedPiece] = []
    for char in text:
        pieces += parser.feed(char)
    pieces += parser.close()
    assert normalize(pieces) == parse(text)
    assert len(calls(pieces)) == 5 * units + 1


# --- properties --------------------------------------------------------------------------------

PROSE_CHARS = list("xyzXYZ 0\n\t<>{}[]:,.|/=-é日🙂")
KEY = st.text(st.sampled_from(list("abc_é")), min_size=1, max_size=4)
# String values hold everything that could confuse a scanner except "<", which no tag body
# may contain (a "</calc>" inside it would close the tag).
STRING = st.text(st.sampled_from(list('xy {}[]"\\\n`:,|日🙂/')), max_size=8)
SCALAR = st.none() | st.booleans() | st.integers(-5, 5) | STRING
VALUE = st.recursive(
    SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEY, inner, max_size=3),
    max_leaves=6,
)
ARGS = st.dictionaries(KEY, VALUE, max_size=3)
NAMES = st.sampled_from(["calc", "lookup", "now", "wiki_search"])
OFFERED = st.sampled_from(["calc", "now", "wiki_search"])
"""Names a bare or fenced call may take anywhere: after prose, one naming no offered tool is an
example, not a call (see the JSON-anywhere conformance tests)."""

Expected = list[tuple[str, dict[str, Any], str] | None]
"""Per segment: each call as (name, arguments, format); None stands for an invalid call."""


def dumps(value: Any, draw: st.DrawFn) -> str:
    return json.dumps(
        value,
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, None, 2])),
    )


@st.composite
def json_call(
    draw: st.DrawFn, names: st.SearchStrategy[str] = NAMES
) -> tuple[str, str, dict[str, Any]]:
    """A call object as JSON text, with its name and arguments."""
    name = draw(names)
    args = draw(ARGS)
    name_key = draw(st.sampled_from(["name", "tool"]))
    args_key = draw(st.sampled_from(["arguments", "args", "parameters"]))
    as_string = draw(st.booleans())
    obj = {name_key: name, args_key: json.dumps(args) if as_string else args}
    return dumps(obj, draw), name, args


@st.composite
def call_segment(draw: st.DrawFn) -> tuple[str, str, Expected]:
    """A well-formed call in some format: (source, its visible text, the calls it makes)."""
    kind = draw(st.sampled_from(["bare", "fenced", "hermes", "hermes_list", "tag", "split"]))
    if kind == "bare":
        source, name, args = draw(json_call(OFFERED))
        return f"\n{source}\n", "\n\n", [(name, args, "json")]
    if kind == "fenced":
        source, name, args = draw(json_call(OFFERED))
        opener = draw(st.sampled_from(["```json", "```", " ```json "]))
        gap = draw(st.sampled_from(["", "\n", " \n "]))
        text = f"\n{opener}\n{gap}{source}\n```\n"
        return text, "\n" + opener[: len(opener) - len(opener.lstrip())], [(name, args, "json")]
    if kind == "hermes":
        name, args = draw(NAMES), draw(ARGS)
        body = dumps({"name": name, "arguments": args}, draw)
        return f"<tool_call>{body}</tool_call>", "", [(name, args, "hermes")]
    if kind == "hermes_list":
        items = draw(st.lists(st.tuples(NAMES, ARGS), min_size=1, max_size=3))
        body = dumps([{"name": n, "arguments": a} for n, a in items], draw)
        return f"<tool_call>\n{body}\n</tool_call>", "", [(n, a, "hermes") for n, a in items]
    if kind == "tag":
        args = draw(ARGS)
        return f"<calc>{dumps(args, draw)}</calc>", "", [("calc", args, "tag")]
    part = st.text(st.sampled_from(list("xy z日🙂{}")), min_size=1, max_size=6).filter(
        lambda s: bool(s.strip()) and not s.strip().startswith("{")
    )
    parts = draw(st.lists(part, min_size=1, max_size=3))
    body = "|".join(parts)
    return (
        f"<wiki_search>{body}</wiki_search>",
        "",
        [("wiki_search", {"query": p.strip()}, "tag") for p in parts],
    )


MALFORMED = [
    ('<tool_call>{"name": "calc", "arguments": {]}</tool_call>', ""),
    ('<tool_call>{"arguments": {}}</tool_call>', ""),
    ('<tool_call>{"name": "calc", "arguments": [1]}</tool_call>', ""),
    ('<calc>{"a" 1}</calc>', ""),
    ("<calc>2+2</calc>", ""),
    ('\n{"name": "calc", "arguments": {"x": 1,}}\n', "\n\n"),
    ('\n```json\n{"name": "calc", "arguments": {"x": 1,}}\n```\n', "\n"),
]


@st.composite
def segment(draw: st.DrawFn, prose_chars: list[str]) -> tuple[str, str, Expected]:
    choice = draw(st.integers(0, 2))
    if choice == 0:
        prose = "".join(draw(st.lists(st.sampled_from(prose_chars), max_size=12)))
        return prose, prose, []
    if choice == 1:
        return draw(call_segment())
    source, shown = draw(st.sampled_from(MALFORMED))
    return source, shown, [None]


def document(prose_chars: list[str]) -> st.SearchStrategy[list[tuple[str, str, Expected]]]:
    return st.lists(segment(prose_chars), max_size=8)


def split(text: str, data: st.DataObject) -> list[str]:
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12))
    bounds = [0, *sorted(cuts), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def summary(pieces: Iterable[ParsedPiece]) -> Expected:
    return [
        (p.name, p.arguments, p.format) if isinstance(p, CallPiece) else None for p in calls(pieces)
    ]


def assert_chunking_invariant(text: str, data: st.DataObject) -> list[ParsedPiece]:
    whole = parse(text)
    assert parse_chunks(split(text, data)) == whole
    assert parse_chunks(text) == whole  # one character at a time
    return whole


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(document([*PROSE_CHARS, "`", "``", "```"]), st.data())
def test_generated_calls_are_found_whatever_the_chunking(
    segments: list[tuple[str, str, Expected]], data: st.DataObject
) -> None:
    text = "".join(source for source, _, _ in segments)
    whole = assert_chunking_invariant(text, data)
    assert summary(whole) == [call for _, _, expected in segments for call in expected]


@FAST
@given(document(PROSE_CHARS))
def test_generated_documents_show_exactly_their_prose(
    segments: list[tuple[str, str, Expected]],
) -> None:
    text = "".join(source for source, _, _ in segments)
    assert visible(parse(text)) == "".join(shown for _, shown, _ in segments)


FRAGMENTS = [
    "<tool_call>",
    "</tool_call>",
    "<calc>",
    "</calc>",
    "<wiki_search>",
    "</wiki_search>",
    "<echo>",
    "<now></now>",
    '{"name": "calc", ',
    '"arguments": {',
    '{"name": "now"}',
    '"',
    "\\",
    "\\\\",
    "{",
    "}",
    "[",
    "]",
    "```",
    "```json\n",
    "`",
    "json",
    "\n",
    " ",
    "|",
    "<",
    ">",
    "x",
    "日",
]


@FAST
@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=3), max_size=30), st.data())
def test_fragment_soup_is_chunking_invariant(fragments: list[str], data: st.DataObject) -> None:
    assert_chunking_invariant("".join(fragments), data)


@FAST
@given(st.text(), st.data())
def test_arbitrary_text_never_raises_and_is_chunking_invariant(
    text: str, data: st.DataObject
) -> None:
    whole = assert_chunking_invariant(text, data)
    assert len(visible(whole)) <= len(text)
