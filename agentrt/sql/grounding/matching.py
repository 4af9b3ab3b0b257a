"""Internal. Values said in a question: each run of its words that is a value, word for word
(stems, possessives stripped: "Isaac Newman's" finds 'Isaac Newman'), values FTS5 finds holding
some of its words, the codes of the rows such values name, and phrases said (a synonym's).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path

from agentrt.sql._text import stem, words_of
from agentrt.sql.database import ForeignKey, connect_readonly, quote_identifier
from agentrt.sql.grounding.models import SchemaItem, normalize_value
from agentrt.sql.values import ValueHit, ValueIndex

LITERAL_SCORE = 1.0
"""A value found word for word in the question (cosine similarity tops out at 1)."""
CODE_SCORE = 0.9
"""The code of a row a value names ('CH' for "Switzerland"), in the columns that hold it."""
PARTIAL_SCORE = 0.6
"""A value that FTS5 finds holding some of the question's words, times the share of its words
the question says ("Kabul" and 'Kabul Province': 0.3)."""
PARTIAL_CANDIDATES = 20
"""How many values FTS5 returns per text, best (BM25) first."""

STOPWORDS = frozenset(
    line
    for line in (Path(__file__).parent / "stopwords.txt").read_text(encoding="utf-8").split("\n")
    if line and not line.startswith("#")
)
"""Words too common to be a value on their own: a column holding 'No' or 'All' should not be
grounded because a question says 'no' or 'all'."""
STOP_STEMS = frozenset(stem(w) for w in STOPWORDS)


def value_matches(values: ValueIndex, text: str, said: Sequence[str]) -> dict[ValueHit, float]:
    """The values the text holds: each run of its words that is a value's words (stemmed),
    `LITERAL_SCORE`; values FTS5 finds holding some of its words, `PARTIAL_SCORE` times
    the share of their words it says."""
    raw = set(words_of(text))
    runs: dict[str, list[range]] = defaultdict(list)
    for size in range(1, values.longest + 1):
        for start in range(len(said) - size + 1):
            runs[" ".join(said[start : start + size])].append(range(start, start + size))
    keys = [k for k in runs if len(k) > 1 and k not in STOP_STEMS]
    hits = values.literal(keys)
    spans = [runs[key] for _, key in hits]
    found: dict[ValueHit, float] = {}
    for hit, key in hits:
        # Within a longer value said ("EAGLES ORANGE"), a shorter one ('Orange', a city)
        # was not said: it only holds some of the words.
        inside = all(
            any(len(o) > len(r) and r.start in o and r[-1] in o for s in spans for o in s)
            for r in runs[key]
        )
        found[hit] = PARTIAL_SCORE if inside or not said_as(hit[2], key, raw) else LITERAL_SCORE
    # A code of one or two letters is said as it is written: "US", not "us"; "id" is not
    # Indonesia's 'ID'.
    for hit in [h for h in found if len(h[2]) <= 2 and not h[2].isdigit()]:
        if not re.search(rf"(?<!\w){re.escape(hit[2])}(?!\w)", text):
            del found[hit]
    present = set(said)
    content = [
        w for w, s in zip(words_of(text), said, strict=True) if s not in STOP_STEMS and len(s) > 2
    ]
    for hit, key in values.search(content, PARTIAL_CANDIDATES):
        if hit not in found:
            words_ = key.split()
            share = sum(w in present for w in words_) / max(1, len(words_))
            found[hit] = PARTIAL_SCORE * share
    return found


def coded_values(
    path: Path, codes: Mapping[str, str], joins: Iterable[ForeignKey], literal: Collection[ValueHit]
) -> set[ValueHit]:
    """The codes of the rows the literal values name, where other tables hold the code
    ("Switzerland" is `countries.country_name`; its `country_id` 'CH' is what
    `locations.country_id` compares with): the row's text primary key, and the same value
    in every column that references it."""
    wanted = [(t, c, v) for t, c, v in literal if t in codes and c != codes[t]]
    if not wanted:
        return set()
    found: set[ValueHit] = set()
    with connect_readonly(path) as connection:
        for table, column, value in wanted:
            key = codes[table]
            rows = connection.execute(
                f"SELECT DISTINCT {quote_identifier(key)} FROM {quote_identifier(table)} "
                f"WHERE trim({quote_identifier(column)}) = ? LIMIT 3",
                (value,),
            ).fetchall()
            for (code,) in rows:
                if isinstance(code, str):
                    found.add((table, key, code))
                    found.update(
                        (j.table, j.column, code)
                        for j in joins
                        if (j.ref_table, j.ref_column) == (table, key)
                    )
    return found


def item_hit(item: SchemaItem) -> ValueHit:
    return (item.table, item.column or "", item.value or "")


def said_as(value: str, key: str, raw: Collection[str]) -> bool:
    """Whether a value of one word is said as it is, or in the plural: the stem of
    'Purchasing' and 'orderable' is that of "purchase" and "orders", but neither is said."""
    if " " in key:
        return True
    word = normalize_value(value)
    plurals = {word, word + "s", word + "es", word[:-1] + "ies"}
    return bool(plurals & set(raw))


def contains(said: Sequence[str], phrase: Sequence[str]) -> bool:
    """Whether the words `phrase` occur in `said`, in order and together."""
    size = len(phrase)
    return bool(size) and any(
        tuple(said[i : i + size]) == tuple(phrase) for i in range(len(said) - size + 1)
    )
