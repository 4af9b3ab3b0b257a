"""benchmarks/agentbench.py, the agent benchmark's one command: it finds the families beside it,
runs what it is asked to, tables the rows and tables them again from its `--out` file; a family
that raises does not stop the others; the tools family runs through it. Scripted models (and a
fake family written here), but for the last test, which runs `--smoke` on the real 0.5B."""

from __future__ import annotations

import asyncio
import json
import types
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from rich.console import Console

from agentrt import ModelRequest, ScriptedModel
from tests.helpers import call, load_benchmark

FAKE = '''
"""A family for the driver's tests: questions answered by a code-first agent, scored by text."""

from agentrt import Agent, AgentSettings
from agents_common import Row, half, run_once

FAMILY = "fake"
PLANNERS = ("react", "other")
TASKS = [("q1", "sum", "2+2?", "4"), ("q2", "sum", "3+3?", "6"), ("q3", "word", "hi?", "hi"),
         ("q4", "word", "bye?", "bye")]


def tasks(which):
    return half(TASKS, which)


async def run(tasks, *, model, model_name, planner, workdir, progress):
    assert workdir.is_dir()
    rows = []
    for task, kind, text, truth in tasks:
        agent = Agent(model, settings=AgentSettings(trajectory_dir=None))
        result, summary = await run_once(agent, text)
        right = summary.answered and summary.answer.strip() == truth
        rows.append(Row(FAMILY, planner, model_name, task, kind, right, summary,
                        score=1.0 if right else 0.0))
        progress(f"{task}: {summary.status} {right}")
    return rows
'''

BROKEN = """
FAMILY = "broken"
PLANNERS = ("react",)


def tasks(which):
    raise RuntimeError("no data")


async def run(tasks, **_):
    return []
"""


@pytest.fixture(scope="module")
def agents() -> ModuleType:
    return load_benchmark("agentbench")


@pytest.fixture
def fakes(agents: ModuleType, tmp_path: Path) -> list[ModuleType]:
    """The fake family (tasks q1, q3 tuning; q2, q4 held out) and one that raises."""
    (tmp_path / "agents_fake.py").write_text(FAKE, encoding="utf-8")
    (tmp_path / "agents_broken.py").write_text(BROKEN, encoding="utf-8")
    return [agents.load(tmp_path / "agents_fake.py"), agents.load(tmp_path / "agents_broken.py")]


def echo(request: ModelRequest) -> str:
    """Answers a sum rightly and echoes anything else but `hi?` (so q1, q2, q4 are right)."""
    question = next(m.content for m in request.messages if m.role == "user")
    sums = {"2+2?": "4", "3+3?": "6", "hi?": "hello"}
    return sums.get(str(question), str(question).rstrip("?"))


def scripted(_: str) -> ScriptedModel:
    return ScriptedModel([echo] * 20)


def test_the_families_beside_it_are_found(agents: ModuleType) -> None:
    """Every `agents_*.py` but the common module, each with the contract's names."""
    paths = agents.family_paths()
    assert "agents_tools.py" in {p.name for p in paths}
    assert "agents_common.py" not in {p.name for p in paths}
    for path in paths:
        module = agents.load(path)
        assert isinstance(module.FAMILY, str), path.name
        assert module.PLANNERS, path.name
        assert callable(module.tasks), path.name
        assert callable(module.run), path.name


def test_a_family_that_does_not_load_is_reported(agents: ModuleType, tmp_path: Path) -> None:
    """Discovery keeps the families that load and says which did not, and why."""
    (tmp_path / "agents_fake.py").write_text(FAKE, encoding="utf-8")
    (tmp_path / "agents_bad.py").write_text("import no_such_module_here\n", encoding="utf-8")
    (tmp_path / "agents_common.py").write_text("raise RuntimeError\n", encoding="utf-8")
    modules, failures = agents.discover(tmp_path)
    assert [m.FAMILY for m in modules] == ["fake"]
    assert failures == [
        "agents_bad.py did not load: ModuleNotFoundError: No module named 'no_such_module_here'"
    ]


def test_an_unknown_family_is_refused(
    agents: ModuleType, fakes: list[ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    assert agents.main(["--families", "nope"], modules=fakes, make_model=scripted) == 2
    assert capsys.readouterr().out == "no family nope (known: broken, fake)\n"


def test_a_run_is_tabled_and_tabled_again_from_its_rows(
    agents: ModuleType,
    fakes: list[ModuleType],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both halves of both planners of the fake family; the broken family is reported and the
    exit status says so; `--table` prints the same tables from the `--out` file."""
    monkeypatch.setenv("COLUMNS", "240")
    out = tmp_path / "rows.jsonl"
    argv = ["--models", "m", "--half", "both", "--out", str(out)]
    assert agents.main(argv, modules=fakes, make_model=scripted) == 1
    printed = capsys.readouterr()
    assert "broken react tuning on m: RuntimeError: no data" in printed.out
    assert "[m fake react tuning] q1: ok True" in printed.err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["planner"], r["half"], r["task"], r["right"]) for r in rows] == [
        ("react", "tuning", "q1", True),
        ("react", "tuning", "q3", False),
        ("react", "held-out", "q2", True),
        ("react", "held-out", "q4", True),
        ("other", "tuning", "q1", True),
        ("other", "tuning", "q3", False),
        ("other", "held-out", "q2", True),
        ("other", "held-out", "q4", True),
    ]
    assert agents.main(["--table", str(out)]) == 0
    again = capsys.readouterr().out
    assert again.strip()
    assert printed.out.startswith(again)
    assert "fake: how runs went" in again
    assert "fake: right % by kind" in again


def test_a_family_line_counts_what_its_rows_say(
    agents: ModuleType, fakes: list[ModuleType]
) -> None:
    """Right %, mean F1, statuses and counts of one planner × model × half; right % by kind."""
    selection = agents.Selection(families=("fake",), planners=("react",))
    records, failures = asyncio.run(agents.measure(fakes, ["m"], selection, make_model=scripted))
    assert failures == []
    rows = [r.row for r in records]
    line = agents.summary(rows)
    assert {k: line[k] for k in ("tasks", "right %", "mean F1", "ok", "doubtful", "error")} == {
        "tasks": "2",
        "right %": "50%",
        "mean F1": "0.50",
        "ok": "2",
        "doubtful": "0",
        "error": "0",
    }
    assert (line["budget"], line["other"], line["calls/task"]) == ("0", "0", "0.0")
    assert agents.by_kind(rows) == {"sum": "100% of 1", "word": "0% of 1"}
    doubted = agents.Record.from_json(records[0].to_json().replace('"doubt": null', '"doubt": "x"'))
    assert agents.summary([doubted.row])["doubtful"] == "1"
    assert agents.summary([doubted.row])["ok"] == "0"


def test_keep_leaves_each_runs_work_in_its_folder(
    agents: ModuleType, fakes: list[ModuleType], tmp_path: Path
) -> None:
    argv = ["--models", "local:x", "--families", "fake", "--keep", str(tmp_path / "kept")]
    assert agents.main(argv, modules=fakes, make_model=scripted) == 0
    kept = sorted(p.name for p in (tmp_path / "kept").iterdir())
    assert kept == ["fake-other-tuning-local_x", "fake-react-tuning-local_x"]


def test_a_familys_own_measures_follow_its_tables(
    agents: ModuleType, fakes: list[ModuleType]
) -> None:
    """A family module with `targets(rows)` has them printed per planner × model × half."""
    selection = agents.Selection(families=("fake",), planners=("react",))
    records, _ = asyncio.run(agents.measure(fakes, ["m"], selection, make_model=scripted))
    family = types.SimpleNamespace(
        FAMILY="fake", targets=lambda rows: {"right": (sum(r.right for r in rows), len(rows))}
    )
    console = Console(record=True, width=200)
    agents.show(records, console=console, modules=[family])
    assert "fake react m tuning: right 1/2" in console.export_text()


def test_smoke_limit_and_planners_choose_what_runs(
    agents: ModuleType, fakes: list[ModuleType]
) -> None:
    """`--smoke`: one tuning task, the first planner, the first model; `--skip`, `--limit`
    and `--planners` cut the rest."""

    def ran(selection: Any, models: list[str]) -> list[tuple[str, str, str, str]]:
        records, _ = asyncio.run(agents.measure(fakes, models, selection, make_model=scripted))
        return [(r.row.model, r.row.planner, r.half, r.row.task) for r in records]

    smoke = agents.Selection(halves=("held-out",), families=("fake",), smoke=True)
    assert ran(smoke, ["a", "b"]) == [("a", "react", "tuning", "q1")]
    lines: list[str] = []
    none = agents.Selection(families=("fake",), planners=("dag",))
    assert (
        asyncio.run(agents.measure(fakes, ["a"], none, make_model=scripted, log=lines.append))[0]
        == []
    )
    assert lines == ["fake runs react, other: none of them chosen"]
    limited = agents.Selection(halves=("held-out",), planners=("other",), limit=1)
    assert ran(limited, ["a", "b"]) == [
        ("a", "other", "held-out", "q2"),
        ("b", "other", "held-out", "q2"),
    ]
    later = agents.Selection(halves=("held-out",), planners=("other",), skip=1, limit=1)
    assert ran(later, ["a"]) == [("a", "other", "held-out", "q4")]


def test_the_tools_family_runs_through_the_driver(agents: ModuleType, tmp_path: Path) -> None:
    """The first tuning question, through `main` with a scripted model that answers it."""
    question = load_benchmark("agents_tools").tasks("tuning")[0]
    turns = ["".join(call(n, **a) for n, a in question.calls) or "No tool fits.", "Done."]
    out = tmp_path / "rows.jsonl"
    argv = ["--smoke", "--models", "m", "--families", "tools", "--out", str(out)]
    assert agents.main(argv, make_model=lambda _: ScriptedModel(turns)) == 0
    (row,) = agents.read(out)
    assert (row.half, row.row.family, row.row.task, row.row.right) == (
        "tuning",
        "tools",
        question.id,
        True,
    )


def test_smoke_on_the_small_model(
    agents: ModuleType, small_model_path: Path, tmp_path: Path
) -> None:
    """`--smoke` on the real 0.5B: every family gives a row, every run ends with a status."""
    out = tmp_path / "rows.jsonl"
    code = agents.main(["--smoke", "--models", f"local:{small_model_path}", "--out", str(out)])
    records = agents.read(out)
    families = {agents.load(p).FAMILY for p in agents.family_paths()}
    assert {r.row.family for r in records} == families
    assert all(r.row.run.status for r in records)
    assert code == 0
