"""benchmarks/knowledge.py runs, and its questions are well-formed. Its numbers are read by
people, never asserted here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from rich.console import Console

from agentrt.knowledge.contexts import load_knowledge_config
from agentrt.knowledge.documents import read_document
from agentrt.knowledge.ingest import source_files

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    """benchmarks/knowledge.py as a module (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "knowledge_benchmark", BENCHMARKS / "knowledge.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module


class TestQuestions:
    def test_at_least_100_each_with_gold_sections_that_exist(self, bench: ModuleType) -> None:
        """Every gold (item, heading) is a section of the corpus as the ingest chunks it."""
        questions = bench.load_questions()
        assert len(questions) >= 100
        assert len({q.question for q in questions}) == len(questions)
        config = load_knowledge_config(bench.DATA)
        assert config is not None
        sections = set()
        for spec in config.contexts:
            for item, path in source_files(config, spec).items():
                for chunk in read_document(path, config.chunk_chars).chunks:
                    sections.add((item, chunk.heading.rsplit(" › ", 1)[-1]))
        missing = [(q.question, g) for q in questions for g in q.gold if g not in sections]
        assert missing == []

    def test_the_licences_are_noted(self, bench: ModuleType) -> None:
        noted = (bench.DATA / "SOURCES.md").read_text()
        for folder in ("web", "cli", "data"):
            for path in (bench.DATA / folder).glob("*.md"):
                name = path.name if "-skill-" not in path.name else "fastapi-skill-*.md"
                assert f"`{folder}/{name}`" in noted, path


class TestSmoke:
    def test_a_slice_runs_end_to_end(self, bench: ModuleType, tmp_path: Path) -> None:
        """One context ingested for real, the questions about it, the printed table."""
        kb = bench.open_corpus(tmp_path / "store", ["cli"])
        cli_items = {i.id for i in kb.store.items({"cli": None})}
        questions = [
            q for q in bench.load_questions() if all(item in cli_items for item, _ in q.gold)
        ]
        assert len(questions) >= 10
        scores = bench.evaluate(kb, questions)
        assert [s.method for s in scores] == ["hybrid", "semantic", "keyword"]
        for s in scores:
            assert 0 < s.mrr <= 1
            assert 0 < s.recall_at_5 <= 1
            assert len(s.misses) == round((1 - s.recall_at_5) * len(questions))
        console = Console(record=True, width=100)
        console.print(bench.table(scores, len(questions), 42))
        text = console.export_text()
        assert "recall@5" in text
        assert "hybrid" in text
