"""Conformance: DeepSeek V3/R1/V3.1, GLM-4.5 ``<arg_key>``, Kimi K2 and MiniMax M2 ``<invoke>``
calls, written from each family's public chat template (cases of our own): one and several
calls, each dispatched from the character that completes it, prose that mentions the markup,
malformed and unclosed calls, reasoning first, schema typing, and chunking."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentrt.parsing import (
    CallPiece,
    ContentPiece,
    InvalidPiece,
    ReasoningSplitter,
    TagSpec,
    TextPiece,
    ToolCallParser,
)
from tests.parsing.test_toolcalls import FAST, calls, normalize, split

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "units": {"type": ["string", "null"]},
        "filters": {"type": "object"},
        "tags": {"type": "array"},
        "exact": {"type": "boolean"},
    },
}
TOOLS = (TagSpec("forecast", parameters=SCHEMA), TagSpec("now"), TagSpec("lookup", "query"))


def parse(text: str, chunks: list[str] | None = None) -> list[Any]:
    parser = ToolCallParser(TOOLS)
    pieces = [p for chunk in (chunks or [text]) for p in parser.feed(chunk)] + parser.close()
    return normalize(pieces)


def found(text: str) -> list[tuple[str, dict[str, Any], str] | InvalidPiece]:
    return [
        (p.name, p.arguments, p.format) if isinstance(p, CallPiece) else p
        for p in calls(parse(text))
    ]


def visible(text: str) -> str:
    return "".join(p.text for p in parse(text) if isinstance(p, TextPiece))


def dispatch_points(text: str) -> list[int]:
    """The index of each character whose chunk returned a call (fed one at a time)."""
    parser = ToolCallParser(TOOLS)
    return [i for i, c in enumerate(text) for p in parser.feed(c) if not isinstance(p, TextPiece)]


def invalid(text: str) -> InvalidPiece:
    [piece] = calls(parse(text))
    assert isinstance(piece, InvalidPiece)
    return piece


def after_reasoning(text: str, starts_in_reasoning: bool = False) -> tuple[str, list[Any]]:
    """What react does: the splitter takes the reasoning off, the parser reads the content."""
    splitter = ReasoningSplitter(starts_in_reasoning)
    parser = ToolCallParser(TOOLS)
    reasoning, pieces = [], []
    for char in text:  # one character at a time, the hardest chunking
        for part in splitter.feed(char):
            if isinstance(part, ContentPiece):
                pieces += parser.feed(part.text)
            else:
                reasoning.append(part.text)
    for part in splitter.close():
        if isinstance(part, ContentPiece):
            pieces += parser.feed(part.text)
    return "".join(reasoning), normalize(pieces + parser.close())


# --- DeepSeek V3 / R1 / V3.1 -------------------------------------------------------------------

CALLS_BEGIN, CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
BEGIN, SEP, END = "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>"


def deepseek(name: str, arguments: str) -> str:
    """One call as the V3 and R1 templates write it: type, name, fenced JSON."""
    return f"{BEGIN}function{SEP}{name}\n```json\n{arguments}\n```{END}"


def test_deepseek_call_in_its_section() -> None:
    call = deepseek("forecast", '{"city": "Oslo", "days": 3}')
    text = f"Let me check.{CALLS_BEGIN}{call}{CALLS_END}"
    assert parse(text) == [
        TextPiece("Let me check."),
        CallPiece("forecast", {"city": "Oslo", "days": 3}, call, "deepseek"),
    ]


def test_deepseek_several_calls_each_dispatched_at_its_end_token() -> None:
    first = deepseek("forecast", '{"city": "Oslo"}')
    second = deepseek("lookup", '{"query": "fjords"}')
    text = f"{CALLS_BEGIN}{first}\n{second}{CALLS_END}"
    assert found(text) == [
        ("forecast", {"city": "Oslo"}, "deepseek"),
        ("lookup", {"query": "fjords"}, "deepseek"),
    ]
    assert dispatch_points(text) == [len(CALLS_BEGIN + first) - 1, len(text) - len(CALLS_END) - 1]
    assert visible(text) == "\n"


def test_deepseek_v31_call_without_type_or_fence() -> None:
    call = f'{BEGIN}forecast{SEP}{{"city": "Lima"}}{END}'
    assert found(CALLS_BEGIN + call + CALLS_END) == [("forecast", {"city": "Lima"}, "deepseek")]


def test_deepseek_any_name_and_no_arguments() -> None:
    """The tokens are unambiguous: an unknown name is a call (the executor refuses it)."""
    assert found(f"{BEGIN}function{SEP}unknown_tool\n```json\n{{}}\n```{END}") == [
        ("unknown_tool", {}, "deepseek")
    ]
    assert found(f"{BEGIN}now{SEP}{END}") == [("now", {}, "deepseek")]


def test_deepseek_after_r1_reasoning() -> None:
    drafted = deepseek("lookup", '{"query": "draft"}')
    call = deepseek("lookup", '{"query": "final"}')
    text = f"I could call {drafted} but first think.</think>\n\n{CALLS_BEGIN}{call}{CALLS_END}"
    reasoning, pieces = after_reasoning(text, starts_in_reasoning=True)
    assert drafted in reasoning
    assert pieces == [TextPiece("\n\n"), CallPiece("lookup", {"query": "final"}, call, "deepseek")]


def test_deepseek_malformed_arguments_name_the_form() -> None:
    piece = invalid(deepseek("forecast", '{"city": Oslo}'))
    assert piece.name == "forecast"
    assert "not a JSON object" in piece.reason
    assert f"function{SEP}NAME" in piece.reason


def test_deepseek_call_without_separator_is_invalid() -> None:
    piece = invalid(f'{BEGIN}forecast {{"city": "Oslo"}}{END}')
    assert SEP in piece.reason
    assert "```json" in piece.reason


def test_deepseek_unclosed_at_end() -> None:
    whole = f'{CALLS_BEGIN}{BEGIN}function{SEP}lookup\n```json\n{{"query": "x"}}\n```'
    assert found(whole) == [("lookup", {"query": "x"}, "deepseek")]
    piece = invalid(f'{BEGIN}function{SEP}lookup\n```json\n{{"query": "x')
    assert piece.name == "lookup"
    assert f"never closed: end the call with {END}" in piece.reason


@pytest.mark.parametrize(
    "text",
    [
        "DeepSeek separates with ｜tool▁sep｜ and ends with tool▁call▁end.",
        "<｜tool▁call and then prose",
        "a < b and <｜ is not a token",
    ],
)
def test_deepseek_lookalikes_are_text(text: str) -> None:
    assert visible(text) == text


# --- GLM-4.5 / 4.6 -----------------------------------------------------------------------------


def glm(name: str, *pairs: tuple[str, str]) -> str:
    body = "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n" for k, v in pairs)
    return f"<tool_call>{name}\n{body}</tool_call>"


def test_glm_values_are_typed_by_the_schema() -> None:
    call = glm(
        "forecast",
        ("city", "007"),
        ("days", "3"),
        ("filters", '{"rain": true}'),
        ("tags", '["a", 1]'),
        ("exact", "false"),
        ("units", "null"),
    )
    arguments = {
        "city": "007",  # a string parameter keeps what was written
        "days": 3,
        "filters": {"rain": True},
        "tags": ["a", 1],
        "exact": False,
        "units": "null",  # "null" is a string too: the schema allows one
    }
    assert parse(call) == [CallPiece("forecast", arguments, call, "glm4")]


def test_glm_value_that_does_not_fit_its_type_is_kept_as_written() -> None:
    assert found(glm("forecast", ("days", "three"))) == [("forecast", {"days": "three"}, "glm4")]


def test_glm_several_blocks_each_dispatched_at_its_closing_tag() -> None:
    first = glm("lookup", ("query", "a <b> c"))
    second = glm("forecast", ("city", "Rome"), ("days", "2"))
    text = f"Two lookups.\n{first}\n{second}"
    assert found(text) == [
        ("lookup", {"query": "a <b> c"}, "glm4"),
        ("forecast", {"city": "Rome", "days": 2}, "glm4"),
    ]
    assert dispatch_points(text) == [text.index(first) + len(first) - 1, len(text) - 1]


def test_glm_multiline_value_and_unknown_parameter() -> None:
    text = glm("lookup", ("query", "line one\nline two"), ("extra", "5"))
    assert found(text) == [("lookup", {"query": "line one\nline two", "extra": "5"}, "glm4")]


def test_glm_bare_name_is_a_call_only_of_an_offered_tool() -> None:
    assert found("<tool_call>now</tool_call>") == [("now", {}, "glm4")]
    assert found("<tool_call>now\n</tool_call>") == [("now", {}, "glm4")]
    piece = invalid("<tool_call>hello</tool_call>")  # a stray word: told the JSON form
    assert "not valid JSON" in piece.reason


def test_glm_after_reasoning() -> None:
    call = glm("lookup", ("query", "x"))
    reasoning, pieces = after_reasoning(f"<think>Maybe {glm('now')}?</think>{call}")
    assert reasoning == f"Maybe {glm('now')}?"
    assert pieces == [CallPiece("lookup", {"query": "x"}, call, "glm4")]


def test_glm_malformed_pairs_name_the_form() -> None:
    piece = invalid("<tool_call>forecast\n<arg_key>city</arg_key>\nOslo\n</tool_call>")
    assert piece.name == "forecast"
    assert "</arg_key>\\nOslo" in piece.reason  # where the pairs stop
    assert "<arg_key>KEY</arg_key>" in piece.reason


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>lookup\n<arg_key>query</arg_key><arg_value>x",
        # Even after a whole pair: a cut-off turn may have had more to say.
        "<tool_call>lookup\n<arg_key>query</arg_key><arg_value>x</arg_value>\n",
    ],
)
def test_glm_unclosed_at_end_is_invalid(text: str) -> None:
    piece = invalid(text)
    assert piece.name == "lookup"
    assert "never closed: end the call with </tool_call>" in piece.reason


@pytest.mark.parametrize(
    "text",
    [
        "GLM writes <arg_key>k</arg_key> and <arg_value>v</arg_value> pairs.",
        "lookup\n<arg_key>query</arg_key>\n<arg_value>x</arg_value>",
    ],
)
def test_glm_pairs_outside_a_tool_call_are_text(text: str) -> None:
    assert visible(text) == text


# --- Kimi K2 -----------------------------------------------------------------------------------

SECTION_BEGIN, SECTION_END = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"


def kimi(head: str, arguments: str) -> str:
    return f"<|tool_call_begin|>{head}<|tool_call_argument_begin|>{arguments}<|tool_call_end|>"


def test_kimi_section_of_several_calls() -> None:
    first = kimi("functions.forecast:0", '{"city": "Kyoto", "days": 2}')
    second = kimi("functions.lookup:1", '{"query": "temples"}')
    text = f"On it.{SECTION_BEGIN}{first}{second}{SECTION_END}"
    assert parse(text) == [
        TextPiece("On it."),
        CallPiece("forecast", {"city": "Kyoto", "days": 2}, first, "kimi_k2"),
        CallPiece("lookup", {"query": "temples"}, second, "kimi_k2"),
    ]
    starts = len("On it." + SECTION_BEGIN)
    assert dispatch_points(text) == [starts + len(first) - 1, starts + len(first + second) - 1]


@pytest.mark.parametrize(
    "head", ["lookup", "functions.lookup", "lookup:12", " functions.lookup:3 "]
)
def test_kimi_prefix_and_index_are_optional(head: str) -> None:
    assert found(kimi(head, '{"query": "x"}')) == [("lookup", {"query": "x"}, "kimi_k2")]


def test_kimi_end_token_outside_a_call_stays_dropped() -> None:
    """``<|tool_call_end|>`` is LFM2's closing token too: alone, it is still never shown."""
    assert visible("done<|tool_call_end|> here") == "done here"


def test_kimi_after_reasoning() -> None:
    call = kimi("functions.now:0", "{}")
    reasoning, pieces = after_reasoning(f"<think>time?</think>{SECTION_BEGIN}{call}{SECTION_END}")
    assert reasoning == "time?"
    assert pieces == [CallPiece("now", {}, call, "kimi_k2")]


def test_kimi_malformed() -> None:
    piece = invalid(kimi("functions.forecast:0", '{"days": }'))
    assert piece.name == "forecast"
    assert "functions.NAME:0<|tool_call_argument_begin|>" in piece.reason
    piece = invalid('<|tool_call_begin|>functions.forecast:0 {"days": 1}<|tool_call_end|>')
    assert "<|tool_call_argument_begin|>" in piece.reason


def test_kimi_unclosed_at_end() -> None:
    whole = (
        f'{SECTION_BEGIN}<|tool_call_begin|>lookup:0<|tool_call_argument_begin|>{{"query": "q"}}'
    )
    assert found(whole) == [("lookup", {"query": "q"}, "kimi_k2")]
    piece = invalid('<|tool_call_begin|>functions.lookup:0<|tool_call_argument_begin|>{"qu')
    assert piece.name == "lookup"
    assert "never closed: end the call with <|tool_call_end|>" in piece.reason


@pytest.mark.parametrize(
    "text", ["Kimi uses <|tool_call_argument_begin|> markers.", "<|tool_call_beg and more"]
)
def test_kimi_lookalikes_are_text(text: str) -> None:
    assert visible(text) == text


# --- MiniMax M2 --------------------------------------------------------------------------------


def invoke(name: str, *parameters: tuple[str, str]) -> str:
    inner = "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in parameters)
    return f'<invoke name="{name}">\n{inner}</invoke>'


def minimax(*invokes: str) -> str:
    return "<minimax:tool_call>\n" + "\n".join(invokes) + "\n</minimax:tool_call>"


def test_minimax_block_of_several_invokes_typed_by_the_schema() -> None:
    first = invoke("forecast", ("city", "Nice"), ("days", "4"), ("tags", '["sun"]'))
    second = invoke("lookup", ("query", "x < y"))
    text = "Checking.\n" + minimax(first, second)
    assert parse(text) == [
        TextPiece("Checking.\n\n"),
        CallPiece("forecast", {"city": "Nice", "days": 4, "tags": ["sun"]}, first, "minimax"),
        TextPiece("\n"),
        CallPiece("lookup", {"query": "x < y"}, second, "minimax"),
        TextPiece("\n"),
    ]


def test_minimax_each_invoke_is_dispatched_at_its_closing_tag() -> None:
    first, second = invoke("now"), invoke("lookup", ("query", "q"))
    text = minimax(first, second)
    ends = [text.index(first) + len(first) - 1, text.index(second) + len(second) - 1]
    assert dispatch_points(text) == ends


def test_minimax_invoke_outside_a_block_is_text() -> None:
    """The rule against false positives: ``<invoke `` is a call only inside a
    ``<minimax:tool_call>`` block, so prose about it hides nothing that follows."""
    prose = 'Write <invoke name="x"> elements, closed by </invoke>.\n'
    call = invoke("now")
    text = prose + minimax(call) + '\nThen <invoke name="now"></invoke> is prose again.'
    pieces = parse(text)
    assert calls(pieces) == [CallPiece("now", {}, call, "minimax")]
    assert visible(text) == prose + "\n\n" + '\nThen <invoke name="now"></invoke> is prose again.'


def test_minimax_single_quoted_name_and_multiline_value() -> None:
    text = minimax("<invoke name='lookup'><parameter name='query'>a\nb</parameter></invoke>")
    assert found(text) == [("lookup", {"query": "a\nb"}, "minimax")]


def test_minimax_after_reasoning() -> None:
    call = invoke("now")
    text = f"<think>{minimax(invoke('lookup', ('query', 'draft')))}</think>{minimax(call)}"
    reasoning, pieces = after_reasoning(text)
    assert "draft" in reasoning
    assert calls(pieces) == [CallPiece("now", {}, call, "minimax")]


def test_minimax_malformed() -> None:
    piece = invalid(
        minimax('<invoke name="forecast">\n<parameter=city>Oslo</parameter>\n</invoke>')
    )
    assert piece.name == "forecast"
    assert '<parameter name="KEY">value</parameter>' in piece.reason
    piece = invalid(minimax("<invoke forecast>\n</invoke>"))
    assert 'name="NAME"' in piece.reason


@pytest.mark.parametrize(
    "text",
    [
        '<minimax:tool_call>\n<invoke name="lookup">\n<parameter name="query">x',
        '<minimax:tool_call>\n<invoke name="lookup">\n<parameter name="query">x</parameter>\n',
        '<minimax:tool_call><invoke name="lookup">',
    ],
)
def test_minimax_unclosed_invoke_at_end_is_invalid(text: str) -> None:
    piece = invalid(text)
    assert piece.name == "lookup"
    assert "<invoke was never closed: end the call with </invoke>" in piece.reason


def test_minimax_block_left_open_after_its_invokes_is_fine() -> None:
    assert found(f"<minimax:tool_call>\n{invoke('now')}\n") == [("now", {}, "minimax")]


def test_a_stream_ending_inside_a_block_leaves_the_next_stream_outside() -> None:
    parser = ToolCallParser(TOOLS)
    parser.feed("<minimax:tool_call>")
    parser.close()
    text = '<invoke name="now"></invoke>'
    assert normalize(parser.feed(text) + parser.close()) == [TextPiece(text)]


# --- chunking ----------------------------------------------------------------------------------

SAMPLES = {
    "deepseek": [
        CALLS_BEGIN + deepseek("forecast", '{"city": "a"}') + deepseek("now", "{}") + CALLS_END,
        f'{BEGIN}lookup{SEP}{{"query": "{END[:5]}"}}{END}',
        f"{BEGIN}function{SEP}now\n```json\n{{]\n```{END}",
        "｜tool▁sep｜ <｜tool▁call",
    ],
    "glm4": [
        glm("forecast", ("days", "3"), ("filters", '{"a": [1]}')),
        glm("lookup", ("query", "</arg_value")),
        "<tool_call>now</tool_call><tool_call>forecast\n<arg_key>x</arg_key></tool_call>",
        "<arg_key>k</arg_key> <tool_call>hello</tool_call>",
    ],
    "kimi_k2": [
        SECTION_BEGIN + kimi("functions.now:0", "{}") + kimi("lookup:1", '{"query": 1}'),
        kimi("functions.forecast:2", '{"days": "<|tool_call_end"}') + SECTION_END,
        "<|tool_call_end|><|tool_call_begin|>lookup {}<|tool_call_end|>",
        "<|tool_call_argument_begin|> <|tool_call_beg",
    ],
    "minimax": [
        minimax(invoke("forecast", ("days", "2")), invoke("now")),
        minimax("<invoke name='lookup'><parameter name='query'></invoke</parameter></invoke>"),
        '<invoke name="now"></invoke> <minimax:tool_call><invoke name=now></invoke>',
        "</minimax:tool_call><invoke <minimax:tool_call",
    ],
}


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
@FAST
@given(data=st.data())
def test_any_chunking_gives_the_same_pieces(fmt: str, data: st.DataObject) -> None:
    parts = data.draw(st.lists(st.sampled_from(SAMPLES[fmt]), min_size=1, max_size=4))
    text = data.draw(st.sampled_from([" text\n", "", "\n"])).join(parts)
    whole = parse(text)
    assert parse(text, split(text, data)) == whole
    assert parse(text, list(text)) == whole


FRAGMENTS = {
    "deepseek": [CALLS_BEGIN, CALLS_END, BEGIN, SEP, END, "function", "now", "```json", "```"],
    "glm4": ["<tool_call>", "</tool_call>", "now", "<arg_key>", "</arg_key>", "<arg_value>"],
    "kimi_k2": [
        SECTION_BEGIN,
        SECTION_END,
        "<|tool_call_begin|>",
        "<|tool_call_argument_begin|>",
        "<|tool_call_end|>",
        "functions.now:0",
    ],
    "minimax": [
        "<minimax:tool_call>",
        "</minimax:tool_call>",
        "<invoke ",
        'name="now">',
        "</invoke>",
        '<parameter name="days">',
        "</parameter>",
    ],
}
COMMON = ["{", "}", '"', "1", " ", "\n", "<", ">", "x", "</", "|", "｜"]


@pytest.mark.parametrize("fmt", sorted(FRAGMENTS))
@FAST
@given(data=st.data())
def test_fragment_soup_is_chunk_invariant(fmt: str, data: st.DataObject) -> None:
    fragments = st.sampled_from(FRAGMENTS[fmt] + COMMON)
    text = "".join(data.draw(st.lists(fragments, max_size=30)))
    whole = parse(text)
    assert parse(text, split(text, data)) == whole
    assert parse(text, list(text)) == whole
