"""Words as grounding compares them: Porter stems (snowballstemmer's `porter`, the rules of
SQLite FTS5's porter tokenizer), possessives stripped first."""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import snowballstemmer
from snowballstemmer.basestemmer import BaseStemmer

_WORD = re.compile(r"\w+(?:['’.-]\w+)*")
_POSSESSIVE = re.compile(r"['’]s?$")
# A snowballstemmer stemmer keeps the word it is working on in itself: one shared by the worker
# threads grounding runs in returns wrong stems or raises. One per thread.
_STEMMERS = threading.local()


def _stemmer() -> BaseStemmer:
    stemmer = getattr(_STEMMERS, "porter", None)
    if stemmer is None:
        stemmer = _STEMMERS.porter = snowballstemmer.stemmer("porter")
    return stemmer


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Porter stem of one lower-cased word, its possessive left out: "professional's" and
    "professionals" → "profession", "employees'" → "employe"."""
    return str(_stemmer().stemWord(_POSSESSIVE.sub("", word)))


def words_of(text: str) -> list[str]:
    """The words of `text`, casefolded, their possessives left out, in order."""
    return [_POSSESSIVE.sub("", w) for w in _WORD.findall(text.casefold())]


def stems(text: str) -> list[str]:
    """The stems of the words of `text`, in order."""
    return [stem(w) for w in words_of(text)]
