"""benchmarks/agents_analysis.py: its questions are well-formed, their truths compute, the
scorer reads answers as its docstring says, and one task runs end to end through the agent."""

from __future__ import annotations

import inspect
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd
import pytest

from agentrt import ScriptedModel, Trajectory, Workspace
from tests.helpers import call, load_benchmark
from tests.planning.plans import finish, node, plan
from tests.planning.programs import assign, calling, program, reasoning


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("agents_analysis")


def summary(bench: ModuleType, answer: str, *, status: str = "ok", doubt: str | None = None) -> Any:
    """A run's summary that ended with `answer`."""
    return bench.RunSummary(
        status=status,
        doubt=doubt,
        answer=answer,
        seconds=1.0,
        steps=2,
        tool_calls=1,
        failed_calls=0,
        invalid_calls=0,
        invalid_plans=0,
        repairs=0,
        fallbacks=0,
    )


def task(bench: ModuleType, task_id: str) -> Any:
    (found,) = [t for t in bench.load() if t.id == task_id]
    return found


class TestContract:
    def test_the_driver_finds_what_it_needs(self, bench: ModuleType) -> None:
        """`FAMILY`, `PLANNERS`, `tasks(half)` with ids, `run` a coroutine function."""
        assert bench.FAMILY == "analysis"
        assert bench.PLANNERS == ("pipeline", "react", "dag", "vm")
        assert set(bench.STRATEGIES) == set(bench.PLANNERS)
        assert all(t.id for half in ("tuning", "held-out") for t in bench.tasks(half))
        assert inspect.iscoroutinefunction(bench.run)


class TestData:
    def test_at_least_64_questions_of_every_kind_with_the_issues_three(
        self, bench: ModuleType
    ) -> None:
        """The issue's three questions are there, worded as quoted; ids and questions are
        unique; every kind has at least eight."""
        tasks = bench.load()
        assert len(tasks) >= 64
        questions = [t.question for t in tasks]
        assert len(set(questions)) == len(questions)
        for quoted in (
            "which region had the highest revenue in 2024?",
            "show the distribution of order revenue",
            "compare electronics and clothing revenue by quarter",
        ):
            assert quoted in questions
        for kind in bench.KINDS:
            assert sum(t.kind == kind for t in tasks) >= 8, kind

    def test_kinds_alternate_in_rounds(self, bench: ModuleType) -> None:
        """The file is written in rounds of the seven kinds, so every other question (a half)
        takes each kind about equally."""
        tasks = bench.load()
        kinds = len(bench.KINDS)
        for start in range(0, len(tasks) - kinds + 1, kinds):
            assert {t.kind for t in tasks[start : start + kinds]} == set(bench.KINDS)

    def test_halves_are_disjoint_fixed_and_cover_everything(self, bench: ModuleType) -> None:
        """Tuning takes the even positions, held-out the odd ones."""
        tasks = bench.load()
        tuning, held_out = bench.tasks("tuning"), bench.tasks("held-out")
        assert [t.id for t in tuning] == [t.id for t in tasks[0::2]]
        assert [t.id for t in held_out] == [t.id for t in tasks[1::2]]
        assert not {t.id for t in tuning} & {t.id for t in held_out}
        assert len(tuning) + len(held_out) == len(tasks)
        assert tuning[0].id == "total-all"
        assert held_out[0].id == "top-region-2024"
        for kind in bench.KINDS:
            counts = [sum(t.kind == kind for t in h) for h in (tuning, held_out)]
            assert abs(counts[0] - counts[1]) <= 1, kind

    def test_a_malformed_truth_is_refused(self, bench: ModuleType) -> None:
        with pytest.raises(ValueError, match="need a year"):
            bench.Truth.model_validate({"where": {"quarter": 3}})
        with pytest.raises(ValueError, match="one `by` dimension"):
            bench.Truth.model_validate({"pick": "max"})
        with pytest.raises(ValueError, match="q is given exactly"):
            bench.Truth.model_validate({"agg": "quantile"})


class TestTruth:
    def test_every_truth_computes_to_an_answer_of_its_shape(self, bench: ModuleType) -> None:
        """No truth raises (unknown value, empty filter, a tie); numbers are finite; labels
        are among their dimension's values."""
        for t in bench.load():
            want = bench.expected(t.truth)
            assert all(pd.notna(n) and abs(n) < 1e12 for n in want.numbers), t.id
            if want.kind in ("label", "labels"):
                assert set(want.labels) <= set(want.candidates), t.id
                assert len(want.labels) == (t.truth.top or t.truth.bottom or 1), t.id
            elif want.kind == "number":
                assert len(want.numbers) == 1, t.id
            else:
                assert 1 < len(want.numbers) <= 16, t.id

    def test_specs_compute_what_plain_pandas_computes(self, bench: ModuleType) -> None:
        """A few of the file's truths against pandas written out by hand."""
        raw = pd.read_csv(Path(bench.default_workspace_path()) / "data" / "sales.csv")
        raw["date"] = pd.to_datetime(raw["date"])
        y2024 = raw[raw["date"].dt.year == 2024]
        y2023 = raw[raw["date"].dt.year == 2023]

        def answer(task_id: str) -> Any:
            return bench.expected(task(bench, task_id).truth)

        assert answer("total-all").numbers[0] == pytest.approx(raw["revenue"].sum())
        top = y2024.groupby("region")["revenue"].sum().idxmax()
        assert answer("top-region-2024").labels == (top,)
        assert answer("dist-order-revenue").numbers[0] == pytest.approx(raw["revenue"].median())
        h2 = y2024[y2024["date"].dt.month >= 7]["revenue"].sum()
        assert answer("period-h2-2024").numbers[0] == pytest.approx(h2)
        growth = (y2024["revenue"].sum() / y2023["revenue"].sum() - 1) * 100
        assert answer("trend-growth-total").numbers[0] == pytest.approx(growth)
        daily = raw.groupby("date")["revenue"].sum()
        assert answer("anomaly-top-day").labels == (daily.idxmax().strftime("%Y-%m-%d"),)
        assert answer("dist-days-over-80k").numbers[0] == pytest.approx(
            100 * (daily > 80000).mean()
        )
        quarters = (
            raw[raw["product_category"].isin(["Electronics", "Clothing"])]
            .groupby([raw["date"].dt.to_period("Q"), "product_category"])["revenue"]
            .sum()
        )
        assert sorted(answer("cmp-electronics-clothing-quarters").numbers) == pytest.approx(
            sorted(quarters)
        )

    def test_each_operation_on_a_small_frame(self, bench: ModuleType) -> None:
        """The spec's semantics on four rows whose answers are plain to see."""
        frame = bench.sales.__wrapped__(None).head(0)
        rows = [
            ("2023-03-01", "East", 10, 100.0),
            ("2023-03-01", "West", 20, 300.0),
            ("2024-03-02", "East", 30, 200.0),
            ("2024-08-02", "West", 40, 600.0),
        ]
        for day, region, units, revenue in rows:
            stamp = pd.Timestamp(day)
            frame.loc[len(frame)] = {
                "date": stamp.to_period("D"),
                "region": region,
                "product_category": "Sports",
                "channel": "Online",
                "units": units,
                "revenue": revenue,
                "year": stamp.year,
                "quarter": stamp.to_period("Q"),
                "month": stamp.to_period("M"),
                "weekday": stamp.day_name(),
            }

        def value(**truth: Any) -> Any:
            return bench.expected(bench.Truth.model_validate(truth), frame)

        assert value().numbers == (1200.0,)
        assert value(metric="units", where={"year": 2024, "half": 2}).numbers == (40.0,)
        assert value(per="date", agg="mean").numbers == (400.0,)  # three days: 400, 200, 600
        assert value(agg="share_above", above=250).numbers == (50.0,)
        assert value(agg="share_above", above=250).percent
        assert value(by="region", pick="max").labels == ("West",)
        assert value(by="date", pick="min").labels == ("2024-03-02",)
        assert value(by="month", top=2).labels == ("2024-08", "2023-03")
        assert value(by="quarter", pick="max").labels == ("2024Q3",)
        growth = value(op="growth_pct", of=[{"where": {"year": 2024}}, {"where": {"year": 2023}}])
        assert growth.numbers == (100.0,)
        assert value(
            op="diff",
            of=[{"where": {"year": 2023}}, {"where": {"year": 2024}}],
            sign=["down", "up"],
        ).labels == ("down",)
        assert sorted(value(by=["year", "region"]).numbers) == [100.0, 200.0, 300.0, 600.0]
        with pytest.raises(ValueError, match="a tie"):
            value(by="year", pick="max", agg="count")


class TestReading:
    @pytest.mark.parametrize(
        ("text", "number"),
        [
            ("Total revenue was 1,234,567.89.", 1234567.89),
            ("about 1.23 million dollars", 1_230_000.0),
            ("roughly $1.2M overall", 1_200_000.0),
            ("growth of 12.5 %", 12.5),
            ("growth of 12.5%", 12.5),
            ("45k units", 45_000.0),
            ("| East | 8422107.74 |", 8422107.74),
        ],
    )
    def test_numbers_as_models_write_them(
        self, bench: ModuleType, text: str, number: float
    ) -> None:
        assert number in bench.numbers_in(text)

    def test_a_number_within_one_percent(self, bench: ModuleType) -> None:
        assert bench.states_number("It was $53.0 million.", 53_003_044.94)
        assert bench.states_number("It was 53,003,045.", 53_003_044.94)
        assert not bench.states_number("It was $52 million.", 53_003_044.94)
        assert not bench.states_number("2023: 24,943,948.77", 53_003_044.94)
        assert bench.states_number("Revenue grew 12.49%.", 12.49, percent=True)
        assert bench.states_number("a growth rate of 0.1249", 12.49, percent=True)
        assert not bench.states_number("a growth rate of 0.1249", 12.49)
        assert bench.states_number("Online trailed store by -19,426.09.", -19426.09)
        assert not bench.states_number("the peak was on 2024-06-16, then 2024Q4", 16.14)
        assert bench.states_number("2024-06-16: 16.1 % of days", 16.14)

    def test_the_data_s_own_rows_in_an_answer_state_nothing(self, bench: ModuleType) -> None:
        """A tool's preview of the loaded rows is input, not a result: its `"units": 16` is no
        16.14 %; a result's rows (a total's frame) still count."""
        want = bench.Expected("number", numbers=(16.14,), percent=True)
        preview = '{"frame": "data", "rows": 9, "head": [{"units": 16, "revenue": 5.0}]}'
        assert bench.check(preview, want) == (False, "no number near 16.14 %")
        total = '{"frame": "totals", "rows": 1, "head": [{"share": 16.14}]}'
        assert bench.check(total, want) == (True, "")

    def test_labels_in_the_forms_models_write(self, bench: ModuleType) -> None:
        months = [f"2024-{m:02d}" for m in range(1, 13)]
        assert bench.mentions("December 2024, then Oct 2024", "month", months, None) == [
            "2024-12",
            "2024-10",
        ]
        assert bench.mentions("In 2024, July was best", "month", months, 2024) == ["2024-07"]
        assert bench.mentions("In 2024, July was best", "month", months, None) == []
        quarters = [f"{y}Q{q}" for y in (2023, 2024) for q in range(1, 5)]
        assert bench.mentions("Q4 2024 beat 2023-Q4", "quarter", quarters, None) == [
            "2024Q4",
            "2023Q4",
        ]
        days = ["2024-10-02", "2023-04-18", "2024-06-12"]
        text = "October 2, 2024 stands out; also 18 April 2023 and 2024-06-12."
        assert bench.mentions(text, "date", days, None) == days
        regions = ["East", "North", "South", "West"]
        assert bench.mentions("the west region, then EAST", "region", regions, None) == [
            "West",
            "East",
        ]
        categories = ["Groceries", "Sports"]
        assert bench.mentions("grocery sales", "product_category", categories, None) == [
            "Groceries"
        ]


class TestScore:
    def test_a_label_must_be_named_first(self, bench: ModuleType) -> None:
        t = task(bench, "top-region-2024")
        right, _ = bench.score(t, summary(bench, "East had the highest revenue in 2024 (8.4M)."))
        assert right
        table = "| region | revenue |\n|---|---|\n| East | 8,422,107.74 |\n| West | 7,385,277.27 |"
        assert bench.score(t, summary(bench, f"By region:\n\n{table}"))[0]
        wrong, detail = bench.score(t, summary(bench, "West led, just ahead of East."))
        assert not wrong
        assert "named West first" in detail
        assert not bench.score(t, summary(bench, "The north region."))[0]

    def test_the_prose_answers_before_a_table(self, bench: ModuleType) -> None:
        """A table in time order and then the month in prose is right; a table alone answers
        by its first row."""
        t = task(bench, "trend-best-month")
        rows = "| month | revenue |\n|---|---|\n| 2023-01 | 1,891,269 |\n| 2024-12 | 2,600,062 |"
        assert bench.score(t, summary(bench, f"{rows}\n\nDecember 2024 was the best month."))[0]
        assert not bench.score(t, summary(bench, rows))[0]
        best_first = (
            "| month | revenue |\n|---|---|\n| 2024-12 | 2,600,062 |\n| 2023-01 | 1,891,269 |"
        )
        assert bench.score(t, summary(bench, best_first))[0]

    def test_top_k_needs_all_k(self, bench: ModuleType) -> None:
        t = task(bench, "top3-months-2024")
        assert bench.score(t, summary(bench, "December, October and November 2024."))[0]
        assert bench.score(t, summary(bench, "2024-11, 2024-10, 2024-12"))[0]
        assert not bench.score(t, summary(bench, "December 2024 and October 2024."))[0]

    def test_numbers_need_every_one(self, bench: ModuleType) -> None:
        t = task(bench, "cmp-units-by-region-2024")
        full = "East 183,650; North 146,342; South 119,307; West 160,277 units."
        assert bench.score(t, summary(bench, full))[0]
        assert not bench.score(t, summary(bench, full.replace("119,307", "129,307")))[0]

    def test_a_direction(self, bench: ModuleType) -> None:
        t = task(bench, "trend-store-direction")
        assert bench.score(t, summary(bench, "It went up: store revenue increased by 4 %."))[0]
        assert not bench.score(t, summary(bench, "Store revenue decreased slightly."))[0]

    def test_a_run_not_answered_is_never_right(self, bench: ModuleType) -> None:
        """Even with the right number: a doubtful `ok`, an error, an empty answer."""
        t = task(bench, "total-all")
        right_text = "Total revenue: 53,003,044.94"
        assert bench.score(t, summary(bench, right_text))[0]
        doubtful, detail = bench.score(t, summary(bench, right_text, doubt="raw_call"))
        assert not doubtful
        assert "raw_call" in detail
        assert not bench.score(t, summary(bench, right_text, status="error"))[0]
        assert not bench.score(t, summary(bench, "  "))[0]


class TestRun:
    def test_the_workspace_copy_adds_dag_and_vm_strategies(
        self, bench: ModuleType, tmp_path: Path
    ) -> None:
        """The copy loads; its four strategies run on the four planners, the added two with
        the analysis strategy's tools."""
        root = bench.prepare_workspace(tmp_path / "workspace")
        workspace = Workspace(root)
        planners = {p: workspace.strategies[s].planner for p, s in bench.STRATEGIES.items()}
        assert planners == {"pipeline": "pipeline", "react": "react", "dag": "dag", "vm": "vm"}
        analysis = workspace.strategies["analysis"]
        assert workspace.strategies["analysis_dag"].tools == analysis.tools
        assert workspace.strategies["analysis_vm"].tools == analysis.tools

    async def test_one_task_end_to_end(self, bench: ModuleType, tmp_path: Path) -> None:
        """A scripted react run loads the data and answers: scored right; a wrong answer: not.
        The trajectories are written under the workdir."""
        t = task(bench, "total-all")
        model = ScriptedModel(
            [
                call("load_dataset", source="sales"),
                "The total revenue is $53,003,044.94.",
                call("load_dataset", source="sales"),
                "The total revenue is $24,943,948.77.",
            ]
        )
        rows = await bench.run(
            [t, t], model=model, model_name="scripted", planner="react", workdir=tmp_path
        )
        assert [r.right for r in rows] == [True, False]
        first = rows[0]
        assert (first.family, first.planner, first.task, first.kind) == (
            "analysis",
            "react",
            "total-all",
            "total",
        )
        assert first.run.status == "ok"
        assert first.run.tool_calls == 1
        assert "expected 53,003,044.94" in rows[1].detail
        trajectories = sorted((tmp_path / "trajectories").rglob("*.jsonl"))
        assert len(trajectories) == 2
        assert [Trajectory.read(p).events[-1].type for p in trajectories] == ["run_finished"] * 2

    async def test_the_added_dag_strategy_runs(self, bench: ModuleType, tmp_path: Path) -> None:
        """A scripted plan over the copy's analysis tools runs, and its joined answer is scored."""
        t = task(bench, "total-all")
        model = ScriptedModel(
            [
                plan(node("T1", "load_dataset", source="sales")),
                finish("The total revenue is 53.0 million."),
            ]
        )
        (row,) = await bench.run(
            [t], model=model, model_name="scripted", planner="dag", workdir=tmp_path
        )
        assert (row.planner, row.run.status, row.run.tool_calls, row.right) == (
            "dag",
            "ok",
            1,
            True,
        )
        assert row.run.invalid_plans == row.run.fallbacks == 0

    async def test_the_added_vm_strategy_runs(self, bench: ModuleType, tmp_path: Path) -> None:
        """A scripted program over the copy's analysis tools runs; its final_answer is
        scored."""
        t = task(bench, "trend-best-month")
        model = ScriptedModel(
            [
                program(
                    reasoning(),
                    calling(1, "load_dataset", "data", source="sales"),
                    assign(2, final_answer="December 2024 had the highest revenue."),
                )
            ]
        )
        (row,) = await bench.run(
            [t], model=model, model_name="scripted", planner="vm", workdir=tmp_path
        )
        assert (row.planner, row.run.status, row.run.tool_calls, row.right) == ("vm", "ok", 1, True)
        assert row.run.fallbacks == 0

    async def test_an_unknown_planner_is_refused(self, bench: ModuleType, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="runs pipeline, react, dag, vm"):
            await bench.run(
                [], model=ScriptedModel([]), model_name="x", planner="x", workdir=tmp_path
            )
