"""benchmarks/knowledge.py runs, and its questions are well-formed. Its numbers are read by
people, never asserted here."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from rich.console import Console

from agentrt import ModelRequest, ModelResponseEvent, ScriptedModel, Trajectory, TurnStartedEvent
from agentrt.contexts import load_knowledge_config
from agentrt.knowledge.documents import read_document
from agentrt.knowledge.ingest import source_files
from tests.helpers import call, load_benchmark
from tests.knowledge.support import tool_results


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("knowledge")


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


def search(query: str, knowledge_base: str) -> str:
    """The best keyword hit of one knowledge base, without its text."""
    return call(
        "search_content",
        query=query,
        knowledge_base=knowledge_base,
        searchMethod="keyword",
        includeContent=False,
        limit=1,
    )


def cite_latest(request: ModelRequest) -> str:
    """Finish citing the chunk the latest search returned."""
    (result,) = tool_results(request)
    return call(
        "finish_retrieval", answer=f"Found it [{result['results'][0]['chunk']}].", sources=[]
    )


def report_total(request: ModelRequest) -> str:
    """Finish with the number of documents the count returned."""
    (counts,) = tool_results(request)
    total = counts["total"]["items"]
    return call("finish_retrieval", answer=f"There are {total} documents.", sources=[])


def rows(table: str) -> dict[str, list[str]]:
    """The cells of a rendered table, by their first cell."""
    lines = [line.strip("│ ").split("│") for line in table.splitlines() if "│" in line]
    return {cells[0].strip(): [c.strip() for c in cells[1:]] for cells in lines}


class TestAgentQuestions:
    def test_six_per_strategy_with_gold_sections_of_the_workspace_corpus(
        self, bench: ModuleType
    ) -> None:
        """Gold sections are sections of the corpus the agent searches, as the ingest chunks it."""
        questions = bench.load_agent_questions()
        assert [q.strategy for q in questions] == [s for s in bench.STRATEGIES for _ in range(6)]
        assert len({q.question for q in questions}) == len(questions)
        config = load_knowledge_config(bench.WORKSPACE)
        assert config is not None
        sections = set()
        for spec in config.contexts:
            for item, path in source_files(config, spec).items():
                for chunk in read_document(path, config.chunk_chars).chunks:
                    sections.add((item, chunk.heading.rsplit(" › ", 1)[-1]))
        assert [g for q in questions for g in q.gold if g not in sections] == []
        assert all(q.count is not None for q in questions if q.strategy == "aggregate")

    def test_a_mislabelled_line_is_refused_with_its_line_number(
        self, bench: ModuleType, tmp_path: Path
    ) -> None:
        path = tmp_path / "questions.jsonl"
        lines = [
            {"question": "How many guides?", "strategy": "aggregate", "count": 3},
            {"question": "What does E42 mean?", "strategy": "targeted"},
        ]
        path.write_text("\n".join(json.dumps(line) for line in lines))
        with pytest.raises(ValueError, match=r"questions.jsonl:2: .*a targeted question needs"):
            bench.load_agent_questions(path)


@pytest.fixture(scope="module")
def agent_root(bench: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The knowledge workspace, copied and ingested as the benchmark does it."""
    root: Path = bench.prepare_workspace(tmp_path_factory.mktemp("agent"))
    return root


class TestAgentSmoke:
    async def test_one_question_per_strategy_scored_from_the_trajectories(
        self, bench: ModuleType, agent_root: Path, tmp_path: Path
    ) -> None:
        """A scripted model searches for real and finishes; steps, statuses, gold and counts
        in the table are those of the recorded runs."""
        questions = bench.load_agent_questions(per_strategy=1)
        assert [q.strategy for q in questions] == list(bench.STRATEGIES)
        model = ScriptedModel(
            [
                # aggregate, "how many docs altogether?": 2 turns, the right count
                call("count_items_or_chunks"),
                report_total,
                # list, the rain gauge: a gold section found and cited
                search("rain gauge factor", "guides"),
                cite_latest,
                # targeted, E07: only the warranty found and cited, no gold
                search("warranty", "support"),
                cite_latest,
                # exploratory, keeping the station accurate: 3 turns, gold found (batteries),
                # but the answer cites the E42 chunk, which is not gold
                search("batteries", "guides"),
                search("E42", "support"),
                cite_latest,
            ]
        )
        lines: list[str] = []
        runs = await bench.run_agent(model, questions, agent_root, tmp_path / "runs", lines.append)

        got = {
            r.question.strategy: (r.steps, r.retrieved_gold, r.cited_gold, r.count_right)
            for r in runs
        }
        assert got == {
            "aggregate": (2, None, None, True),
            "list": (2, True, True, None),
            "targeted": (2, False, False, None),
            "exploratory": (3, True, False, None),
        }
        recorded = [Trajectory.read(p) for p in (tmp_path / "runs").rglob("*.jsonl")]
        by_query = {t.header.query: t.events for t in recorded}
        assert len(by_query) == 4
        for run in runs:
            events = by_query[run.question.question]
            assert run.steps == sum(isinstance(e, TurnStartedEvent) for e in events)
            assert run.tokens == sum(
                e.usage.total_tokens for e in events if isinstance(e, ModelResponseEvent)
            )
            assert run.status == "ok"
            assert run.by_finish
        assert [r.budget for r in runs] == [2, 4, 6, 6]
        assert len(lines) == 8
        assert lines[-1].startswith("[4/4] exploratory: ok (finish_retrieval); 3/6 steps;")

        console = Console(record=True, width=200)
        console.print(bench.agent_table(runs, "scripted"))
        table = rows(console.export_text())
        # runs, budget, steps mean, max, ok, by finish, exhausted, error, other, retrieved, cited,
        # count
        assert table["aggregate"][:12] == [
            *("1", "2", "2.00", "2", "1", "1", "0", "0", "0"),
            *("–", "–", "1/1"),
        ]
        assert table["list"][:12] == [
            *("1", "4", "2.00", "2", "1", "1", "0", "0", "0"),
            *("1/1", "1/1", "–"),
        ]
        assert table["targeted"][9:12] == ["0/1", "0/1", "–"]
        assert table["exploratory"][:12] == [
            *("1", "6", "3.00", "3", "1", "1", "0", "0", "0"),
            *("1/1", "0/1", "–"),
        ]

    async def test_runs_that_end_without_finish_retrieval(
        self, bench: ModuleType, agent_root: Path, tmp_path: Path
    ) -> None:
        """Counting twice exhausts the aggregate budget; plain text ends a run ok, but not by
        finish_retrieval."""
        aggregate, _, targeted, _ = bench.load_agent_questions(per_strategy=1)
        model = ScriptedModel(
            [
                call("count_items_or_chunks"),
                call("count_items_or_chunks", knowledge_bases=["guides"]),
                "Two years, I think.",
            ]
        )
        runs = await bench.run_agent(model, [aggregate, targeted], agent_root, tmp_path)
        assert [(r.status, r.by_finish, r.steps, r.count_right) for r in runs] == [
            ("budget_exhausted", False, 2, False),
            ("ok", False, 1, None),
        ]
        console = Console(record=True, width=200)
        console.print(bench.agent_table(runs, "scripted"))
        table = rows(console.export_text())
        assert table["aggregate"][4:9] == ["0", "0", "1", "0", "0"]
        assert table["targeted"][4:12] == ["1", "0", "0", "0", "0", "0/1", "0/1", "–"]
