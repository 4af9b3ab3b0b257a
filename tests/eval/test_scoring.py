"""Answer, typed output and tool-call scores (agentrt.eval.scoring)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue

from agentrt.eval.scoring import (
    MatchMode,
    exact_match,
    normalize_answer,
    output_fields,
    same_value,
    token_f1,
    tool_precision_recall,
    trajectory_match,
)


class TestAnswers:
    @pytest.mark.parametrize(
        ("text", "normalized"),
        [
            ("The Eiffel Tower!", "eiffel tower"),
            ("  an   apple,\ta pear ", "apple pear"),
            ("Theatre", "theatre"),
            ("42.0", "420"),
            ("", ""),
        ],
    )
    def test_normalize_answer_as_squad_does(self, text: str, normalized: str) -> None:
        """Lower case, no punctuation (even inside numbers), no articles, single spaces."""
        assert normalize_answer(text) == normalized

    def test_exact_match_ignores_case_punctuation_and_articles(self) -> None:
        assert exact_match("The answer is 385 days.", "answer is 385 DAYS")
        assert not exact_match("385 days", "386 days")

    @pytest.mark.parametrize(
        ("answer", "expected", "f1"),
        [
            ("there are 385 days", "385 days", 2 * (2 / 4) * 1 / (2 / 4 + 1)),
            ("the square root is 42", "42", 2 * (1 / 4) * 1 / (1 / 4 + 1)),
            ("cats", "dogs", 0.0),
            ("", "", 1.0),
            ("something", "", 0.0),
        ],
    )
    def test_token_f1(self, answer: str, expected: str, f1: float) -> None:
        assert token_f1(answer, expected) == pytest.approx(f1)

    @given(st.text(max_size=40), st.text(max_size=40))
    def test_f1_is_symmetric_bounded_and_one_on_an_exact_match(self, a: str, b: str) -> None:
        f1 = token_f1(a, b)
        assert 0.0 <= f1 <= 1.0
        assert f1 == pytest.approx(token_f1(b, a))
        if exact_match(a, b):
            assert f1 == 1.0


INVOICE: JsonValue = {"total": 1280.5, "currency": "EUR", "paid": False, "lines": [1, 2]}


class TestOutputs:
    @pytest.mark.parametrize(
        ("output", "fields"),
        [
            ({"total": 1280.5, "currency": "EUR", "paid": False, "lines": [1, 2]}, (4, 4)),
            # Extra fields are not asked about; strings compare as answers do.
            ({"total": 1280.5, "currency": "eur.", "paid": False, "lines": [1, 2], "x": 1}, (4, 4)),
            ({"total": 1281.5, "currency": "EUR", "paid": False, "lines": [1, 2]}, (3, 4)),
            ({"total": 1280.5, "currency": "USD", "paid": None, "lines": [2, 1]}, (1, 4)),
            ({"currency": "EUR"}, (1, 4)),
            ("total 1280.5 EUR", (0, 4)),
            (None, (0, 4)),
        ],
        ids=["all", "extra-and-case", "one-number", "three-wrong", "missing", "text", "none"],
    )
    def test_an_object_is_scored_per_field(
        self, output: JsonValue, fields: tuple[int, int]
    ) -> None:
        assert output_fields(output, INVOICE) == fields

    @pytest.mark.parametrize(
        ("output", "expected", "right"),
        [
            (42, 42, 1),
            ("The answer: 42", "answer 42", 1),
            ([1, "a"], [1, "A"], 1),
            ({}, {}, 1),
            ({"a": 1}, {}, 0),
            ("42", 42, 0),
        ],
    )
    def test_any_other_value_is_one_field(
        self, output: JsonValue, expected: JsonValue, right: int
    ) -> None:
        assert output_fields(output, expected) == (right, 1)

    @pytest.mark.parametrize(
        ("got", "expected", "same"),
        [
            (100.009, 100, True),  # within 0.01%
            (100.02, 100, False),
            (7, 7.0, True),
            (0, 0, True),
            (True, 1, False),  # a boolean is no number
            (1, True, False),
            (None, None, True),
            ([1, 2], [1, 2, 3], False),
            ({"a": {"b": "The X"}}, {"a": {"b": "x"}}, True),
            ({"a": 1, "b": 2}, {"a": 1}, False),  # nested objects are compared whole
        ],
    )
    def test_values(self, got: JsonValue, expected: JsonValue, same: bool) -> None:
        assert same_value(got, expected) is same


class TestTools:
    @pytest.mark.parametrize(
        ("called", "expected", "precision", "recall"),
        [
            (["a", "b"], ["a", "b"], 1.0, 1.0),
            (["a", "c", "c"], ["a", "b"], 1 / 3, 1 / 2),
            (["a", "a"], ["a"], 1 / 2, 1.0),
            ([], ["a"], 0.0, 0.0),
            ([], [], 1.0, 1.0),
            (["a"], [], 0.0, 1.0),
        ],
    )
    def test_precision_and_recall_count_repeated_calls(
        self, called: list[str], expected: list[str], precision: float, recall: float
    ) -> None:
        assert tool_precision_recall(called, expected) == (precision, recall)

    @pytest.mark.parametrize(
        ("called", "expected", "matches"),
        [
            (["a", "b"], ["a", "b"], {"strict", "unordered", "subset", "superset"}),
            (["b", "a"], ["a", "b"], {"unordered", "subset", "superset"}),
            (["a"], ["a", "b"], {"subset"}),
            (["a", "b", "c"], ["a", "b"], {"superset"}),
            (["a", "a"], ["a"], {"superset"}),
            (["c"], ["a", "b"], set()),
            ([], [], {"strict", "unordered", "subset", "superset"}),
        ],
    )
    def test_trajectory_match_modes(
        self, called: list[str], expected: list[str], matches: set[MatchMode]
    ) -> None:
        modes: list[MatchMode] = ["strict", "unordered", "subset", "superset"]
        assert {m for m in modes if trajectory_match(called, expected, m)} == matches
