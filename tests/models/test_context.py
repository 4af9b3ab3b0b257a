"""Cutting a conversation to fit a context window: the longest messages first, to one length."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentrt.models.context import CUT_NOTE, cut_by


def conversation(lengths: list[int]) -> list[dict[str, Any]]:
    """A system prompt, the question, then turns and results of the given lengths."""
    head = [{"role": "system", "content": "S" * 50}, {"role": "user", "content": "Q" * 30}]
    roles = ["assistant", "user"]
    return head + [{"role": roles[i % 2], "content": "x" * n} for i, n in enumerate(lengths)]


def test_the_longest_are_cut_to_one_length_and_noted() -> None:
    messages = conversation([100, 1000, 400, 2000])
    cut = cut_by(messages, 1500)
    assert cut is not None
    assert cut[:2] == messages[:2]  # the system prompt and the question stay whole
    kept = [len(m["content"].split("\n[…")[0]) for m in cut[2:]]
    # 100 and 400 are short enough to stay whole; 1000 and 2000 share what is left.
    assert kept == [100, 750, 400, 750]
    assert cut[3]["content"].endswith(CUT_NOTE.format(n=250))
    assert messages[3]["content"] == "x" * 1000  # the caller's list is not changed


def test_nothing_to_spare_is_none() -> None:
    assert cut_by(conversation([100, 100]), 201) is None
    assert cut_by(conversation([]), 1) is None


@given(st.lists(st.integers(0, 5000), max_size=12), st.integers(0, 20000))
def test_as_much_is_taken_as_asked_and_no_more_than_needed(lengths: list[int], chars: int) -> None:
    cut = cut_by(conversation(lengths), chars)
    if chars > sum(lengths):
        assert cut is None
        return
    assert cut is not None
    kept = [len(m["content"].split("\n[…")[0]) for m in cut[2:]]
    assert all(k <= n for k, n in zip(kept, lengths, strict=True))
    assert sum(lengths) - sum(kept) >= chars
    # Greedy at the top only: every message cut keeps as much as the longest kept whole.
    cap = max(kept, default=0)
    assert all(k == cap for k, n in zip(kept, lengths, strict=True) if n > k)
    assert sum(lengths) - sum(kept) - chars < max(1, len(lengths))  # rounding: < 1 char each
