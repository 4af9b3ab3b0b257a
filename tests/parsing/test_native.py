"""The native tool_calls assembler: joining deltas, completing early, exactly once."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentrt.parsing import CallPiece, InvalidPiece, NativeToolCallAssembler

Delta = tuple[int, str | None, str | None, str | None]


def run(deltas: list[Delta]) -> list[tuple[int, CallPiece | InvalidPiece]]:
    """Each piece with the number of the delta that returned it (len(deltas) for close)."""
    assembler = NativeToolCallAssembler()
    out = [(k, p) for k, delta in enumerate(deltas) for p in assembler.feed(*delta)]
    return out + [(len(deltas), p) for p in assembler.close()]


def test_arguments_are_joined_and_the_call_returned_at_its_closing_brace() -> None:
    deltas: list[Delta] = [
        (0, "call_1", "calc", ""),
        (0, None, None, '{"expr'),
        (0, None, None, 'ession": "2'),
        (0, None, None, '+2"}'),
    ]
    assert run(deltas) == [
        (3, CallPiece("calc", {"expression": "2+2"}, '{"expression": "2+2"}', "native", "call_1"))
    ]


def test_repeated_id_and_name_are_not_concatenated() -> None:
    deltas: list[Delta] = [
        (0, "call_1", "calc", '{"a"'),
        (0, "call_1", "calc", ": 1"),
        (0, "call_1", "calc", "}"),
    ]
    [(_, piece)] = run(deltas)
    assert piece == CallPiece("calc", {"a": 1}, '{"a": 1}', "native", "call_1")


def test_id_and_name_come_from_the_first_delta_that_has_them() -> None:
    deltas: list[Delta] = [
        (0, None, None, ""),
        (0, "", "", " "),
        (0, "id_a", "search", "{}"),
        (0, "id_b", "other", None),
    ]
    [(at, piece)] = run(deltas)
    assert at == 2
    assert piece == CallPiece("search", {}, " {}", "native", "id_a")


def test_braces_and_quotes_inside_strings_do_not_end_the_call() -> None:
    args = '{"code": "f() { return \\"}\\" }", "n": {"m": "{"}}'
    deltas: list[Delta] = [(0, "c", "run", None)]
    deltas += [(0, None, None, args[k : k + 3]) for k in range(0, len(args), 3)]
    [(at, piece)] = run(deltas)
    assert at == len(deltas) - 1
    assert isinstance(piece, CallPiece)
    assert piece.arguments == json.loads(args)


def test_a_delta_for_another_index_completes_the_previous_call() -> None:
    deltas: list[Delta] = [
        (0, "a", "now", ""),
        (1, "b", "calc", '{"x": 1'),
        (2, "c", "calc", "{}"),
    ]
    assert run(deltas) == [
        (1, CallPiece("now", {}, "", "native", "a")),
        (
            2,
            InvalidPiece(
                '{"x": 1',
                "arguments of \"calc\" are not valid JSON: Expecting ',' delimiter"
                " (line 1 column 8). Give the arguments as one JSON object.",
                "calc",
            ),
        ),
        (2, CallPiece("calc", {}, "{}", "native", "c")),
    ]


def test_calls_still_open_are_returned_at_close() -> None:
    assert run([(0, "a", "now", None)]) == [(1, CallPiece("now", {}, "", "native", "a"))]
    assert run([(0, "a", "now", "  ")]) == [(1, CallPiece("now", {}, "  ", "native", "a"))]


def test_balanced_but_malformed_arguments_wait_for_the_end() -> None:
    [(at, piece)] = run([(0, "a", "calc", '{"x": 1,}')])
    assert at == 1
    assert isinstance(piece, InvalidPiece)
    assert piece.name == "calc"
    assert piece.raw == '{"x": 1,}'
    assert piece.reason.startswith(
        'arguments of "calc" are not valid JSON: Expecting property name enclosed in double quotes'
    )


def test_arguments_that_are_not_an_object_are_invalid() -> None:
    [(_, piece)] = run([(0, "a", "calc", "[1, 2]")])
    assert isinstance(piece, InvalidPiece)
    assert "expected a JSON object, got a list" in piece.reason


def test_truncated_arguments_are_invalid_at_close() -> None:
    [(_, piece)] = run([(0, "a", "calc", '{"expression": "2+')])
    assert isinstance(piece, InvalidPiece)
    assert "Unterminated string" in piece.reason


def test_a_call_without_a_name_is_invalid() -> None:
    [(at, piece)] = run([(0, "a", None, '{"x": 1}')])
    assert at == 0
    assert piece == InvalidPiece(
        '{"x": 1}', "the tool call at index 0 has no function name: name the tool."
    )


def test_each_call_is_returned_once_even_if_deltas_keep_coming() -> None:
    deltas: list[Delta] = [
        (0, "a", "now", "{}"),
        (0, "a", "now", ""),
        (0, "a", "now", " "),
        (1, "b", "now", "{}"),
        (0, "a", "now", "{}"),
    ]
    assert [at for at, _ in run(deltas)] == [0, 3]


def test_trailing_text_after_the_brace_in_the_same_delta_is_kept_in_raw() -> None:
    [(at, piece)] = run([(0, "a", "calc", '{"x": 1}\n')])
    assert at == 0
    assert piece == CallPiece("calc", {"x": 1}, '{"x": 1}\n', "native", "a")


def test_assembler_is_reusable_after_close() -> None:
    assembler = NativeToolCallAssembler()
    assembler.feed(0, "a", "now", "{}")
    assert assembler.close() == []
    assert assembler.feed(0, "b", "now", "{}") == [CallPiece("now", {}, "{}", "native", "b")]


ARGS = st.dictionaries(
    st.text(max_size=3),
    st.recursive(
        st.none() | st.integers() | st.text(st.sampled_from(list('{}"\\ x\n')), max_size=6),
        lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner),
        max_leaves=5,
    ),
    max_size=3,
)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), ARGS), max_size=4), st.data())
def test_any_split_of_the_arguments_gives_the_same_calls(
    calls: list[tuple[str, dict[str, Any]]], data: st.DataObject
) -> None:
    deltas: list[Delta] = []
    for index, (name, args) in enumerate(calls):
        text = json.dumps(args)
        cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=5)))
        bounds = [0, *cuts, len(text)]
        deltas.append((index, f"id{index}", name, None))
        deltas += [(index, f"id{index}", name, text[a:b]) for a, b in itertools.pairwise(bounds)]
    pieces = run(deltas)
    assert [p for _, p in pieces] == [
        CallPiece(name, args, json.dumps(args), "native", f"id{index}")
        for index, (name, args) in enumerate(calls)
    ]
    # Each call is complete at its closing brace, before the next call's first delta.
    last_piece = {index: k for k, (index, _, _, arguments) in enumerate(deltas) if arguments}
    assert [at for at, _ in pieces] == [last_piece[index] for index in range(len(calls))]
