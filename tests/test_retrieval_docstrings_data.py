"""The docstring retrieval set (benchmarks/data/retrieval_docstrings/) is well-formed: a catalog
of unique tools, queries whose gold is in it, the styles and intent counts its README states,
and a tuning/held-out split that the README's rule reproduces."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
import yaml

from tests.helpers import ROOT

DATA = ROOT / "benchmarks" / "data" / "retrieval_docstrings"
INTENTS = {"short": (1, 1), "natural": (1, 1), "multi": (2, 3), "none": (0, 0)}
HALVES = ("tuning", "heldout")


def load(name: str) -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = yaml.safe_load((DATA / name).read_text(encoding="utf-8"))
    return loaded


def catalog_names() -> list[str]:
    return [tool["name"] for tool in load("catalog.yaml")]


class TestCatalog:
    def test_tools_have_the_tool_metadata_shape(self) -> None:
        """Every tool has a name, a description, params and one tag, and nothing else."""
        for tool in load("catalog.yaml"):
            assert set(tool) == {"name", "description", "params", "tags"}, tool
            assert tool["name"].isidentifier()
            assert tool["name"] == tool["name"].lower()
            assert tool["description"].strip() == tool["description"] != ""
            assert all(isinstance(p, str) for p in tool["params"])
            assert len(tool["tags"]) == 1

    def test_names_are_unique_and_about_400_to_700(self) -> None:
        """Names are unique; the size is the one the README gives."""
        names = catalog_names()
        assert len(names) == len(set(names))
        assert 400 <= len(names) <= 700

    def test_real_near_duplicates_are_kept(self) -> None:
        """The duplicates retrieval must collapse are in the set."""
        assert {"os_remove", "os_unlink", "json_dump", "json_dumps", "pow", "math_pow"} <= set(
            catalog_names()
        )

    def test_the_header_records_where_it_came_from(self) -> None:
        """The header names the Python and package versions the docstrings were read from."""
        header = (DATA / "catalog.yaml").read_text(encoding="utf-8").splitlines()[:2]
        assert header[0].startswith("# ")
        assert "extract.py" in header[0]
        for named in ("Python 3.", "pandas", "numpy", "httpx"):
            assert named in header[1]


class TestQueries:
    @pytest.mark.parametrize("half", HALVES)
    def test_gold_is_in_the_catalog_with_1_to_4_tools_per_intent(self, half: str) -> None:
        """Every acceptable tool of every intent is a catalog tool, listed once."""
        names = set(catalog_names())
        for query in load(f"{half}.yaml"):
            for intent in query["intents"]:
                assert 1 <= len(intent) <= 4, query
                assert len(intent) == len(set(intent)), query
                assert set(intent) <= names, query

    @pytest.mark.parametrize("half", HALVES)
    def test_styles_and_intent_counts(self, half: str) -> None:
        """short and natural have one intent, multi two or three, none zero."""
        for query in load(f"{half}.yaml"):
            assert set(query) == {"query", "style", "intents"}, query
            low, high = INTENTS[query["style"]]
            assert low <= len(query["intents"]) <= high, query

    def test_queries_are_unique_and_name_no_tool(self) -> None:
        """No query is written twice, and none spells a tool's name."""
        texts = [q["query"] for half in HALVES for q in load(f"{half}.yaml")]
        assert len(texts) == len(set(texts))
        named = {n for n in catalog_names() if "_" in n}
        assert [t for t in texts if any(n in t.split() for n in named)] == []


class TestSplit:
    def test_halves_are_disjoint_and_every_style_is_in_both(self) -> None:
        """No query is in both halves, and each holds every style in near-equal parts."""
        tuning, heldout = (load(f"{half}.yaml") for half in HALVES)
        assert not {q["query"] for q in tuning} & {q["query"] for q in heldout}
        for style in INTENTS:
            mine = [sum(q["style"] == style for q in half) for half in (tuning, heldout)]
            assert min(mine) > 0, (style, mine)
            assert abs(mine[0] - mine[1]) <= 1, (style, mine)

    def test_the_split_follows_the_rule(self) -> None:
        """Per style, queries sorted by the SHA-1 of their text alternate tuning, held-out."""
        every = [q for half in HALVES for q in load(f"{half}.yaml")]
        expected: dict[str, list[dict[str, Any]]] = {half: [] for half in HALVES}
        for style in INTENTS:
            mine = sorted(
                (q for q in every if q["style"] == style),
                key=lambda q: hashlib.sha1(q["query"].encode("utf-8")).hexdigest(),
            )
            for index, query in enumerate(mine):
                expected[HALVES[index % 2]].append(query)
        assert load("tuning.yaml") == expected["tuning"]
        assert load("heldout.yaml") == expected["heldout"]
