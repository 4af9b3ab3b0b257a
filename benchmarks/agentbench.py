"""Agents on the model agentrt ships: every family of tasks through its planners, end to end.

    .venv/bin/python benchmarks/agentbench.py                          # both models, tuning half
    .venv/bin/python benchmarks/agentbench.py --models local:small --families tools --limit 5
    .venv/bin/python benchmarks/agentbench.py --half held-out          # once, at the end
    .venv/bin/python benchmarks/agentbench.py --skip 6 --limit 6       # tasks 7-12 of a half
    .venv/bin/python benchmarks/agentbench.py --smoke --models local:small
    .venv/bin/python benchmarks/agentbench.py --out rows.jsonl         # keep every row
    .venv/bin/python benchmarks/agentbench.py --table rows.jsonl       # table them again
    .venv/bin/python benchmarks/agentbench.py --keep runs/             # keep the trajectories

(It is not named `agents.py`, as issue 24 asked: run as a script, a benchmark's folder comes
first on `sys.path`, and that name would shadow the OpenAI Agents SDK's `agents` package, which
`peers.py` measures.)

Each family is a module beside this one, `agents_<family>.py` (the contract is in
`agents_common.py`): its tasks come in a tuning half and a held-out half, each with ground truth
computed where it can be, and its `run` scores every task's run against it. This command runs
each model (`--models`, specs as `agentrt run --model` takes them) through each family's
planners on the chosen half, one task at a time (the embedded model is CPU-bound), and prints
per family a table whose rows are planner × model × half:

- tasks, right % (a row is right only for a run that ended `ok`, not doubted, and matched the
  truth), mean F1 (for a family that grades its answers), seconds per task;
- how runs ended: `ok` (and not doubted), `doubtful` (`ok` with `run_finished.doubt` set: a raw
  call, a tool's error or no successful call behind the answer), `error`, `budget`
  (`budget_exhausted`), `other` (any other status);
- invalid plans, repairs asked for, fallbacks to another planner, and tool calls per task;

and a second table per family: right % by the tasks' kinds. A family that raises (as it loads or
runs) is reported under the tables (and the exit status is 1); the others still run.

`--smoke` runs the first tuning task of each family through its first planner, on the first
model only. Progress goes to stderr as the tasks run (task, status, right, seconds). With
`--out FILE` every row is appended to FILE as a JSON line (its half beside it) as each family's
planner finishes, so a long run, or runs of one model at a time, can be tabled with
`--table FILE` without running anything again.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import statistics
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO, cast

from rich.console import Console
from rich.table import Table

from agentrt import Model
from agentrt.models.spec import load_model

sys.path.insert(0, str(Path(__file__).parent))

from agents_common import HALVES, Half, Row, RunSummary  # found through the line above
from siblings import load

HERE = Path(__file__).parent
MODELS = ("local:small", "local")
COLUMNS = (
    "planner",
    "model",
    "half",
    "tasks",
    "right %",
    "mean F1",
    "s/task",
    "ok",
    "doubtful",
    "error",
    "budget",
    "other",
    "invalid plans",
    "repairs",
    "fallbacks",
    "calls/task",
)


@dataclass(frozen=True, slots=True)
class Record:
    """A row and the half its task came from."""

    half: str
    row: Row

    def to_json(self) -> str:
        return json.dumps({"half": self.half, **asdict(self.row)}, ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> Record:
        data = json.loads(line)
        half = data.pop("half")
        run = RunSummary(**data.pop("run"))
        return cls(half, Row(**data, run=run))


@dataclass(frozen=True, slots=True)
class Selection:
    """What one invocation runs."""

    halves: tuple[Half, ...] = ("tuning",)
    families: tuple[str, ...] | None = None
    """Family names; None for every family found."""
    planners: tuple[str, ...] | None = None
    """Planner names; None for each family's own."""
    limit: int | None = None
    """Tasks per family and half."""
    skip: int = 0
    """Tasks passed over first, per family and half: a later slice of a half, its first
    tasks already measured (or seen while tuning)."""
    smoke: bool = False
    max_tokens: int | None = None
    """A turn's token cap, for a family whose `run` takes one."""
    keep: Path | None = None
    """Where each family × planner × half keeps its work (trajectories, workspace copies), to
    read after; None: a temporary folder, removed."""


def family_paths(folder: Path = HERE) -> list[Path]:
    """The family modules in `folder`, in name order."""
    return sorted(p for p in folder.glob("agents_*.py") if p.name != "agents_common.py")


def discover(folder: Path = HERE) -> tuple[list[ModuleType], list[str]]:
    """The family modules in `folder` that load, and a line for each that raised as it
    loaded."""
    modules: list[ModuleType] = []
    failures: list[str] = []
    for path in family_paths(folder):
        try:
            modules.append(load(path))
        except Exception as exc:  # one family's fault must not stop the others
            failures.append(f"{path.name} did not load: {type(exc).__name__}: {exc}")
            _stderr(f"{path.name} did not load:\n{traceback.format_exc()}")
    return modules, failures


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def measure(
    modules: Sequence[ModuleType],
    models: Sequence[str],
    selection: Selection,
    *,
    make_model: Callable[[str], Model] = load_model,
    out: TextIO | None = None,
    log: Callable[[str], None] = _stderr,
) -> tuple[list[Record], list[str]]:
    """Every chosen model through every chosen family, planner and half, one task at a time.

    :param make_model: a model from its spec, called once per spec, when its turn comes
    :param out: where each row is written as a JSON line, as soon as its batch is scored
    :returns: the rows, and a line for each family, planner and half that raised
    """
    records: list[Record] = []
    failures: list[str] = []
    chosen = [m for m in modules if selection.families is None or m.FAMILY in selection.families]
    for spec in models[:1] if selection.smoke else models:
        model = make_model(spec)
        for module in chosen:
            family: str = module.FAMILY
            planners = [
                p for p in module.PLANNERS if selection.planners is None or p in selection.planners
            ]
            if not planners:
                log(f"{family} runs {', '.join(module.PLANNERS)}: none of them chosen")
            for planner in planners[:1] if selection.smoke else planners:
                for which in ("tuning",) if selection.smoke else selection.halves:
                    where = f"{family} {planner} {which} on {spec}"
                    started = time.perf_counter()
                    try:
                        rows = await _run(module, model, spec, planner, which, selection, log)
                    except Exception as exc:  # one family's fault must not stop the others
                        failures.append(f"{where}: {type(exc).__name__}: {exc}")
                        log(f"{where} raised:\n{traceback.format_exc()}")
                        continue
                    for row in rows:
                        record = Record(which, row)
                        records.append(record)
                        if out is not None:
                            out.write(record.to_json() + "\n")
                    if out is not None:
                        out.flush()
                    right = sum(r.right for r in rows)
                    log(
                        f"{where}: {right}/{len(rows)} right "
                        f"in {time.perf_counter() - started:.0f} s"
                    )
    return records, failures


async def _run(
    module: ModuleType,
    model: Model,
    spec: str,
    planner: str,
    which: Half,
    selection: Selection,
    log: Callable[[str], None],
) -> list[Row]:
    first = 0 if selection.smoke else selection.skip
    count = 1 if selection.smoke else selection.limit
    tasks = module.tasks(which)[first:][:count]
    extra: dict[str, Any] = {}
    if (
        selection.max_tokens is not None
        and "max_tokens" in inspect.signature(module.run).parameters
    ):
        extra["max_tokens"] = selection.max_tokens
    prefix = f"[{spec} {module.FAMILY} {planner} {which}]"
    with contextlib.ExitStack() as stack:
        if selection.keep is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="agents-")))
        else:
            workdir = selection.keep / f"{module.FAMILY}-{planner}-{which}-{spec.replace(':', '_')}"
            workdir.mkdir(parents=True, exist_ok=True)
        rows = await module.run(
            tasks,
            model=model,
            model_name=spec,
            planner=planner,
            workdir=workdir,
            progress=lambda line: log(f"{prefix} {line}"),
            **extra,
        )
    return cast(list[Row], rows)


def read(path: Path) -> list[Record]:
    """The rows an `--out` file holds."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [Record.from_json(line) for line in lines if line.strip()]


def _groups(records: Iterable[Record]) -> dict[str, dict[tuple[str, str, str], list[Row]]]:
    """Rows by family, then by (planner, model, half), in the order they came."""
    grouped: dict[str, dict[tuple[str, str, str], list[Row]]] = defaultdict(dict)
    for record in records:
        row = record.row
        grouped[row.family].setdefault((row.planner, row.model, record.half), []).append(row)
    return grouped


def _percent(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "–"


def summary(rows: Sequence[Row]) -> dict[str, str]:
    """One line of a family's table (`COLUMNS` but the first three), from its rows."""
    n = len(rows)
    runs = [r.run for r in rows]
    scores = [r.score for r in rows if r.score is not None]
    ok = sum(r.status == "ok" and r.doubt is None for r in runs)
    doubtful = sum(r.status == "ok" and r.doubt is not None for r in runs)
    error = sum(r.status == "error" for r in runs)
    budget = sum(r.status == "budget_exhausted" for r in runs)
    return {
        "tasks": str(n),
        "right %": _percent(sum(r.right for r in rows), n),
        "mean F1": f"{statistics.fmean(scores):.2f}" if scores else "–",
        "s/task": f"{statistics.fmean(r.seconds for r in runs):.1f}" if n else "–",
        "ok": str(ok),
        "doubtful": str(doubtful),
        "error": str(error),
        "budget": str(budget),
        "other": str(n - ok - doubtful - error - budget),
        "invalid plans": str(sum(r.invalid_plans for r in runs)),
        "repairs": str(sum(r.repairs for r in runs)),
        "fallbacks": str(sum(r.fallbacks for r in runs)),
        "calls/task": f"{sum(r.tool_calls for r in runs) / n:.1f}" if n else "–",
    }


def by_kind(rows: Sequence[Row]) -> dict[str, str]:
    """Right % per kind of task, as `right % (of n)`, kinds in the order they came."""
    kinds: dict[str, list[Row]] = {}
    for row in rows:
        kinds.setdefault(row.kind, []).append(row)
    return {
        kind: f"{_percent(sum(r.right for r in of_kind), len(of_kind))} of {len(of_kind)}"
        for kind, of_kind in kinds.items()
    }


def show(
    records: Sequence[Record],
    failures: Sequence[str] = (),
    console: Console | None = None,
    modules: Sequence[ModuleType] = (),
) -> None:
    """A table per family and one by kind (and the measures of a family module that has
    `targets(rows) -> {name: (hits, of)}`, e.g. the knowledge family's), then what raised."""
    targets = {m.FAMILY: m.targets for m in modules if hasattr(m, "targets")}
    # Piped into a file, rich would wrap a wide table at 80 columns.
    console = console or (Console() if sys.stdout.isatty() else Console(width=200))
    for family, groups in _groups(records).items():
        graded = any(r.score is not None for rows in groups.values() for r in rows)
        table = Table(title=f"{family}: how runs went")
        columns = [c for c in COLUMNS if graded or c != "mean F1"]
        for column in columns:
            table.add_column(column, justify="left" if column in COLUMNS[:3] else "right")
        for (planner, model, which), rows in groups.items():
            cells = {"planner": planner, "model": model, "half": which, **summary(rows)}
            table.add_row(*(cells[c] for c in columns))
        console.print(table)
        kinds = list(dict.fromkeys(r.kind for rows in groups.values() for r in rows))
        table = Table(title=f"{family}: right % by kind")
        for column in ("planner", "model", "half", *kinds):
            table.add_column(column, justify="left" if column in COLUMNS[:3] else "right")
        for (planner, model, which), rows in groups.items():
            cells = by_kind(rows)
            table.add_row(planner, model, which, *(cells.get(k, "–") for k in kinds))
        console.print(table)
        for (planner, model, which), rows in groups.items() if family in targets else ():
            measures = targets[family](rows)
            said = ", ".join(f"{name} {hits}/{of}" for name, (hits, of) in measures.items())
            console.print(f"{family} {planner} {model} {which}: {said}", highlight=False)
    for failure in failures:
        console.print(f"[red]raised[/red] {failure}", markup=True, highlight=False)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), help="model specs")
    parser.add_argument("--half", choices=["tuning", "held-out", "both"], default="tuning")
    parser.add_argument("--families", nargs="+", help="family names (default: all found)")
    parser.add_argument("--planners", nargs="+", help="planner names (default: each family's)")
    parser.add_argument("--limit", type=int, help="tasks per family and half")
    parser.add_argument(
        "--skip", type=int, default=0, help="tasks passed over first (a later slice of a half)"
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the first task of each family, its first planner, the first model",
    )
    parser.add_argument(
        "--max-tokens", type=int, help="a turn's token cap, for families that take one (tools)"
    )
    parser.add_argument("--out", type=Path, help="append every row to this file (JSON lines)")
    parser.add_argument("--keep", type=Path, help="keep each run's trajectories here")
    parser.add_argument("--table", type=Path, help="table the rows of an --out file; run nothing")
    return parser.parse_args(argv)


def main(
    argv: Sequence[str] | None = None,
    *,
    modules: Sequence[ModuleType] | None = None,
    make_model: Callable[[str], Model] = load_model,
) -> int:
    """The command line. `modules` stands for the family modules found beside this file, and
    `make_model` for `load_model` (tests pass a scripted model)."""
    options = parse(argv)
    if options.table is not None:
        show(read(options.table), modules=discover()[0])
        return 0
    found, unloaded = (list(modules), []) if modules is not None else discover()
    known = {m.FAMILY for m in found}
    unknown = set(options.families or ()) - known
    if unknown:
        print(f"no family {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})")
        return 2
    selection = Selection(
        halves=HALVES if options.half == "both" else (options.half,),
        families=tuple(options.families) if options.families else None,
        planners=tuple(options.planners) if options.planners else None,
        limit=options.limit,
        skip=options.skip,
        smoke=options.smoke,
        max_tokens=options.max_tokens,
        keep=options.keep,
    )
    out = options.out.open("a", encoding="utf-8") if options.out else None
    try:
        records, failures = asyncio.run(
            measure(found, options.models, selection, make_model=make_model, out=out)
        )
    finally:
        if out is not None:
            out.close()
    show(records, [*unloaded, *failures], modules=found)
    return 1 if unloaded or failures else 0


if __name__ == "__main__":
    sys.exit(main())
