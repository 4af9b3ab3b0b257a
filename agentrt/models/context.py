"""Internal. A conversation cut to fit a model's context window.

What a run's turns gather can outgrow the window of a small model: a knowledge run's six
searches with their text took the embedded 1.5B's prompt to 9,163 tokens of its 8,192, and
llama.cpp refuses such a prompt, which ended the run in an error (issue 24). The system prompt
(the tools, the instructions) and the question stay whole; the other messages (the model's
turns, the results) are cut, the longest first, all to one common length, each cut noted.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CUT_NOTE", "cut_by"]

CUT_NOTE = "\n[… {n} characters cut to fit the model's context window]"


def cut_by(messages: list[dict[str, Any]], chars: int) -> list[dict[str, Any]] | None:
    """`messages` (chat-completion dicts) with about `chars` characters fewer, taken from the
    longest messages after the question; None when those hold too little to spare them."""
    cuttable = [i for i, m in enumerate(messages) if m["role"] != "system"][1:]
    lengths = [len(messages[i]["content"] or "") for i in cuttable]
    target = sum(lengths) - chars
    if target < 0:
        return None
    cap = _common_cap(sorted(lengths), target)
    cut = list(messages)
    for i, length in zip(cuttable, lengths, strict=True):
        if length > cap:
            text = messages[i]["content"]
            cut[i] = {**messages[i], "content": text[:cap] + CUT_NOTE.format(n=length - cap)}
    return cut


def _common_cap(lengths: list[int], target: int) -> int:
    """The largest length `cap` with sum(min(length, cap)) ≤ `target`, `lengths` ascending."""
    left = target
    for k, length in enumerate(lengths):
        rest = len(lengths) - k
        if length * rest > left:
            return left // rest
        left -= length
    return lengths[-1] if lengths else 0
