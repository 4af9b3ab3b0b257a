"""Family (d) of `benchmarks/agentbench.py`: questions over multi-table SQLite databases answered
through the database copilot, scored by execution accuracy.

    .venv/bin/python benchmarks/agentbench.py --families database     # through the driver

What it measures: whether the copilot workspace (workspaces/dbcopilot/: `ground_schema`, then
`run_sql`, charts and `ask_user` on offer; its one strategy, `copilot`, forced) turns a user's
question into a query whose result is the right one, on databases it was never tuned for.

The data is reused, not written here: benchmarks/data/grounding_samples/ (its README.md) holds
three schemas after public sample databases (Sakila, Chinook, Oracle HR/OE + an ERP), built
deterministically by its `build.py` into SQLite files, and about 70 questions per database
with hand-written gold SQL, already split by the sha1 of their text into `<db>.tuning.yaml`
and `<db>.heldout.yaml`: those files are the halves (not `agents_common.half`). A task's id
is its database and its place in that half's file (`chinook-07`); its kind is how many tables
the gold SQL reads (`1 table`, `2 tables`, `3+ tables`, from the set's computed labels).
A half holds about 35 questions per database (107 tuning, 105 held out); `tasks(half,
per_database=N)` takes the first N of each database's file, a sample the sha1 order makes fair,
for a driver that cannot afford a whole half on a real model.

A run: the databases are built afresh into `workdir/databases`; the workspace is copied once
per database into `workdir/dbcopilot-<db>`, its `copilot.yaml` pointed at that database; each
question is one run of an `Agent` over the copy, strategy forced to `copilot`; trajectories are
kept in `workdir/trajectories`. Before a database's first question its copy's schema index is
built once (`warm`), as an application would at start: left to the first `ground_schema` call,
the build overruns the tool's 30 s timeout on a busy machine and that question fails for a
reason that is not the model's. Its time is in no run's seconds.

Scoring, by execution accuracy:

- the run's query is the `sql` argument of its last `run_sql` call that finished `ok`; a run
  with none is wrong ("no successful run_sql");
- that query and the gold SQL are both run again on the same database, read-only and without a
  row cap: `run_sql`'s `tool_finished` output shows the model at most 20 rows (`head`) and the
  guard keeps at most `max_rows`, so the whole result is read by running the same text again
  (the guard runs it as written; nothing is rewritten);
- values are normalised: numbers (int, float) rounded to 2 places, bytes as hex, everything
  else (text, dates) as its text, NULL as None;
- the results match when they have the same number of columns and some order of the run's
  columns gives the gold's rows: as multisets of rows (row order ignored), or as lists when
  the gold SQL has ORDER BY. Extra or missing columns do not match (`SELECT *` for "what is
  the rental rate of X" is wrong);
- a row is right only if the results match and the run is `answered` (ended `ok`, no
  `run_finished.doubt`, a non-empty answer). The detail says what was expected and what came.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
import shutil
import sqlite3
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from agentrt import (
    Agent,
    AgentSettings,
    Event,
    Model,
    ToolCallEvent,
    ToolError,
    ToolFinishedEvent,
    Workspace,
)
from agentrt.sql.guard import GuardPolicy, SqlGuard

sys.path.insert(0, str(Path(__file__).parent))
from agents_common import (
    Half,
    Progress,
    Row,
    RunSummary,
    Verdict,
    interleave,
    run_each,
    run_once,
)

FAMILY = "database"
PLANNERS: tuple[str, ...] = ("copilot",)
DATABASES: tuple[str, ...] = ("sakila", "chinook", "erp")
SAMPLES = Path(__file__).parent / "data" / "grounding_samples"
WORKSPACE = Path(__file__).resolve().parents[1] / "workspaces" / "dbcopilot"
FILES: dict[Half, str] = {"tuning": "tuning", "held-out": "heldout"}

Value = float | str | None
Result = tuple[tuple[Value, ...], ...]


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    database: str
    question: str
    sql: str
    """The gold SQL, written by hand; its result on the built database is the ground truth."""
    kind: str


def _kind(tables: Sequence[str]) -> str:
    n = len(tables)
    return "1 table" if n == 1 else "2 tables" if n == 2 else "3+ tables"


def tasks(half: Half, per_database: int | None = None) -> list[Task]:
    """The questions of `half`, each database's in the order of its file (the order of the sha1
    of their text, so any first `per_database` of each are a fair sample; None: all), the
    databases taken in turn (`interleave`): any first N cover them alike."""
    groups = []
    for database in DATABASES:
        path = SAMPLES / f"{database}.{FILES[half]}.yaml"
        questions = yaml.safe_load(path.read_text(encoding="utf-8"))["questions"]
        groups.append(
            [
                Task(f"{database}-{number:02d}", database, q["q"], q["sql"], _kind(q["tables"]))
                for number, q in enumerate(questions[:per_database], start=1)
            ]
        )
    return interleave(groups)


# ---------------------------------------------------------------------------------------------
# The databases and the workspace copies.


def _builder() -> ModuleType:
    """grounding_samples/build.py as a module (it is a script, not a package)."""
    name = "grounding_samples_build"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SAMPLES / "build.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def build_database(database: str, workdir: Path) -> Path:
    """`workdir/databases/<database>.db`, built afresh from the set's seed."""
    out = workdir / "databases"
    out.mkdir(parents=True, exist_ok=True)
    path: Path = _builder().build(database, out)
    return path.resolve()


def prepare_workspace(database: Path, workdir: Path) -> Path:
    """A copy of the copilot workspace in `workdir`, its `copilot.yaml` naming `database`:
    each copy's tool pack reads the configuration of the folder it sits in."""
    root = workdir / f"dbcopilot-{database.stem}"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(WORKSPACE, root, ignore=shutil.ignore_patterns(".*"))
    config_path = root / "copilot.yaml"
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    config["database"] = str(database)
    config_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return root.resolve()


def warm(root: Path) -> None:
    """Build the schema index of the copy at `root` once, into its cache: the tool pack builds
    it on a run's first `ground_schema` call otherwise, inside the tool's timeout (30 s), which
    a cold build on a busy machine overruns. Later runs read the cache (well under a second)."""
    name = f"agents_database_warm_{root.name}"
    spec = importlib.util.spec_from_file_location(name, root / "tools" / "sql.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    module.Copilot.from_config(root / "copilot.yaml", cache=root / ".cache")


# ---------------------------------------------------------------------------------------------
# Execution accuracy.


def execute(database: Path, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Every row of `sql` on `database`, read-only, as the copilot's guard checks and runs it
    but without its row cap.

    :raises agentrt.ToolError: the guard refused the statement or SQLite failed on it
    """
    guard = SqlGuard(str(database), GuardPolicy(max_rows=1_000_000, timeout=30.0))
    result = guard.execute(sql)
    return result.columns, [tuple(row) for row in result.rows]


def gold(database: Path, sql: str) -> list[tuple[Any, ...]]:
    """The gold SQL's rows: trusted text, run by plain SQLite, read-only."""
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        return [tuple(row) for row in connection.execute(sql)]
    finally:
        connection.close()


def normalise(value: Any) -> Value:
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return round(float(value), 2)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _rows(rows: Sequence[Sequence[Any]]) -> Result:
    return tuple(tuple(normalise(v) for v in row) for row in rows)


def ordered(sql: str) -> bool:
    """The gold SQL orders its rows (so the run's rows must come in the same order)."""
    return re.search(r"\border\s+by\b", sql, re.IGNORECASE) is not None


def same_result(
    expected: Sequence[Sequence[Any]], got: Sequence[Sequence[Any]], *, in_order: bool
) -> bool:
    """Whether `got` holds `expected`'s rows (see the module docstring): normalised values, the
    same number of columns in any order, row order only when `in_order`."""
    want, have = _rows(expected), _rows(got)
    if len(want) != len(have):
        return False
    if not want:
        return True
    width = len(want[0])
    if any(len(row) != width for row in have):
        return False

    def column(rows: Result, j: int) -> Counter[Value]:
        return Counter(row[j] for row in rows)

    # A gold column can only come from a column of the run holding the same values.
    candidates = [
        [k for k in range(width) if column(have, k) == column(want, j)] for j in range(width)
    ]
    target: Any = want if in_order else Counter(want)
    for order in itertools.product(*candidates):
        if len(set(order)) != width:
            continue
        moved = tuple(tuple(row[k] for k in order) for row in have)
        if (moved if in_order else Counter(moved)) == target:
            return True
    return False


def last_query(events: Sequence[Event]) -> str | None:
    """The statement the run's last `run_sql` call that finished `ok` ran: its `sql`, or the
    guard's repair of it (the output's `sql`, when `join_missing` added a join)."""
    calls = {e.call_id: e for e in events if isinstance(e, ToolCallEvent)}
    for event in reversed(events):
        if isinstance(event, ToolFinishedEvent) and event.name == "run_sql":
            if event.status != "ok":
                continue
            call = calls.get(event.call_id)
            ran = event.output.get("sql") if isinstance(event.output, dict) else None
            sql = ran or (call.arguments.get("sql") if call is not None else None)
            if isinstance(sql, str):
                return sql
    return None


def _rows_text(rows: Sequence[Sequence[Any]]) -> str:
    shown = ", ".join(str(tuple(normalise(v) for v in row)) for row in rows[:2])
    more = ", …" if len(rows) > 2 else ""
    return f"{len(rows)} row{'s' if len(rows) != 1 else ''} [{shown}{more}]"


def score(task: Task, database: Path, events: Sequence[Event], run: RunSummary) -> tuple[bool, str]:
    """Whether the run answered `task` right, and why in a few words."""
    expected = gold(database, task.sql)
    sql = last_query(events)
    if sql is None:
        return False, f"no successful run_sql; expected {_rows_text(expected)}"
    try:
        _, got = execute(database, sql)
    except ToolError as exc:  # the guard let it run once; it should again
        return False, f"the run's query fails when run again: {exc}"
    match = same_result(expected, got, in_order=ordered(task.sql))
    if not match:
        return False, f"expected {_rows_text(expected)}, got {_rows_text(got)}"
    if not run.answered:
        why = run.doubt or ("empty answer" if run.status == "ok" else run.status)
        return False, f"rows match ({len(expected)}) but not answered: {why}"
    return True, f"rows match ({len(expected)})"


# ---------------------------------------------------------------------------------------------
# The family's run.


async def run(
    tasks: Sequence[Task],
    *,
    model: Model,
    model_name: str,
    planner: str,
    workdir: Path,
    progress: Progress,
) -> list[Row]:
    """Each task run through the copilot (strategy `planner`) over a workspace copy pointed at
    its database, one at a time, scored by execution accuracy."""
    settings = AgentSettings(trajectory_dir=workdir / "trajectories")
    databases: dict[str, Path] = {}
    agents: dict[str, Agent] = {}

    async def attempt(task: Task) -> tuple[RunSummary, Verdict]:
        if task.database not in agents:
            databases[task.database] = build_database(task.database, workdir)
            root = prepare_workspace(databases[task.database], workdir)
            progress(f"{FAMILY}: building the schema index of {task.database}")
            warm(root)
            agents[task.database] = Agent(workspace=Workspace(root), model=model, settings=settings)
        result, summary = await run_once(agents[task.database], task.question, strategy=planner)
        right, detail = score(task, databases[task.database], result.trajectory.events, summary)
        return summary, Verdict(right, detail)

    return await run_each(
        tasks,
        attempt,
        question=lambda t: t.question,
        family=FAMILY,
        planner=planner,
        model_name=model_name,
        progress=progress,
    )
