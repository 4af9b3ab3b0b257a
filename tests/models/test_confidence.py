"""The search for the model's likeliest tool name, against scoring every name in full.

A made-up model stands in for the real one (whose test is in `test_local.py`): characters are
its tokens, except that a quote and the letter after it are one token, as a space and a word
are in Qwen's vocabulary, and its next-token probabilities are a fixed function of what came
before.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from agentrt.models.confidence import CALL_OPENER, tool_confidence

_VOCAB = 64


def _tokenize(text: str) -> list[int]:
    tokens: list[int] = []
    at = 0
    while at < len(text):
        if text[at] == '"' and at + 1 < len(text) and text[at + 1].isalpha():
            tokens.append(1000 + ord(text[at + 1]))  # `"w` is one token
            at += 2
        else:
            tokens.append(ord(text[at]))
            at += 1
    return tokens


class _Model:
    """Log-probabilities that depend on the last three tokens; it counts its decodes."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.decodes = 0

    def __call__(self, tokens: list[int]) -> Callable[[int], float]:
        self.decodes += 1
        key = f"{self.seed}:{tokens[-3:]}".encode()
        weights = [1 + b for b in hashlib.sha256(key).digest() * 2][:_VOCAB]
        total = math.log(sum(math.exp(w / 16) for w in weights))
        return lambda token: weights[token % _VOCAB] / 16 - total


def _exhaustive(prompt: str, names: list[str], model: _Model) -> float:
    """Every name's probability in full, from the token where names and prompt part."""
    start = _tokenize(prompt)
    spelled = [_tokenize(prompt + name + '", "') for name in names]
    # The first token where each name parts from the prompt (-1: past its end).
    parts = [
        next(i for i, (a, b) in enumerate(zip([*start, -1], s, strict=False)) if a != b)
        for s in spelled
    ]
    fork = min(parts)
    head = start[: fork - 1]
    best = 0.0
    for tokens in spelled:
        logp = sum(model(tokens[:at])(tokens[at]) for at in range(len(head), len(tokens)))
        best = max(best, math.exp(logp))
    return best


_NAMES = st.lists(
    st.text(alphabet="abcdefgh_", min_size=1, max_size=6), min_size=1, max_size=6, unique=True
)


@settings(max_examples=200, deadline=None)
@given(names=_NAMES, seed=st.integers(0, 1000), factor=st.sampled_from([0.0, 0.5, 0.99, 1.01, 2]))
def test_the_search_agrees_with_scoring_every_name(
    names: list[str], seed: int, factor: float
) -> None:
    """Sure (the best name reaches the threshold): its exact probability. Unsure: a number
    below the threshold, and no name is more probable than it."""
    prompt = "system: tools\nuser: question\n" + CALL_OPENER
    exact = _exhaustive(prompt, names, _Model(seed))
    threshold = exact * factor  # either side of it, close and far
    found = tool_confidence(
        prompt, names, tokenize=_tokenize, logprobs=_Model(seed), threshold=threshold
    )
    if factor < 1:
        assert math.isclose(found, exact, rel_tol=1e-9)
    else:
        assert exact * (1 - 1e-9) <= found < threshold


def test_it_decodes_less_than_scoring_every_name() -> None:
    """What makes it affordable before every first turn: a sure answer is found along one
    branch of the names' trie, not by decoding every token of every name."""
    names = ["get_weather", "get_forecast", "get_air_quality", "get_uv_index", "get_alerts"]
    prompt = "user: how warm is it in Oslo?\n" + CALL_OPENER
    searched, scored = _Model(7), _Model(7)
    tool_confidence(prompt, names, tokenize=_tokenize, logprobs=searched, threshold=1e-12)
    _exhaustive(prompt, names, scored)
    assert searched.decodes < scored.decodes / 2


def test_a_name_that_begins_another_is_its_own() -> None:
    """`get` and `get_weather`: each is scored up to the quote that ends it."""
    prompt = "user: q\n" + CALL_OPENER
    one = tool_confidence(prompt, ["get"], tokenize=_tokenize, logprobs=_Model(3), threshold=0)
    both = tool_confidence(
        prompt, ["get", "get_weather"], tokenize=_tokenize, logprobs=_Model(3), threshold=0
    )
    assert math.isclose(one, _exhaustive(prompt, ["get"], _Model(3)))
    assert math.isclose(both, max(one, _exhaustive(prompt, ["get_weather"], _Model(3))))
