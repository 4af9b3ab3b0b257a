"""Answer and tool-call scores (agentrt.eval.scoring)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentrt.eval.scoring import (
    MatchMode,
    exact_match,
    normalize_answer,
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
