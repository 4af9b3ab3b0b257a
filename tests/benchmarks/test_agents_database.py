"""benchmarks/agents_database.py: its tasks are the grounding set's fixed halves, every gold SQL
runs, execution accuracy accepts right results and refuses wrong or unanswered ones, and a task
runs end to end through the copilot workspace with a scripted model."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from agentrt import ScriptedModel, Trajectory
from agentrt.exceptions import QueryRefused
from tests.helpers import call, load_benchmark


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("agents_database")


@pytest.fixture(scope="module")
def databases(bench: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("agents_database")
    return {db: bench.build_database(db, work) for db in bench.DATABASES}


class TestTasks:
    def test_the_halves_are_the_sets_files_disjoint_with_ids_saying_db_and_place(
        self, bench: ModuleType
    ) -> None:
        tuning, held_out = bench.tasks("tuning"), bench.tasks("held-out")
        assert len(tuning) >= 100
        assert len(held_out) >= 100
        assert {t.question for t in tuning}.isdisjoint({t.question for t in held_out})
        assert len({t.id for t in tuning + held_out}) == len(tuning)  # ids repeat across halves
        for half, file in (("tuning", "tuning"), ("held-out", "heldout")):
            got = bench.tasks(half)
            # The databases in turn, so that any first N tasks cover them alike.
            assert [t.database for t in got[:6]] == [*bench.DATABASES, *bench.DATABASES]
            for database in bench.DATABASES:
                raw = yaml.safe_load(
                    (bench.SAMPLES / f"{database}.{file}.yaml").read_text(encoding="utf-8")
                )["questions"]
                mine = [t for t in got if t.database == database]
                assert [(t.question, t.sql) for t in mine] == [(q["q"], q["sql"]) for q in raw]
                assert [t.id for t in mine] == [
                    f"{database}-{n:02d}" for n in range(1, len(raw) + 1)
                ]
        kinds = {t.kind for t in tuning}
        assert kinds == {"1 table", "2 tables", "3+ tables"}
        sample = bench.tasks("held-out", per_database=4)
        assert sample == [t for t in held_out if int(t.id.split("-")[1]) <= 4]
        assert len(sample) == 12

    def test_the_halves_are_the_fixed_sha1_split_of_the_questions(self, bench: ModuleType) -> None:
        build = bench._builder()
        for database in bench.DATABASES:
            tuning, held_out = build.split(build.load(database))
            mine = {
                half: [t.question for t in bench.tasks(half) if t.database == database]
                for half in ("tuning", "held-out")
            }
            assert mine == {
                "tuning": [q["q"] for q in tuning],
                "held-out": [q["q"] for q in held_out],
            }

    def test_every_gold_sql_runs_and_passes_the_copilots_guard(
        self, bench: ModuleType, databases: dict[str, Path]
    ) -> None:
        """A run that wrote the gold SQL would be scored right: the guard lets it run and its
        rows are the gold's."""
        for task in bench.tasks("tuning") + bench.tasks("held-out"):
            expected = bench.gold(databases[task.database], task.sql)
            _, got = bench.execute(databases[task.database], task.sql)
            assert bench.same_result(expected, got, in_order=bench.ordered(task.sql)), task.id


class TestSameResult:
    def test_row_order_counts_only_when_the_gold_orders(self, bench: ModuleType) -> None:
        rows = [("a", 1), ("b", 2)]
        assert bench.same_result(rows, rows[::-1], in_order=False)
        assert not bench.same_result(rows, rows[::-1], in_order=True)
        assert bench.ordered("SELECT x FROM t ORDER  BY x DESC")
        assert not bench.ordered("SELECT border FROM t")

    def test_columns_in_another_order_match(self, bench: ModuleType) -> None:
        assert bench.same_result([("a", 1), ("b", 2)], [(2, "b"), (1, "a")], in_order=False)
        assert bench.same_result([("a", 1), ("b", 2)], [(1, "a"), (2, "b")], in_order=True)
        # Same column values, rows paired otherwise: not the same result.
        assert not bench.same_result([("a", 1), ("b", 2)], [("a", 2), ("b", 1)], in_order=False)

    def test_numbers_are_compared_to_two_places_and_text_as_text(self, bench: ModuleType) -> None:
        assert bench.same_result([(2.994999,)], [(2.99,)], in_order=False)
        assert bench.same_result([(3,)], [(3.0,)], in_order=False)
        assert not bench.same_result([(2.99,)], [(2.98,)], in_order=False)
        assert not bench.same_result([("2007",)], [(2007,)], in_order=False)
        assert not bench.same_result([(None,)], [("None",)], in_order=False)

    def test_other_counts_of_rows_or_columns_do_not_match(self, bench: ModuleType) -> None:
        assert not bench.same_result([("a",)], [("a",), ("a",)], in_order=False)
        assert not bench.same_result([("a",)], [("a", 1)], in_order=False)
        assert not bench.same_result([("a", 1)], [("a",)], in_order=False)
        assert bench.same_result([], [], in_order=False)
        assert not bench.same_result([], [("a",)], in_order=False)


def copilot_script(sql: str, answer: str = "Here is what I found.") -> list[str]:
    """A copilot's turns: the run itself calls `ground_schema` first (`first_calls`)."""
    return [call("run_sql", sql=sql), answer]


def pruned_sakila(bench: ModuleType) -> object:
    """`build_database` for sakila, its big tables cut to their first 30 rows: the copilot's
    schema index (embeddings of every distinct value) builds in seconds, not a minute."""
    real = bench.build_database

    def build(database: str, workdir: Path) -> Path:
        path: Path = real(database, workdir)
        connection = sqlite3.connect(path)
        tables = [
            t for (t,) in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        for table in tables:
            connection.execute(f'DELETE FROM "{table}" WHERE rowid > 30')
        connection.commit()
        connection.execute("VACUUM")
        connection.close()
        return path

    return build


@pytest.fixture(scope="module")
def sakila_run(
    bench: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[object], Path]:
    """Four sakila tasks through the real agent and copilot workspace, scripted: the gold SQL;
    a wrong query; a failing query, then the gold one; a query missing its join, which the
    guard adds. The database is sakila cut short (`pruned_sakila`); the gold is computed on it
    all the same."""
    import asyncio

    task = next(t for t in bench.tasks("tuning") if t.question.startswith("How many films were"))
    other = next(t for t in bench.tasks("tuning") if t.question.startswith("How many addresses"))
    joined = next(t for t in bench.tasks("tuning") if t.question.startswith("What is the address"))
    assert task.database == other.database == joined.database == "sakila"
    model = ScriptedModel(
        [
            *copilot_script(task.sql, "27 films."),
            *copilot_script("SELECT COUNT(*) FROM film"),
            call("run_sql", sql="SELECT COUNT(*) FROM addresses"),
            call("run_sql", sql=other.sql),
            "That many.",
            *copilot_script("SELECT address, district FROM staff WHERE first_name = 'Jon'"),
        ]
    )
    work = tmp_path_factory.mktemp("sakila_run")
    lines: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bench, "build_database", pruned_sakila(bench))
        rows = asyncio.run(
            bench.run(
                [task, task, other, joined],
                model=model,
                model_name="scripted",
                planner="copilot",
                workdir=work,
                progress=lines.append,
            )
        )
    return [rows, lines, task], work


class TestEndToEnd:
    def test_the_gold_query_is_right_a_wrong_one_is_not(
        self, bench: ModuleType, sakila_run: tuple[list[object], Path]
    ) -> None:
        (rows, lines, task), work = sakila_run
        assert [(r.task, r.family, r.planner, r.model, r.kind) for r in rows] == [
            (task.id, "database", "copilot", "scripted", "1 table"),
            (task.id, "database", "copilot", "scripted", "1 table"),
            (rows[2].task, "database", "copilot", "scripted", "1 table"),
            (rows[3].task, "database", "copilot", "scripted", "2 tables"),
        ]
        assert [r.right for r in rows] == [True, False, True, True]
        assert [r.run.status for r in rows] == ["ok", "ok", "ok", "ok"]
        assert rows[0].detail == "rows match (1)"
        assert rows[1].detail.startswith("expected 1 row [(")
        # The failed call is counted; the last successful query is the one scored.
        assert (rows[2].run.tool_calls, rows[2].run.failed_calls) == (3, 1)
        # The statement scored is the one that ran, its join added by the guard: the one
        # written fails when run again (Jon's address is past the pruned rows: no row).
        assert rows[3].detail == "rows match (0)"
        assert any("building the schema index of sakila" in line for line in lines)
        assert (work / "databases" / "sakila.db").is_file()
        config = yaml.safe_load((work / "dbcopilot-sakila" / "copilot.yaml").read_text())
        assert config["database"] == str((work / "databases" / "sakila.db").resolve())
        assert list((work / "trajectories").rglob("*.jsonl"))

    def test_a_right_query_in_a_run_not_answered_is_wrong(
        self, bench: ModuleType, sakila_run: tuple[list[object], Path]
    ) -> None:
        """The same events, the run's end said doubtful or not ok: never right."""
        (rows, _, task), work = sakila_run
        database = work / "databases" / "sakila.db"
        (events,) = [
            t.events
            for p in (work / "trajectories").rglob("*.jsonl")
            if bench.last_query((t := Trajectory.read(p)).events) == task.sql
        ]
        summary = rows[0].run
        assert bench.score(task, database, events, summary) == (True, "rows match (1)")
        doubtful = replace(summary, doubt="tool_error")
        assert bench.score(task, database, events, doubtful) == (
            False,
            "rows match (1) but not answered: tool_error",
        )
        ended = replace(summary, status="budget_exhausted")
        assert bench.score(task, database, events, ended)[0] is False
        no_query = [e for e in events if getattr(e, "name", None) != "run_sql"]
        right, detail = bench.score(task, database, no_query, summary)
        assert not right
        assert detail.startswith("no successful run_sql")


def test_the_rerun_of_a_query_is_read_only(bench: ModuleType, databases: dict[str, Path]) -> None:
    """A run's query is run again through the guard: writes are refused, nothing changes."""
    with pytest.raises(QueryRefused, match=r"only reading statements \(SELECT\) may run"):
        bench.execute(databases["sakila"], "DELETE FROM film")
    connection = sqlite3.connect(databases["sakila"])
    assert connection.execute("SELECT COUNT(*) FROM film").fetchone()[0] == 500
    connection.close()
