"""benchmarks/agents_multihop.py: its generated world is what its docstring says and its answers
follow from the paragraphs, its halves are fixed, its scorer is HotpotQA's and refuses runs that
did not answer, and a question runs end to end through each planner. Its numbers are read by
people, never asserted here."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agentrt import ScriptedModel
from tests.helpers import call, load_benchmark
from tests.planning.plans import finish, node, plan
from tests.planning.programs import assign, calling, program, reasoning

KINDS = ("bridge", "three_hop", "comparison", "yes_no", "parallel")


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("agents_multihop")


@pytest.fixture(scope="module")
def paragraphs(bench: ModuleType) -> dict[str, str]:
    return {d["title"]: d["text"] for d in bench.documents()}


def summary(bench: ModuleType, answer: str, status: str = "ok", doubt: str | None = None) -> Any:
    return bench.RunSummary(
        status=status,
        doubt=doubt,
        answer=answer,
        seconds=1.0,
        steps=2,
        tool_calls=2,
        failed_calls=0,
        invalid_calls=0,
        invalid_plans=0,
        repairs=0,
        fallbacks=0,
    )


class TestData:
    def test_it_is_what_the_docstring_says(
        self, bench: ModuleType, paragraphs: dict[str, str]
    ) -> None:
        tasks = bench.load()
        assert len(bench.documents()) == len(paragraphs) == 76
        assert len(tasks) == 50
        assert [t.kind for t in tasks] == list(KINDS) * 10
        assert len({t.id for t in tasks}) == len({t.question for t in tasks}) == 50
        for t in tasks:
            assert t.support, t.id
            assert all(title in paragraphs for title in t.support), t.id
        yes_no = Counter(t.answer for t in tasks if t.kind == "yes_no")
        assert yes_no == {"yes": 5, "no": 5}
        # Within each half too: a model that always answers "yes" must not score a half's five.
        for which in ("tuning", "held-out"):
            in_half = bench.half(tasks, which)
            assert {t.answer for t in in_half if t.kind == "yes_no"} == {"yes", "no"}

    def test_the_committed_files_are_what_the_generator_writes(self, bench: ModuleType) -> None:
        spec = importlib.util.spec_from_file_location(
            "multihop_generate", bench.DATA / "generate.py"
        )
        assert spec is not None
        assert spec.loader is not None
        generator = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = generator  # its dataclasses look their module up
        spec.loader.exec_module(generator)
        docs, questions = generator.generate()
        assert docs == bench.documents()
        lines = (bench.DATA / "questions.jsonl").read_text(encoding="utf-8").splitlines()
        assert questions == [json.loads(line) for line in lines]

    def test_each_answer_follows_from_its_paragraphs(
        self, bench: ModuleType, paragraphs: dict[str, str]
    ) -> None:
        """Read back from the rendered text, not from the generator's graph: the numbers a
        comparison rests on, the country a town is in, the chain a bridge follows."""

        def number(title: str) -> int:
            (value,) = re.findall(r"\b\d[\d,]*\b", paragraphs[title])
            return int(value.replace(",", ""))

        def country(title: str) -> str:
            (name,) = re.findall(r"\b\w+ia\b", paragraphs[title])
            return str(name)

        def names(title: str) -> set[str]:
            return set(re.findall(r"\b[A-Z]\w+\b", paragraphs[title])) - {"The", "Its", "It"}

        for t in bench.load():
            a, b = t.support[0], t.support[-1]
            if t.kind == "comparison":
                pick = min if re.search(r"earlier|first", t.question) else max
                assert t.answer == pick((a, b), key=number), t.id
            elif t.kind == "yes_no":
                if "same country" in t.question:
                    truth = country(a) == country(b)
                else:
                    truth = number(a) < number(b)
                assert t.answer == ("yes" if truth else "no"), t.id
            elif t.kind == "parallel":
                assert int(t.answer) == number(b) - number(a) > 0, t.id
            else:
                assert bench.normalise(t.answer) in bench.normalise(paragraphs[b]), t.id
                assert t.support[0] in t.question or names(a) & set(t.question.split()), t.id
                for here, there in zip(t.support, t.support[1:], strict=False):
                    assert there in paragraphs[here] or names(here) & names(there), t.id
            if t.kind in ("comparison", "yes_no", "parallel"):
                assert a in t.question, t.id
                assert b in t.question, t.id

    def test_the_halves_are_fixed_and_disjoint(self, bench: ModuleType) -> None:
        tuning, held_out = bench.tasks("tuning"), bench.tasks("held-out")
        assert [t.id for t in tuning] == [f"mh{n:02d}-{KINDS[n % 5]}" for n in range(0, 50, 2)]
        assert {t.id for t in tuning}.isdisjoint(t.id for t in held_out)
        assert len(tuning) + len(held_out) == 50
        assert Counter(t.kind for t in tuning) == Counter(t.kind for t in held_out)


class TestScoring:
    def test_hotpotqa_normalisation_exact_match_and_f1(self, bench: ModuleType) -> None:
        assert bench.normalise("  The Wuherk River. ") == "wuherk river"
        assert bench.exact_match("the Wuherk River!", "Wuherk River")
        assert bench.exact_match("22,461", "22461")
        assert not bench.exact_match("The Wuherk River flows there", "Wuherk River")
        assert bench.f1("Wuherk", "Wuherk River") == pytest.approx(2 / 3)
        assert bench.f1("yes, it was", "yes") == 0.0
        assert bench.f1("no", "yes") == 0.0
        assert bench.f1("Phupem River", "Wuherk River") == pytest.approx(0.5)

    def test_a_right_answer_is_accepted(self, bench: ModuleType) -> None:
        task = bench.Task("t", "bridge", "?", "Wuherk River", ("A", "Wuherk River"))
        right, f1, detail = bench.score(task, summary(bench, "The Wuherk River."), ["Wuherk River"])
        assert (right, f1) == (True, 1.0)
        assert detail.endswith("support found 1/2")

    def test_wrong_or_unanswered_runs_are_refused(self, bench: ModuleType) -> None:
        task = bench.Task("t", "bridge", "?", "Wuherk River", ("A",))
        wrong = bench.score(task, summary(bench, "Phupem River"))
        assert (wrong[0], wrong[1]) == (False, 0.5)
        doubtful = bench.score(task, summary(bench, "Wuherk River", doubt="raw_call"))
        assert (doubtful[0], doubtful[1]) == (False, 0.0)
        assert doubtful[2].startswith("ended ok (raw_call)")
        failed = bench.score(task, summary(bench, "Wuherk River", status="error"))
        assert (failed[0], failed[1]) == (False, 0.0)
        assert not bench.score(task, summary(bench, ""))[0]


class TestSearch:
    def test_it_finds_a_paragraph_by_name_and_takes_any_text(
        self, bench: ModuleType, tmp_path: Path
    ) -> None:
        root = bench.prepare(tmp_path)
        search = bench.Workspace(root).tools["search"].fn
        titles = [r["title"] for r in search("founder of Maewyn Mills")]
        assert len(titles) == 3
        assert titles[0] == "Maewyn Mills"
        assert "Maewyn Paper" in titles  # the namesake, a distractor
        assert search('AND OR NEAR "(') == []
        assert search("the of") == []


class TestRuns:
    """One question (mh00: the founder of Maewyn Mills, Drufom Reireth, born in Foumuv) through
    the real agent, each planner driven by a scripted model."""

    async def run(self, bench: ModuleType, planner: str, turns: list[Any], tmp_path: Path) -> Any:
        task = bench.load()[0]
        assert (task.answer, task.support) == ("Foumuv", ("Maewyn Mills", "Drufom Reireth"))
        lines: list[str] = []
        (row,) = await bench.run(
            [task],
            model=ScriptedModel(turns),
            model_name="scripted",
            planner=planner,
            workdir=tmp_path,
            progress=lines.append,
        )
        assert (row.family, row.planner, row.model, row.task, row.kind) == (
            "multihop",
            planner,
            "scripted",
            "mh00-bridge",
            "bridge",
        )
        assert lines[0].startswith("[1/1] multihop")
        assert list((tmp_path / "trajectories").iterdir())
        return row

    async def test_react(self, bench: ModuleType, tmp_path: Path) -> None:
        row = await self.run(
            bench,
            "react",
            # The strategy's first call searches for the question itself (Maewyn Mills).
            [call("search", query="Drufom Reireth"), "Foumuv"],
            tmp_path,
        )
        assert (row.right, row.score, row.run.status, row.run.tool_calls) == (True, 1.0, "ok", 2)
        assert row.detail.endswith("support found 2/2")

    async def test_dag(self, bench: ModuleType, tmp_path: Path) -> None:
        turns = [
            plan(
                node("T1", "search", query="Maewyn Mills"),
                node("T2", "search", query="Drufom Reireth"),
            ),
            finish("It was Foumuv, a town in Casouweia."),
        ]
        row = await self.run(bench, "dag", turns, tmp_path)
        assert (row.right, row.run.status, row.run.tool_calls) == (False, "ok", 2)
        assert (row.run.invalid_plans, row.run.fallbacks) == (0, 0)
        # Six tokens once the article goes (it was foumuv town in casouweia), one of them right.
        assert row.score == pytest.approx(2 * (1 / 6) * 1 / (1 / 6 + 1))

    async def test_vm(self, bench: ModuleType, tmp_path: Path) -> None:
        turns = [
            program(
                reasoning(),
                calling(1, "search", "company", query="Maewyn Mills"),
                calling(2, "search", "founder", query="Drufom Reireth"),
                assign(3, final_answer="Foumuv"),
            )
        ]
        row = await self.run(bench, "vm", turns, tmp_path)
        assert (row.right, row.run.status, row.run.tool_calls) == (True, "ok", 2)
        assert (row.run.invalid_plans, row.run.fallbacks) == (0, 0)
