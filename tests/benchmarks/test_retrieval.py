"""benchmarks/retrieval.py runs, and its labelled data is well-formed. Its numbers are read by
people, never asserted here."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from agentrt.catalog.metadata import CapabilityMap, ToolMetadata
from tests.helpers import BENCHMARKS, load_benchmark

DATA = BENCHMARKS / "data" / "retrieval"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("retrieval")


def raw_tools() -> list[tuple[str, dict[str, object]]]:
    return [
        (path.stem, entry)
        for path in sorted((DATA / "tools").glob("*.yaml"))
        for entry in yaml.safe_load(path.read_text(encoding="utf-8"))
    ]


class TestLabelledData:
    """Checked from the files themselves, not through the benchmark's loader."""

    def test_the_catalog(self) -> None:
        capabilities = CapabilityMap.model_validate(
            yaml.safe_load((DATA / "capabilities.yaml").read_text(encoding="utf-8"))
        )
        tools = [ToolMetadata.model_validate(entry) for _, entry in raw_tools()]
        names = Counter(t.name for t in tools)
        assert [n for n, count in names.items() if count > 1] == []
        assert len(names) >= 300
        assert len({domain for domain, _ in raw_tools()}) >= 15
        for tool in tools:
            assert tool.params, tool.name
            for capability in tool.capabilities:
                assert capabilities.resolve(capability) is not None, (tool.name, capability)

    def test_the_queries(self) -> None:
        names = {entry["name"] for _, entry in raw_tools()}
        queries = yaml.safe_load((DATA / "queries.yaml").read_text(encoding="utf-8"))
        assert len(queries) >= 100
        texts = [q["query"] for q in queries]
        assert len(set(texts)) == len(texts)
        for query in queries:
            assert set(query) == {"query", "gold"}
            assert isinstance(query["query"], str)
            assert query["query"].strip()
            assert 1 <= len(query["gold"]) <= 3, query
            assert len(set(query["gold"])) == len(query["gold"]), query
            assert set(query["gold"]) <= names, query

    def test_the_benchmark_loads_it(self, bench: ModuleType) -> None:
        labelled = bench.load_labelled()
        assert len(labelled.tools) == len(raw_tools())
        assert set(labelled.domain.values()) <= set(bench.VENDORS)


class TestScaleCatalog:
    def test_deterministic_and_well_formed(self, bench: ModuleType) -> None:
        labelled = bench.load_labelled()
        tools, variant_of = bench.scale_catalog(labelled, 3000, seed=4)
        assert len(tools) == 3000
        assert set(tools) == set(variant_of)
        assert all(name == tools[name].name for name in tools)
        # Every labelled tool is in it unchanged; every other tool is a variant of one of them.
        assert all(tools[name] == meta for name, meta in labelled.tools.items())
        assert set(variant_of.values()) == set(labelled.tools)
        again, _ = bench.scale_catalog(labelled, 3000, seed=4)
        assert again == tools
        other, _ = bench.scale_catalog(labelled, 3000, seed=5)
        assert other != tools

    def test_variants_are_reworded(self, bench: ModuleType) -> None:
        labelled = bench.load_labelled()
        tools, variant_of = bench.scale_catalog(labelled, 3000, seed=4)
        variants = [n for n, base in variant_of.items() if n != base]
        assert all(
            tools[n].description != labelled.tools[variant_of[n]].description for n in variants
        )


def test_the_slice_keeps_the_tools_its_queries_name(bench: ModuleType) -> None:
    labelled = bench.sliced(bench.load_labelled(), 8)
    assert len(labelled.queries) == 8
    named = {g for q in labelled.queries for g in q.gold}
    assert set(labelled.tools) == named | set(bench.SAFETY)
    assert set(labelled.domain) == set(labelled.tools)


def bench_rules() -> tuple[str, ...]:
    return ("dense", "bm25", "rrf", "weighted", "hybrid")


def test_the_styles_of_the_labelled_set(bench: ModuleType) -> None:
    """Natural queries as written; multi-intent ones joined from two of different domains,
    with both golds as intents; the no-fit set removes half the domains."""
    labelled = bench.load_labelled()
    styled = bench.styled_labelled(labelled, pairs=20, seed=4)
    multi = [q for q in styled if q.style == "multi"]
    assert len(multi) == 20
    assert len(styled) == len(labelled.queries) + 20
    assert all(len(q.intents) == 2 for q in multi)
    registry, fits = bench.held_out_domains(labelled, seed=4)
    none = [q for q in fits if q.style == "none"]
    assert 0 < len(none) < len(fits)
    served = {g for q in fits for i in q.intents for g in i}
    assert served <= set(registry.tools)
    gold = {q.text: q.gold for q in labelled.queries}
    assert all(not set(gold[q.text]) & set(registry.tools) for q in none)


def _function(name: str, description: str, *params: str) -> dict[str, object]:
    properties = {p: {"type": "string", "description": p} for p in params}
    return {"name": name, "description": description, "parameters": {"properties": properties}}


def _question(*messages: tuple[str, str]) -> list[list[dict[str, str]]]:
    return [[{"role": role, "content": content} for role, content in messages]]


@pytest.fixture
def bfcl_wheel(tmp_path: Path) -> Path:
    """A wheel shaped as bfcl-eval's (its data files, JSON lines): the weather tool in two
    categories with two descriptions, a parallel question over two tools, an irrelevant one."""
    weather = _function("get_weather", "Current weather of a city.\n\nUses a paid API.", "city")
    files: dict[str, list[dict[str, object]]] = {
        "BFCL_v4_simple_python.json": [
            {"id": "simple_0", "question": _question(("user", "Weather in Oslo?")),
             "function": [weather]},
        ],
        "possible_answer/BFCL_v4_simple_python.json": [
            {"id": "simple_0", "ground_truth": [{"get_weather": {"city": ["Oslo"]}}]},
        ],
        "BFCL_v4_parallel_multiple.json": [
            {"id": "pm_0",
             "question": _question(
                 ("system", "Be brief."), ("user", "Weather in Rome, and a taxi.")
             ),
             "function": [_function("get_weather", "Another description.", "town"),
                          _function("book_taxi", "Book a taxi.", "to")]},
        ],
        "possible_answer/BFCL_v4_parallel_multiple.json": [
            {"id": "pm_0", "ground_truth": [{"get_weather": {"city": ["Rome"]}},
                                            {"book_taxi": {"to": ["home"]}},
                                            {"get_weather": {"city": ["Paris"]}}]},
        ],
        "BFCL_v4_irrelevance.json": [
            {"id": "irrelevance_0", "question": _question(("user", "Solve x^2 = 4.")),
             "function": [_function("bmi", "Body mass index.", "weight", "height")]},
        ],
    }  # fmt: skip
    bench = load_benchmark("bfcl")
    for category, style in bench.CATEGORIES.items():
        files.setdefault(f"BFCL_v4_{category}.json", [])
        if style != "none":
            files.setdefault(f"possible_answer/BFCL_v4_{category}.json", [])
    wheel = tmp_path / "bfcl_eval-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as out:
        for name, rows in files.items():
            out.writestr(f"bfcl_eval/data/{name}", "".join(json.dumps(r) + "\n" for r in rows))
    return wheel


class TestThePublicSet:
    def test_one_tool_per_name_and_the_questions_by_style(self, bfcl_wheel: Path) -> None:
        tools, questions = load_benchmark("bfcl").load(bfcl_wheel)
        assert sorted(tools) == ["bmi", "book_taxi", "get_weather"]
        # The first description seen, its first paragraph; the parameters by name.
        assert tools["get_weather"].description == "Current weather of a city."
        assert tools["get_weather"].params == ["city"]
        assert questions == [
            ("Weather in Oslo?", "single", ["get_weather"]),
            ("Weather in Rome, and a taxi.", "parallel", ["get_weather", "book_taxi"]),
            ("Solve x^2 = 4.", "none", []),
        ]

    def test_a_question_without_its_answer_is_an_error(self, tmp_path: Path) -> None:
        data = tmp_path / "data"
        (data / "possible_answer").mkdir(parents=True)
        bench = load_benchmark("bfcl")
        for category in bench.CATEGORIES:
            (data / f"BFCL_v4_{category}.json").write_text("")
            (data / "possible_answer" / f"BFCL_v4_{category}.json").write_text("")
        row = {"id": "simple_7", "question": _question(("user", "Hi")), "function": []}
        (data / "BFCL_v4_simple_python.json").write_text(json.dumps(row))
        with pytest.raises(ValueError, match="simple_python: question simple_7 has no ground"):
            bench.load(data)


def test_a_slice_prints_the_table(bfcl_wheel: Path) -> None:
    """A slice (8 queries, a 40-tool catalog) runs the real code paths end to end and prints
    every row of the table, the public set's (a small one shaped as it) too."""
    done = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "retrieval.py"),
            "--slice",
            "8",
            "--catalog",
            "40",
            "--public",
            str(bfcl_wheel),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for row in (
        "labelled set",
        "recall@1 ",
        "recall@5 ",
        "recall@10 ",
        "MRR@10",
        "recall@1, 40 tools",
        "(a) rank + narrow, p50",
        "(a) rank + narrow, p99",
        "(b) embed + rank + narrow, p50",
        "(b) embed + rank + narrow, p99",
        "the embedding alone, p50",
        "the embedding alone, p95",
        "the same query again, p50",
        "(b) 2 busy, p50",
        "(b) 8 queries at once, p50",
        "(b) 8 at once, 2 busy, p50",
        "(b) 2 busy, p95",
        "the embedding alone, 2 busy, p50",
        "the embedding alone, 2 busy, p95",
        "index build, cold",
        "embedding model",
        "no-fit AUROC",
        "pts over max(dense, BM25)",
        *(f"│ natural │ {rule} " for rule in bench_rules()),
        *(f"│ multi   │ {rule} " for rule in bench_rules()),
        "public set (BFCL v4, never tuned on), 3 pooled tools: 3 questions",
        *(f"│ parallel │ {rule} " for rule in bench_rules()),
    ):
        assert row in out, row
    # Not timings: what the cache must do, whatever the machine.
    assert "embedded 40" in out
    assert "embeds 0 ✓" in out
    assert "embeds 1 ✓" in out
