"""Generate the multi-hop family's fictional world, its documents and its questions.

    python benchmarks/data/agents/multihop/generate.py   # rewrites documents and questions

Standard library only, one fixed seed: the same files every time (a test checks the committed
ones are what this script writes). Nothing here is real, so a model cannot answer from memory:

- a graph of invented entities: countries, mountain ranges, rivers (length, source, the towns
  they flow through), towns (country, population, river), people (birth year, birthplace,
  occupation), companies (founder, year, headquarters, trade) and bands (town and year formed,
  members). Companies come in pairs sharing a first word and people in pairs sharing a surname,
  so a search for one also finds a distractor about a similar name.
- documents.jsonl: one short encyclopedia-style paragraph per entity (title, text), each fact
  written with one of several templates; a fact is stated in one paragraph only (a company's
  founder in the company's, the founder's birthplace in the person's), so a question needs
  the paragraphs of every entity on its path.
- questions.jsonl: questions read off the graph with their answers computed, in five kinds
  taken in turn (`bridge`, `three_hop`, `comparison`, `yes_no`, `parallel`), each with the
  titles of the paragraphs its answer rests on (`support`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

SEED = 24
HERE = Path(__file__).resolve().parent
PER_KIND = 10
KINDS = ("bridge", "three_hop", "comparison", "yes_no", "parallel")

_ONSETS = [
    "b",
    "br",
    "d",
    "dr",
    "f",
    "g",
    "h",
    "k",
    "kr",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "st",
    "t",
    "th",
    "v",
    "z",
    "sk",
    "gl",
    "tr",
    "w",
    "c",
    "ph",
]
_VOWELS = ["a", "e", "i", "o", "u", "ae", "ei", "ou", "y"]
_CODAS = ["", "", "n", "r", "l", "s", "th", "m", "nd", "rk", "ss", "x", "lt", "v"]
_OCCUPATIONS = [
    "engineer",
    "painter",
    "chemist",
    "merchant",
    "architect",
    "printer",
    "botanist",
    "shipwright",
    "clockmaker",
    "surveyor",
    "weaver",
    "brewer",
]
_TRADES = {
    "Tools": "makes tools",
    "Freight": "carries freight",
    "Textiles": "weaves cloth",
    "Optics": "grinds lenses",
    "Foods": "cans vegetables",
    "Ceramics": "makes tiles",
    "Press": "prints books",
    "Motors": "builds engines",
    "Instruments": "makes violins",
    "Paper": "makes paper",
    "Glassworks": "blows glass",
    "Mills": "grinds flour",
}
"""A company's name ends in its trade; what the company does, as its paragraph says it."""
_GENRES = ["folk", "jazz", "rock", "brass", "dance", "choral"]
_BAND_WORDS = ["Herons", "Lanterns", "Foxes", "Bells", "Anchors", "Kites", "Owls", "Sparrows"]
_BAND_ADJ = ["Glass", "Copper", "Quiet", "Paper", "Silver", "Hollow", "Velvet", "Iron"]


@dataclass
class Town:
    name: str
    country: str
    population: int
    river: str = ""


@dataclass
class River:
    name: str
    length_km: int
    source: str
    towns: list[str] = field(default_factory=list)


@dataclass
class Person:
    name: str
    born: int
    birthplace: str
    occupation: str


@dataclass
class Company:
    name: str
    founder: str
    founded: int
    headquarters: str
    trade: str


@dataclass
class Band:
    name: str
    town: str
    formed: int
    genre: str
    members: list[str]


@dataclass
class World:
    countries: list[str]
    mountains: list[str]
    rivers: dict[str, River]
    towns: dict[str, Town]
    people: dict[str, Person]
    companies: dict[str, Company]
    bands: dict[str, Band]


@dataclass(frozen=True)
class Question:
    id: str
    kind: str
    question: str
    answer: str
    support: list[str]

    def record(self) -> dict[str, object]:
        return {
            "id": self.id,
            "kind": self.kind,
            "question": self.question,
            "answer": self.answer,
            "support": self.support,
        }


class Names:
    """Invented words, never the same twice."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def word(self, syllables: int) -> str:
        while True:
            parts = [self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) for _ in range(syllables)]
            text = ("".join(parts) + self.rng.choice(_CODAS)).capitalize()
            if text not in self.used and 4 <= len(text) <= 10:
                self.used.add(text)
                return text


def build(rng: random.Random) -> World:
    names = Names(rng)
    countries = [names.word(3) + "ia" for _ in range(4)]
    mountains = [names.word(2) + " Mountains" for _ in range(4)]
    rivers: dict[str, River] = {}
    for length in rng.sample(range(120, 2400, 7), 6):
        name = names.word(2) + " River"
        rivers[name] = River(name, length, rng.choice(mountains))
    towns: dict[str, Town] = {}
    populations = rng.sample(range(2_000, 400_000, 37), 16)
    river_names = list(rivers)
    for i, population in enumerate(populations):
        name = names.word(rng.choice([2, 3]))
        river = river_names[i % len(river_names)]
        towns[name] = Town(name, countries[i % len(countries)], population, river)
        rivers[river].towns.append(name)
    town_names = list(towns)
    people: dict[str, Person] = {}
    births = rng.sample(range(1790, 1960), 32)
    for i in range(16):
        surname = names.word(rng.choice([2, 3]))
        for born in births[2 * i : 2 * i + 2]:
            name = f"{names.word(2)} {surname}"
            people[name] = Person(name, born, rng.choice(town_names), rng.choice(_OCCUPATIONS))
    companies: dict[str, Company] = {}
    founders = list(people)
    rng.shuffle(founders)
    trades = list(_TRADES)
    for _ in range(8):
        first = names.word(2)
        rng.shuffle(trades)
        for trade in trades[:2]:
            founder = people[founders.pop()]
            founded = founder.born + rng.randint(22, 55)
            while any(c.founded == founded for c in companies.values()):
                founded += 1
            name = f"{first} {trade}"
            companies[name] = Company(name, founder.name, founded, rng.choice(town_names), trade)
    bands: dict[str, Band] = {}
    adjectives, words = list(_BAND_ADJ), list(_BAND_WORDS)
    rng.shuffle(adjectives)
    rng.shuffle(words)
    free = list(people)
    rng.shuffle(free)
    for i in range(6):
        # A band is formed by two or three people aged 16 to 45 that year, in no other band.
        for anchor in free:
            formed = people[anchor].born + rng.randint(18, 30)
            members = sorted([n for n in free if 16 <= formed - people[n].born <= 45][:3])
            if len(members) >= 2:
                break
        else:
            raise AssertionError("no two free people of an age to form a band")
        for member in members:
            free.remove(member)
        name = f"The {adjectives[i]} {words[i]}"
        bands[name] = Band(name, rng.choice(town_names), formed, rng.choice(_GENRES), members)
    return World(countries, mountains, rivers, towns, people, companies, bands)


def _list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def documents(world: World, rng: random.Random) -> list[dict[str, str]]:
    """One paragraph per entity; each fact in one of several wordings."""
    docs: list[tuple[str, str]] = []
    for r in world.rivers.values():
        text = rng.choice(
            [
                f"The {r.name} rises in the {r.source} and flows through {_list(r.towns)}. "
                f"It is {r.length_km:,} kilometres long.",
                f"The {r.name} is a river {r.length_km:,} km in length. From its source in the "
                f"{r.source} it passes the towns of {_list(r.towns)}.",
                f"Rising in the {r.source}, the {r.name} runs for {r.length_km:,} kilometres; "
                f"{_list(r.towns)} lie on its banks.",
            ]
        )
        docs.append((r.name, text))
    for t in world.towns.values():
        text = rng.choice(
            [
                f"{t.name} is a town in {t.country}. It had a population of {t.population:,} at "
                f"the last census.",
                f"{t.name}, a market town of {t.country}, is home to {t.population:,} people.",
                f"With {t.population:,} inhabitants, {t.name} is one of the towns of {t.country}.",
            ]
        )
        docs.append((t.name, text))
    for p in world.people.values():
        text = rng.choice(
            [
                f"{p.name} (born {p.born} in {p.birthplace}) was a {p.occupation}.",
                f"{p.name} was a {p.occupation}, born in {p.birthplace} in {p.born}.",
                f"Born in {p.born} in the town of {p.birthplace}, {p.name} worked as a "
                f"{p.occupation}.",
            ]
        )
        docs.append((p.name, text))
    for c in world.companies.values():
        does = _TRADES[c.trade]
        text = rng.choice(
            [
                f"{c.name} is a company that {does}, founded in {c.founded} by {c.founder}. "
                f"Its headquarters are in {c.headquarters}.",
                f"{c.founder} founded {c.name} in {c.founded}. The firm, which {does}, is "
                f"based in {c.headquarters}.",
                f"Established in {c.founded}, {c.name} has its head office in "
                f"{c.headquarters}. Its founder was {c.founder}.",
            ]
        )
        docs.append((c.name, text))
    for b in world.bands.values():
        text = rng.choice(
            [
                f"{b.name} are a {b.genre} band formed in {b.town} in {b.formed}. The members are "
                f"{_list(b.members)}.",
                f"{_list(b.members)} formed the {b.genre} band {b.name} in {b.formed} in {b.town}.",
                f"{b.name}, a {b.genre} group, first played together in {b.town} in {b.formed}; "
                f"its members are {_list(b.members)}.",
            ]
        )
        docs.append((b.name, text))
    assert len({title for title, _ in docs}) == len(docs), "titles are unique"
    return [
        {"id": f"d{i:03d}", "title": title, "text": text} for i, (title, text) in enumerate(docs)
    ]


def _pairs(
    rng: random.Random, items: list[str], ok: Callable[[str, str], bool]
) -> list[tuple[str, str]]:
    """Every pair of two items for which `ok` holds, in a random order (a question takes a pair
    off the list, so no pair is asked twice)."""
    pool = list(items)
    rng.shuffle(pool)
    pairs = []
    for i, a in enumerate(pool):
        for b in pool[i + 1 :]:
            if ok(a, b):
                pairs.append((a, b))
    rng.shuffle(pairs)
    return pairs


def variant(i: int, count: int) -> int:
    """Which of `count` forms the `i`-th question of a kind takes. The kinds are taken in turn,
    five of them, so a kind's questions fall to the two halves (every other question) by the
    parity of `i`: forms alternating with `i` put one form in each half (every tuning yes/no
    answer was "no", every held-out one "yes", which a model answering "Yes" always got right).
    By pairs, each half gets every form."""
    return (i // 2) % count


def questions(world: World, rng: random.Random) -> list[Question]:
    w = world
    companies = list(w.companies)
    band_members = {m: b for b in w.bands.values() for m in b.members}
    rng.shuffle(companies)

    def founder(c: str) -> Person:
        return w.people[w.companies[c].founder]

    bridge: list[Question] = []
    for i, c in enumerate(companies[:PER_KIND]):
        f = founder(c)
        co = w.companies[c]
        match i % 5:
            case 0:
                q = (f"In which town was the founder of {c} born?", f.birthplace, [c, f.name])
            case 1:
                q = (
                    f"Which river flows through the town where {c} has its headquarters?",
                    w.towns[co.headquarters].river,
                    [c, w.towns[co.headquarters].river],
                )
                # The river's paragraph names its towns; the town's does not name its river.
            case 2:
                q = (f"In what year was the founder of {c} born?", str(f.born), [c, f.name])
            case 3:
                q = (
                    f"In which country is the headquarters of {c}?",
                    w.towns[co.headquarters].country,
                    [c, co.headquarters],
                )
            case _:
                q = (
                    f"What is the population of the town where {c} is based?",
                    str(w.towns[co.headquarters].population),
                    [c, co.headquarters],
                )
        bridge.append(Question("", "bridge", *q))

    three: list[Question] = []
    musicians = sorted(band_members)
    rng.shuffle(musicians)
    for i, c in enumerate(companies[PER_KIND : PER_KIND + 6]):
        f = founder(c)
        home = w.towns[f.birthplace]
        if variant(i, 2) == 0:
            q = (
                f"In which country was the founder of {c} born?",
                home.country,
                [c, f.name, home.name],
            )
        else:
            q = (
                f"Which river flows through the birthplace of the founder of {c}?",
                home.river,
                [c, f.name, home.river],
            )
        three.append(Question("", "three_hop", *q))
    for i, m in enumerate(musicians[:4]):
        b = band_members[m]
        town = w.towns[b.town]
        if variant(i, 2) == 0:
            q = (
                f"In which country was the band that {m} played in formed?",
                town.country,
                [b.name, town.name],
            )
        else:
            q = (
                f"In which mountains does the river of the town where {m}'s band was formed rise?",
                w.rivers[town.river].source,
                [b.name, town.river],
            )
        three.append(Question("", "three_hop", *q))

    comparison: list[Question] = []
    company_pairs = _pairs(rng, sorted(w.companies), lambda a, b: a.split()[0] != b.split()[0])
    people_pairs = _pairs(rng, sorted(w.people), lambda a, b: a.split()[1] != b.split()[1])
    town_pairs = _pairs(rng, sorted(w.towns), lambda a, b: True)
    river_pairs = _pairs(rng, sorted(w.rivers), lambda a, b: True)
    for i in range(PER_KIND):
        match variant(i, 4):
            case 0:
                a, b = company_pairs.pop()
                first = min((a, b), key=lambda c: w.companies[c].founded)
                q = (f"Which was founded earlier, {a} or {b}?", first, [a, b])
            case 1:
                a, b = people_pairs.pop()
                first = min((a, b), key=lambda p: w.people[p].born)
                q = (f"Who was born first, {a} or {b}?", first, [a, b])
            case 2:
                a, b = town_pairs.pop()
                big = max((a, b), key=lambda t: w.towns[t].population)
                q = (f"Which town has the larger population, {a} or {b}?", big, [a, b])
            case _:
                a, b = river_pairs.pop()
                long = max((a, b), key=lambda r: w.rivers[r].length_km)
                q = (f"Which river is longer, the {a} or the {b}?", long, [a, b])
        comparison.append(Question("", "comparison", *q))

    yes_no: list[Question] = []
    for i in range(PER_KIND):
        # Yes and no in turn within each half, the halves starting apart: 5 of each in all.
        want = "yes" if (i + i // 2) % 2 == 0 else "no"
        match variant(i, 5):
            case 0 | 3:
                a, b = next(
                    (a, b)
                    for a, b in company_pairs
                    if (w.companies[a].founded < w.companies[b].founded) == (want == "yes")
                )
                company_pairs.remove((a, b))
                q = (f"Was {a} founded before {b}?", want, [a, b])
            case 1 | 4:
                a, b = next(
                    (a, b)
                    for a, b in town_pairs
                    if (w.towns[a].country == w.towns[b].country) == (want == "yes")
                )
                town_pairs.remove((a, b))
                q = (f"Are {a} and {b} in the same country?", want, [a, b])
            case _:
                a, b = next(
                    (a, b)
                    for a, b in people_pairs
                    if (w.people[a].born < w.people[b].born) == (want == "yes")
                )
                people_pairs.remove((a, b))
                q = (f"Was {a} born before {b}?", want, [a, b])
        yes_no.append(Question("", "yes_no", *q))

    parallel: list[Question] = []
    for i in range(PER_KIND):
        if variant(i, 2) == 0:
            a, b = company_pairs.pop()
            early, late = sorted((a, b), key=lambda c: w.companies[c].founded)
            gap = w.companies[late].founded - w.companies[early].founded
            q = (f"How many years after {early} was {late} founded?", str(gap), [early, late])
        else:
            a, b = people_pairs.pop()
            old, young = sorted((a, b), key=lambda p: w.people[p].born)
            gap = w.people[young].born - w.people[old].born
            q = (f"How many years older is {old} than {young}?", str(gap), [old, young])
        parallel.append(Question("", "parallel", *q))

    groups = [bridge, three, comparison, yes_no, parallel]
    assert all(len(g) == PER_KIND for g in groups)
    ordered = [g[i] for i in range(PER_KIND) for g in groups]
    return [
        Question(f"mh{n:02d}-{q.kind}", q.kind, q.question, q.answer, q.support)
        for n, q in enumerate(ordered)
    ]


def generate() -> tuple[list[dict[str, str]], list[dict[str, object]]]:
    """The documents and the questions, from the fixed seed."""
    rng = random.Random(SEED)
    world = build(rng)
    return documents(world, rng), [q.record() for q in questions(world, rng)]


def _jsonl(records: list[dict[str, object]] | list[dict[str, str]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def main() -> None:
    docs, asked = generate()
    (HERE / "documents.jsonl").write_text(_jsonl(docs), encoding="utf-8")
    (HERE / "questions.jsonl").write_text(_jsonl(asked), encoding="utf-8")
    print(f"{len(docs)} documents, {len(asked)} questions in {HERE}")


if __name__ == "__main__":
    main()
