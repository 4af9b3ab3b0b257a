"""Stems as grounding compares words: right from any number of threads at once."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import snowballstemmer

from agentrt.sql._text import stem, stems

ENDINGS = ["ing", "ed", "ional", "ations", "izers", "fulness", "s", "ly"]
ROOTS = ["connect", "profession", "generaliz", "relat", "nation", "hope", "agree", "condition"]


@pytest.fixture
def frequent_thread_switches() -> Iterator[None]:
    """Threads switch every microsecond, so that calls interleave inside a stemming."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def test_possessives_are_left_out() -> None:
    assert stems("The professional's employees'") == ["the", "profession", "employe"]


@pytest.mark.usefixtures("frequent_thread_switches")
def test_stems_are_right_from_many_threads_at_once() -> None:
    words = [f"{root}{ending}" for root in ROOTS for ending in ENDINGS]
    reference = snowballstemmer.stemmer("porter")
    want = [reference.stemWord(w) for w in words]
    for _ in range(20):
        stem.cache_clear()  # every call stems, none is answered from the cache
        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(stem, words)) == want
