"""Internal. A knowledge graph read out of the chunks at ingest, without a model.

Entities are what documentation names precisely: code spans, dotted and CamelCase
identifiers, acronyms (HTTP/2, JSON), runs of capitalised words (Hugging Face), and the
section each chunk sits in. Relations are the short phrases that join two entities in one
sentence ("AsyncClient *supports* HTTP/2"), and `mentions` from a section to what it names.
Every relation remembers the chunk it came from, so a subgraph can be cited like a search.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

__all__ = ["Entity", "Relation", "extract"]

MAX_ENTITIES_PER_CHUNK = 24

_CODE = re.compile(r"`([^`\n]{2,60})`")
_DOTTED = re.compile(r"\b[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+\b")
_CAMEL = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b")
_ACRONYM = re.compile(r"\b[A-Z]{2,}[0-9]*(?:/[0-9.]+)?(?![\w/])")
_PROPER = re.compile(r"\b[A-Z][a-zA-Z0-9+-]+(?:\s+[A-Z][a-zA-Z0-9+-]+)+\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n{2,}")
_WORD = re.compile(r"^[A-Za-z][A-Za-z-]*$")

# Capitalised only because a sentence or a title starts with them.
_LEADING = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "if",
        "when",
        "you",
        "your",
        "we",
        "our",
        "to",
        "in",
        "on",
        "for",
        "of",
        "and",
        "or",
        "with",
        "by",
        "use",
        "using",
        "see",
        "note",
        "by",
        "default",
        "how",
        "what",
        "why",
    ]
)


@dataclass(frozen=True, slots=True)
class Entity:
    name: str
    kind: str
    """`code`, `acronym`, `name` or `section`."""

    @property
    def key(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Relation:
    source: Entity
    relation: str
    target: Entity


def extract(heading: str, text: str) -> tuple[list[Entity], list[Relation]]:
    """The entities one chunk names, and the relations between them."""
    found: dict[str, Entity] = {}
    relations: list[Relation] = []
    for sentence in _SENTENCE.split(text):
        mentions = _mentions(sentence)
        for _, _, entity in mentions:
            if len(found) < MAX_ENTITIES_PER_CHUNK or entity.key in found:
                found.setdefault(entity.key, entity)
        for (_, end, a), (start, _, b) in itertools.pairwise(mentions):
            words = sentence[end:start].split()
            if (
                a.key != b.key
                and a.key in found
                and b.key in found
                and 1 <= len(words) <= 4
                and all(_WORD.match(w) for w in words)
            ):
                relations.append(Relation(found[a.key], " ".join(words).lower(), found[b.key]))
    section = heading.rsplit(" › ", 1)[-1].strip()
    if section:
        node = Entity(section, "section")
        relations.extend(Relation(node, "mentions", e) for e in found.values() if e.key != node.key)
        found.setdefault(node.key, node)
    return list(found.values()), relations


def _mentions(sentence: str) -> list[tuple[int, int, Entity]]:
    """Entities in `sentence` as (start, end, entity), in order, overlaps resolved in favour
    of the earlier and then the longer match."""
    spans: list[tuple[int, int, Entity]] = []
    for pattern, kind in ((_CODE, "code"), (_DOTTED, "code"), (_CAMEL, "code")):
        for m in pattern.finditer(sentence):
            name = m.group(1) if pattern is _CODE else m.group(0)
            name = name.strip().removesuffix("()")
            if len(name) >= 2:
                spans.append((m.start(), m.end(), Entity(name, kind)))
    for m in _ACRONYM.finditer(sentence):
        spans.append((m.start(), m.end(), Entity(m.group(0), "acronym")))
    for m in _PROPER.finditer(sentence):
        words = m.group(0).split()
        while words and words[0].lower() in _LEADING:
            words.pop(0)
        if len(words) >= 2:
            start = m.end() - len(" ".join(words))
            spans.append((start, m.end(), Entity(" ".join(words), "name")))
    spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    chosen: list[tuple[int, int, Entity]] = []
    last_end = -1
    for start, end, entity in spans:
        if start >= last_end:
            chosen.append((start, end, entity))
            last_end = end
    return chosen
