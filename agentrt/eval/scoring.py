"""Scores of one run against what a question expects: its answer, its typed output and the
tools it called.

Answers are compared as SQuAD compares them: after lower-casing and dropping punctuation, the
articles a/an/the and extra whitespace, as an exact match and as a token F1. A typed output is
compared field by field (`output_fields`). Tool calls are compared as multisets (a tool called
twice counts twice) or, in `strict` mode, as sequences.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Sequence
from typing import Literal, assert_never

from pydantic import JsonValue

__all__ = [
    "MatchMode",
    "exact_match",
    "normalize_answer",
    "output_fields",
    "same_value",
    "token_f1",
    "tool_precision_recall",
    "trajectory_match",
]

MatchMode = Literal["strict", "unordered", "subset", "superset"]
"""How a run's tool calls must agree with the expected ones: `strict`, the same calls in the
same order; `unordered`, the same calls in any order; `subset`, only expected calls (some may
be missing); `superset`, every expected call (others may be added)."""

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """`text` lower-cased, without punctuation, articles or runs of whitespace."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def exact_match(answer: str, expected: str) -> bool:
    return normalize_answer(answer) == normalize_answer(expected)


def token_f1(answer: str, expected: str) -> float:
    """The harmonic mean of token precision and recall, tokens normalised."""
    got, want = normalize_answer(answer).split(), normalize_answer(expected).split()
    if not got or not want:
        # Nothing to share: only two empty answers agree.
        return float(got == want)
    common = sum((Counter(got) & Counter(want)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(got), common / len(want)
    return 2 * precision * recall / (precision + recall)


NUMBER_TOLERANCE = 1e-4
"""The relative difference (0.01%) within which two numbers are the same value."""

_ABSENT = object()


def output_fields(output: JsonValue, expected: JsonValue) -> tuple[int, int]:
    """How many fields of `expected` the output has right, and how many it expects.

    An object is scored per top-level field: each field expected against the output's field of
    that name (missing: wrong; fields not expected are ignored). Any other value, an empty
    object among them, is one field.
    """
    if not isinstance(expected, dict) or not expected:
        return int(same_value(output, expected)), 1
    if not isinstance(output, dict):
        return 0, len(expected)
    right = sum(same_value(output.get(k, _ABSENT), v) for k, v in expected.items())
    return right, len(expected)


def same_value(got: object, expected: JsonValue) -> bool:
    """Whether `got` is the `expected` JSON value: strings equal once normalised as answers
    are, numbers within `NUMBER_TOLERANCE` of each other, arrays item by item, objects with the
    same keys and the same values; everything else equal as it is (a boolean is no number)."""
    if isinstance(expected, str):
        return isinstance(got, str) and normalize_answer(got) == normalize_answer(expected)
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        return (
            isinstance(got, int | float)
            and not isinstance(got, bool)
            and math.isclose(got, expected, rel_tol=NUMBER_TOLERANCE)
        )
    if isinstance(expected, list):
        return (
            isinstance(got, list)
            and len(got) == len(expected)
            and all(same_value(g, e) for g, e in zip(got, expected, strict=True))
        )
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and got.keys() == expected.keys()
            and all(same_value(got[k], v) for k, v in expected.items())
        )
    return type(got) is type(expected) and got == expected


def tool_precision_recall(called: Sequence[str], expected: Sequence[str]) -> tuple[float, float]:
    """Of the calls made, the share expected; of the calls expected, the share made."""
    common = sum((Counter(called) & Counter(expected)).values())
    precision = common / len(called) if called else float(not expected)
    recall = common / len(expected) if expected else 1.0
    return precision, recall


def trajectory_match(called: Sequence[str], expected: Sequence[str], mode: MatchMode) -> bool:
    """Whether the tools called agree with the expected ones under `mode`."""
    got, want = Counter(called), Counter(expected)
    if mode == "strict":
        return list(called) == list(expected)
    if mode == "unordered":
        return got == want
    if mode == "subset":
        return got <= want
    if mode == "superset":
        return got >= want
    assert_never(mode)
