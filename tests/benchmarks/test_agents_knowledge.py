"""benchmarks/agents_knowledge.py: its halves split each strategy's questions, a row is right
only when the run answered, ended by finish_retrieval and cited gold (or counted right), and a
strategy's tasks run end to end through the real knowledge workspace with a scripted model."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from agentrt import ModelRequest, ScriptedModel
from tests.helpers import call, load_benchmark
from tests.knowledge.support import tool_results


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("agents_knowledge")


class TestTasks:
    def test_each_strategys_questions_split_in_two_fixed_disjoint_halves(
        self, bench: ModuleType
    ) -> None:
        tuning, held_out = bench.tasks("tuning"), bench.tasks("held-out")
        assert bench.PLANNERS == ("aggregate", "list", "targeted", "exploratory")
        for got, places in ((tuning, (1, 3, 5)), (held_out, (2, 4, 6))):
            # The strategies in turn, so that any first N tasks cover them alike.
            assert [t.id for t in got] == [f"{s}-{n}" for n in places for s in bench.PLANNERS]
            assert all(t.kind == t.question.strategy == t.id.split("-")[0] for t in got)
        questions = bench.knowledge.load_agent_questions()
        assert Counter(t.question for t in tuning + held_out) == Counter(questions)
        assert {t.question for t in tuning}.isdisjoint({t.question for t in held_out})
        by_strategy = {s: [q for q in questions if q.strategy == s] for s in bench.PLANNERS}
        for t in tuning + held_out:
            strategy, n = t.id.split("-")
            assert by_strategy[strategy][int(n) - 1] == t.question


def scored(bench: ModuleType, strategy: str, **marks: Any) -> Any:
    """A `knowledge.AgentRun` of the first question of `strategy` with `marks` set."""
    question = next(q for q in bench.knowledge.load_agent_questions() if q.strategy == strategy)
    defaults: dict[str, Any] = {
        "status": "ok",
        "by_finish": True,
        "steps": 2,
        "budget": 4,
        "retrieved_gold": None if strategy == "aggregate" else True,
        "cited_gold": None if strategy == "aggregate" else True,
        "count_right": True if strategy == "aggregate" else None,
        "tokens": 0,
        "seconds": 1.0,
        "answer": "x",
    }
    return bench.knowledge.AgentRun(question=question, **(defaults | marks))


class TestScoring:
    def test_right_needs_an_answered_run_ended_by_finish_with_gold_cited(
        self, bench: ModuleType
    ) -> None:
        good = scored(bench, "targeted")
        assert bench.right(good, answered=True)
        assert not bench.right(good, answered=False)  # a doubtful or error run
        assert not bench.right(replace(good, by_finish=False), answered=True)
        assert not bench.right(replace(good, cited_gold=False), answered=True)
        assert bench.detail(good) == (
            "by_finish=yes; cited_gold=yes; retrieved_gold=yes; count_right=–"
        )

    def test_an_aggregate_question_is_right_by_its_count(self, bench: ModuleType) -> None:
        good = scored(bench, "aggregate")
        assert bench.right(good, answered=True)
        assert not bench.right(replace(good, count_right=False), answered=True)
        assert not bench.right(replace(good, by_finish=False), answered=True)
        assert (
            bench.detail(good) == "by_finish=yes; cited_gold=–; retrieved_gold=–; count_right=yes"
        )

    def test_targets_count_finishes_over_all_runs_and_gold_over_graded_ones(
        self, bench: ModuleType
    ) -> None:
        runs = [
            scored(bench, "aggregate"),
            scored(bench, "list", by_finish=False, cited_gold=False),
            scored(bench, "targeted"),
            scored(bench, "exploratory", cited_gold=False),
        ]
        rows = [SimpleNamespace(detail=bench.detail(r)) for r in runs]
        assert bench.targets(rows) == {"by_finish": (3, 4), "cited_gold": (1, 3)}


def search(query: str, knowledge_base: str) -> str:
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
    return call("finish_retrieval", answer=f"See [{result['results'][0]['chunk']}].", sources=[])


class TestEndToEnd:
    async def test_a_strategys_tasks_run_through_the_real_workspace(
        self, bench: ModuleType, tmp_path: Path
    ) -> None:
        """The first eight tuning tasks are passed; only their two `list` ones run. The first
        finds and cites a gold section; the second ends in plain text, so not by finish."""
        model = ScriptedModel(
            [
                search("rain gauge factor", "guides"),
                cite_latest,
                "Look at the calibration guide.",
            ]
        )
        lines: list[str] = []
        rows = await bench.run(
            bench.tasks("tuning")[:8],
            model=model,
            model_name="scripted",
            planner="list",
            workdir=tmp_path,
            progress=lines.append,
        )
        assert [(r.task, r.family, r.planner, r.kind) for r in rows] == [
            ("list-1", "knowledge", "list", "list"),
            ("list-3", "knowledge", "list", "list"),
        ]
        assert [(r.right, r.run.status) for r in rows] == [(True, "ok"), (False, "ok")]
        assert rows[0].detail.startswith("by_finish=yes; cited_gold=yes; retrieved_gold=yes")
        assert rows[1].detail.startswith("by_finish=no; cited_gold=no; retrieved_gold=no")
        assert rows[0].run.tool_calls == 2
        assert bench.targets(rows) == {"by_finish": (1, 2), "cited_gold": (1, 2)}
        assert lines[0] == "knowledge: ingesting the workspace for list"
        assert list((tmp_path / "trajectories").rglob("*.jsonl"))
        assert (
            await bench.run(
                [t for t in bench.tasks("tuning") if t.kind == "aggregate"],
                model=model,
                model_name="scripted",
                planner="list",
                workdir=tmp_path,
                progress=lines.append,
            )
            == []
        )
