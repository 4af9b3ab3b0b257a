"""Family (e) of `benchmarks/agentbench.py`: the knowledge workspace's four strategies, each run on
its own questions, scored on how the run ended and what it cited.

    .venv/bin/python benchmarks/agentbench.py --families knowledge     # through the driver

What it measures: whether a run forced to a retrieval strategy (`aggregate`, `list`,
`targeted`, `exploratory`: the planners of this family) ends by its own `finish_retrieval`
call and cites a chunk of a section that answers the question (aggregate questions: states the
right count). The issue's two knowledge targets are read off the rows (`targets`): the share
of runs ended by `finish_retrieval` (≥ 75 %) and the share of runs with a gold chunk cited
(≥ 50 %, over the questions that have gold sections).

A thin layer over `benchmarks/knowledge.py`'s agent runs, loaded as a module and reused, not
copied: its questions (`load_agent_questions`: data/knowledge/agent_questions.jsonl, six per
strategy in users' wording, each labelled with its strategy and its gold sections, or for an
aggregate question its count; written by hand, and checked against the ingested corpus by
`check_gold`), its workspace copy (`prepare_workspace`: workspaces/knowledge/ copied into
`workdir` and ingested), its scoring from the trajectory (`score_run`).

Halves: `agents_common.half` over each strategy's questions (the odd ones tune, the even ones
are held out). The fifth and sixth of each were written after the others had been run, and
before any run of theirs: a held-out set not yet seen (`--half held-out --skip 8`). A task's
id is its strategy and its place among that strategy's questions (`list-3`); its kind is the
strategy.

A run: `run(tasks, planner=S)` runs the tasks labelled `S` (a question is written for one
strategy; the others give no row for `S`), each one run of an `Agent` over the ingested copy in
`workdir/knowledge-S`, strategy forced to `S`, trajectories in `workdir/trajectories`. A row is
right when the run is `answered` (ended `ok`, no `run_finished.doubt`, an answer), ended by
its own successful `finish_retrieval` in its last step, and cited a gold chunk (aggregate: its
answer holds the expected count as a number). The detail says `by_finish`, `cited_gold`,
`retrieved_gold` and `count_right` as `yes`, `no` or `–` (not graded for this question).
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from agentrt import Agent, AgentSettings, Model, Workspace

sys.path.insert(0, str(Path(__file__).parent))
from agents_common import (
    Half,
    Progress,
    Row,
    RunSummary,
    Verdict,
    half,
    interleave,
    run_each,
    run_once,
)


def _load(path: Path) -> ModuleType:
    """`benchmarks/<name>.py` as a module, once (benchmarks/ is not a package)."""
    if path.stem in sys.modules:
        return sys.modules[path.stem]
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


knowledge = _load(Path(__file__).parent / "knowledge.py")

FAMILY = "knowledge"
PLANNERS: tuple[str, ...] = tuple(knowledge.STRATEGIES)


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    question: Any
    """The question as `knowledge.load_agent_questions` gives it (an `AgentQuestion`)."""
    kind: str
    """Its strategy."""


def tasks(which: Half) -> list[Task]:
    """The questions of `which` half (`half` over each strategy's questions), the strategies
    taken in turn (`interleave`): any first N cover them alike."""
    questions = knowledge.load_agent_questions()
    groups = []
    for strategy in PLANNERS:
        numbered = [
            (n, q) for n, q in enumerate((q for q in questions if q.strategy == strategy), start=1)
        ]
        groups.append([Task(f"{strategy}-{n}", q, strategy) for n, q in half(numbered, which)])
    return interleave(groups)


def _mark(value: bool | None) -> str:
    return "–" if value is None else "yes" if value else "no"


def detail(scored: Any) -> str:
    """What `knowledge.score_run` found, as `name=yes|no|–` pairs."""
    return "; ".join(
        f"{name}={_mark(getattr(scored, name))}"
        for name in ("by_finish", "cited_gold", "retrieved_gold", "count_right")
    )


def right(scored: Any, answered: bool) -> bool:
    """Answered, ended by finish_retrieval, and a gold chunk cited (or the count right)."""
    graded = scored.count_right if scored.question.count is not None else scored.cited_gold
    return answered and scored.by_finish and bool(graded)


def targets(rows: Sequence[Row]) -> dict[str, tuple[int, int]]:
    """The issue's two knowledge measures over `rows`, as (hits, of): `by_finish` over every run,
    `cited_gold` over the runs of questions with gold sections (not aggregate)."""
    marks = [dict(pair.split("=") for pair in row.detail.split("; ")) for row in rows]
    graded = [m for m in marks if m["cited_gold"] != "–"]
    return {
        "by_finish": (sum(m["by_finish"] == "yes" for m in marks), len(marks)),
        "cited_gold": (sum(m["cited_gold"] == "yes" for m in graded), len(graded)),
    }


async def run(
    tasks: Sequence[Task],
    *,
    model: Model,
    model_name: str,
    planner: str,
    workdir: Path,
    progress: Progress,
) -> list[Row]:
    """The tasks labelled `planner` (a strategy), each run with that strategy forced over a
    freshly ingested copy of the knowledge workspace, one at a time, scored from the run's
    trajectory by `knowledge.score_run`."""
    mine = [t for t in tasks if t.question.strategy == planner]
    if not mine:
        return []
    folder = workdir / f"knowledge-{planner}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    progress(f"{FAMILY}: ingesting the workspace for {planner}")
    root = knowledge.prepare_workspace(folder)
    knowledge.check_gold(knowledge.open_knowledge(str(root)), [t.question for t in mine])
    agent = Agent(
        workspace=Workspace(root),
        model=model,
        settings=AgentSettings(trajectory_dir=workdir / "trajectories"),
    )

    async def attempt(task: Task) -> tuple[RunSummary, Verdict]:
        result, summary = await run_once(agent, task.question.question, strategy=planner)
        scored = knowledge.score_run(task.question, result.trajectory)
        return summary, Verdict(right(scored, summary.answered), detail(scored))

    return await run_each(
        mine,
        attempt,
        question=lambda t: t.question.question,
        family=FAMILY,
        planner=planner,
        model_name=model_name,
        progress=progress,
    )
