"""Multi-hop questions with a search tool (family `multihop` of `benchmarks/agentbench.py`).

    .venv/bin/python benchmarks/agents_multihop.py --model local:small --planner react --limit 2
    .venv/bin/python benchmarks/agents_multihop.py --planner dag vm --limit 3 --keep /tmp/mh
    .venv/bin/python benchmarks/data/agents/multihop/generate.py    # the data, again

What it measures: the GAP / LLMCompiler setting. Each question needs two or more facts that
sit in different paragraphs of a document set, found with one tool, `search`; the model must
chain them (search, read a name in the result, search for that name) or, for the `parallel`
and comparison kinds, may look them up at once. The same questions go through the three
planners, each by its own strategy: `react` (turn by turn), `dag` (a plan of calls whose
nodes may pass results on, then a joiner) and `vm` (a StackVM program).

How the data was built: no public multi-hop set can be downloaded here, and a model must not
answer from memory, so the world is fictional. `data/agents/multihop/generate.py` (standard
library, fixed seed; its docstring says what it makes) draws a graph of invented towns,
rivers, mountains, countries, people, companies and bands with typed relations (founded by,
born in, headquartered in, flows through, member of, …), renders it into 76 short
encyclopedia paragraphs (several wordings per fact; companies in pairs sharing a first word
and people in pairs sharing a surname, so a search also brings a near namesake) and reads 50
questions off the graph with their answers computed, ten of each kind, the kinds in turn:
`bridge` (two hops: "In which town was the founder of X born?"), `three_hop`, `comparison`
("Which was founded earlier, X or Y?"), `yes_no` ("Was X born before Y?") and `parallel`
(two independent lookups and a difference: "How many years after X was Y founded?"). Each
question lists the paragraphs its answer rests on (`support`). `half()` splits them: every
other question, so each half holds five of each kind, in the same forms, yes and no answers
in both (until 2026-11-30 a kind's forms alternated with the halves: every tuning yes/no answer
was "no", every held-out one "yes"; 30 questions were rewritten then). The files were
committed before any model saw them.

The workspace (data/agents/multihop/workspace/: strategies `multihop_react`, `multihop_dag`,
`multihop_vm`, the one tool, a short instruction) is copied into the run's `workdir`, beside
an SQLite FTS5 index of the paragraphs (`documents.db`). `search(query)` returns the top three
paragraphs by BM25 (porter-stemmed, any word of the query may match), each `{title, text}`.
react ends by answering in plain text (or the built-in `finish`); dag by its joiner; vm by
its `final_answer`. The three strategies have the same step budget, 8 model turns; react's
first search is the question itself, made by the run (`first_calls`: the 1.5B answered most
questions with no call otherwise), and dag may plan once per hop (`replans: 3`).

How a run is scored: HotpotQA's. The answer and the truth are normalised (lower case, no
punctuation, no articles a/an/the, spaces collapsed); `right` is exact match of the two, and
only for a run that ended `answered` (ok, no doubt, an answer): a doubtful run, an error, a
spent budget is wrong whatever it says. `score` is HotpotQA's token F1 (0 when a yes/no answer
differs, and 0 for a run not answered). A row's `detail` says what was expected, what came,
and how many of the support paragraphs the run's searches returned; its `run` holds the tool
calls (`tool_calls`) and the wall time. Runs are recorded as trajectories under
`workdir/trajectories/`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import sqlite3
import string
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from agentrt import Agent, AgentSettings, Model, ToolFinishedEvent, Workspace

sys.path.insert(0, str(Path(__file__).parent))

from agents_common import (
    HALVES,
    Half,
    Progress,
    Row,
    RunSummary,
    Verdict,
    half,
    run_each,
    run_once,
)

FAMILY = "multihop"
PLANNERS: tuple[str, ...] = ("react", "dag", "vm")
DATA = Path(__file__).parent / "data" / "agents" / "multihop"
WORKSPACE = DATA / "workspace"
"""The workspace the runs use, copied into `workdir` with its index."""
_YES_NO = ("yes", "no", "noanswer")


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    kind: str
    """`bridge`, `three_hop`, `comparison`, `yes_no` or `parallel`."""
    question: str
    answer: str
    """Computed from the generator's graph."""
    support: tuple[str, ...]
    """The titles of the paragraphs the answer rests on."""


def load() -> list[Task]:
    """Every question, in the data's order (the kinds in turn)."""
    lines = (DATA / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [
        Task(r["id"], r["kind"], r["question"], r["answer"], tuple(r["support"]))
        for r in map(json.loads, filter(None, lines))
    ]


def documents() -> list[dict[str, str]]:
    """The paragraphs the search tool searches: `{id, title, text}` each."""
    lines = (DATA / "documents.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line]


def tasks(which: Half) -> list[Task]:
    return half(load(), which)


def normalise(text: str) -> str:
    """HotpotQA's answer normalisation: lower case, no punctuation, no articles, one space."""
    text = "".join(c for c in text.lower() if c not in string.punctuation)
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def exact_match(answer: str, truth: str) -> bool:
    return normalise(answer) == normalise(truth)


def f1(answer: str, truth: str) -> float:
    """HotpotQA's token F1; a yes/no answer (or truth) scores only when the two are equal."""
    said, wanted = normalise(answer), normalise(truth)
    if (said in _YES_NO or wanted in _YES_NO) and said != wanted:
        return 0.0
    common = Counter(said.split()) & Counter(wanted.split())
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(said.split()), same / len(wanted.split())
    return 2 * precision * recall / (precision + recall)


def score(task: Task, run: RunSummary, found: Sequence[str] = ()) -> tuple[bool, float, str]:
    """(right, F1, detail) of one run; `found`: the titles its successful searches returned."""
    support = sum(title in found for title in task.support)
    detail = f"expected {task.answer!r}, got {run.answer.strip()[:80]!r}; "
    detail += f"support found {support}/{len(task.support)}"
    if not run.answered:
        ended = f"ended {run.status}" + (f" ({run.doubt})" if run.doubt else "")
        return False, 0.0, f"{ended}; {detail}"
    return exact_match(run.answer, task.answer), f1(run.answer, task.answer), detail


def prepare(workdir: Path) -> Path:
    """The workspace written into `workdir/multihop` with its search index; its folder."""
    root = workdir / "multihop"
    shutil.copytree(WORKSPACE, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__py*"))
    database = root / "documents.db"
    database.unlink(missing_ok=True)
    with closing(sqlite3.connect(database)) as db:
        db.execute("CREATE VIRTUAL TABLE docs USING fts5(title, text, tokenize='porter unicode61')")
        db.executemany(
            "INSERT INTO docs (title, text) VALUES (?, ?)",
            [(d["title"], d["text"]) for d in documents()],
        )
        db.commit()
    return root


def found_titles(events: Sequence[object]) -> list[str]:
    """The titles of the paragraphs every successful `search` of a run returned."""
    titles = []
    for e in events:
        if isinstance(e, ToolFinishedEvent) and e.name == "search" and e.status == "ok":
            output = e.output if isinstance(e.output, list) else []
            titles += [str(p.get("title")) for p in output if isinstance(p, dict)]
    return titles


async def run(
    tasks: Sequence[Task],
    *,
    model: Model,
    model_name: str,
    planner: str,
    workdir: Path,
    progress: Progress,
) -> list[Row]:
    """Each task run once through `planner`'s strategy, scored against its computed answer."""
    root = prepare(workdir)
    agent = Agent(
        workspace=Workspace(root),
        model=model,
        settings=AgentSettings(
            trajectory_dir=workdir / "trajectories", default_strategy="multihop_react"
        ),
    )

    async def attempt(task: Task) -> tuple[RunSummary, Verdict]:
        result, summary = await run_once(agent, task.question, strategy=f"multihop_{planner}")
        right, f1_score, detail = score(task, summary, found_titles(result.trajectory.events))
        return summary, Verdict(right, detail, f1_score)

    return await run_each(
        tasks,
        attempt,
        question=lambda t: t.question,
        family=FAMILY,
        planner=planner,
        model_name=model_name,
        progress=progress,
    )


async def _main(args: argparse.Namespace) -> None:
    from agentrt.models.spec import load_model

    model = load_model(args.model)
    chosen = tasks(args.half)[: args.limit]
    with tempfile.TemporaryDirectory(prefix="multihop-") as scratch:
        for planner in args.planner:
            workdir = Path(args.keep or scratch) / planner
            workdir.mkdir(parents=True, exist_ok=True)
            rows = await run(
                chosen,
                model=model,
                model_name=args.model,
                planner=planner,
                workdir=workdir,
                progress=print,
            )
            for r in rows:
                print(
                    f"{r.planner:5} {r.task:16} {r.run.status:16} right={r.right!s:5} "
                    f"f1={r.score or 0:.2f} calls={r.run.tool_calls} {r.run.seconds:6.1f}s "
                    f"{r.detail}"
                )
            n = len(rows)
            print(
                f"{planner}: exact match {sum(r.right for r in rows)}/{n}, "
                f"F1 {sum(r.score or 0 for r in rows) / n:.2f}, "
                f"{sum(r.run.seconds for r in rows) / n:.1f} s per task, "
                f"{sum(r.run.tool_calls for r in rows) / n:.1f} calls per task"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="local:small", help="a model spec (agentrt run)")
    parser.add_argument("--planner", nargs="+", choices=PLANNERS, default=list(PLANNERS))
    parser.add_argument("--half", choices=HALVES, default="tuning")
    parser.add_argument("--limit", type=int, default=None, help="only the first N tasks")
    parser.add_argument("--keep", help="a folder to keep the workspaces and trajectories in")
    asyncio.run(_main(parser.parse_args()))


if __name__ == "__main__":
    main()
