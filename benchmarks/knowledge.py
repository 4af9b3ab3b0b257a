"""Knowledge-base search (recall@5, MRR) and a real model's retrieval runs (steps per strategy).

    .venv/bin/python benchmarks/knowledge.py            # every question (about a minute)
    .venv/bin/python benchmarks/knowledge.py --quick    # one question in four
    .venv/bin/python benchmarks/knowledge.py --detail   # also each method's misses
    .venv/bin/python benchmarks/knowledge.py --agent local:small   # 24 runs, about 30 minutes

Search. The corpus is documentation that installed packages ship (data/knowledge/, with its
licences in SOURCES.md): 30 Markdown files in three contexts, about 600 chunks. It is ingested
with the project's own code (`agentrt.knowledge.ingest`, the packaged all-MiniLM-L6-v2 embedder)
into a store under a temporary folder, or `--store` to keep it between runs.

Each question in questions.jsonl names its gold sections as (item, heading); the gold chunks are
every chunk of those sections. Every question searches all three contexts (the model's choice of
context is not measured here), limit 10. recall@5: the share of questions with a gold chunk in
the top 5. MRR: the mean of 1 / rank of the first gold chunk (0 past rank 10).

Agent (`--agent MODEL`, a model spec as `agentrt run --model` takes it). The knowledge workspace
(workspaces/knowledge/: its strategies, prompts, tools and small corpus) is copied into a
temporary folder and ingested there; each question of agent_questions.jsonl (6 per strategy,
users' wording; `--per-strategy N` takes the first N of each) is one run of an `Agent` with the
strategy forced to the question's label, recorded as a trajectory (in a temporary folder, or
`--keep DIR`). Everything in the table is read back from those trajectory files:

- steps: model turns of the run (`run_finished.steps`); budget: the strategy's step budget
  (`strategy_selected.step_budget`), which includes the turn that calls finish_retrieval;
- ok / budget / error: how runs ended (`run_finished.status`; "other": cancelled, needs_input);
  by finish: the runs that ended ok through a successful finish_retrieval call in their last
  step (the rest of the ok runs ended with plain text, which the prompts tell the model not to);
- retrieved gold: the share of runs in which some successful tool call (a search, or a page
  read) returned a chunk record of a gold section of the question;
- cited gold: the share of runs whose final answer cites (as [c12]) a chunk of a gold section;
- count right (aggregate questions, which have an expected count instead of gold sections): the
  share of answers that contain the expected count as a number;
- tokens, seconds: per run, prompt and completion tokens of every model call as the model
  reports them, and wall time. The embedded model counts the text of the messages it is sent,
  not the tool schemas its chat template adds to the prompt.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import shutil
import statistics
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from rich.console import Console
from rich.table import Table

from agentrt import (
    Agent,
    AgentSettings,
    LocalModel,
    Model,
    RunStatus,
    StrategySelectedEvent,
    ToolFinishedEvent,
    Trajectory,
    Workspace,
)
from agentrt.contexts import load_knowledge_config
from agentrt.knowledge.answer import FoundChunk, RetrievalResult
from agentrt.knowledge.ingest import ingest
from agentrt.knowledge.search import KnowledgeBase, SearchMethod, open_knowledge
from agentrt.knowledge.store import Store
from agentrt.logs import configure_logging
from agentrt.models.spec import load_model

DATA = Path(__file__).parent / "data" / "knowledge"
METHODS: tuple[SearchMethod, ...] = get_args(SearchMethod)
DEPTH = 10
WORKSPACE = Path(__file__).resolve().parents[1] / "workspaces" / "knowledge"
"""The workspace the agent runs on; its own corpus is what agent_questions.jsonl is about."""
StrategyName = Literal["aggregate", "list", "targeted", "exploratory"]
STRATEGIES: tuple[StrategyName, ...] = get_args(StrategyName)


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    gold: tuple[tuple[str, str], ...]
    """(item, the last part of a section's heading) of each section that answers it."""


@dataclass(frozen=True, slots=True)
class Score:
    method: SearchMethod
    recall_at_5: float
    mrr: float
    misses: list[str]
    """The questions without a gold chunk in the top 5."""


def load_questions(path: Path = DATA / "questions.jsonl") -> list[Question]:
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        raw = json.loads(line)
        gold = tuple((item, heading) for item, heading in raw["gold"])
        if not gold:
            msg = f"{path}:{number}: the question has no gold section"
            raise ValueError(msg)
        questions.append(Question(raw["question"], gold))
    return questions


def open_corpus(store: Path, contexts: list[str] | None = None) -> KnowledgeBase:
    """The benchmark corpus (`contexts` of it; None: all) ingested into `store`, only what
    changed since the last time."""
    config = load_knowledge_config(DATA)
    assert config is not None, f"{DATA} has no contexts.yaml"
    kb = KnowledgeBase(config, store=Store(store))
    ingest(kb, contexts)
    return kb


def ingested(kb: KnowledgeBase) -> dict[str, None]:
    """Every context of the store that holds items, as a search target."""
    return {c: None for c in kb.store.contexts() if kb.store.items({c: None})}


def gold_chunks(kb: KnowledgeBase, questions: list[Question]) -> list[set[int]]:
    """The chunk ids of each question's gold sections.

    :raises ValueError: a gold section that the corpus does not have (a typo, or a changed file)
    """
    records = kb.store.chunks(kb.store.chunk_ids(ingested(kb)))
    sections: dict[tuple[str, str], set[int]] = {}
    for c in records.values():
        sections.setdefault((c.item, c.heading.rsplit(" › ", 1)[-1]), set()).add(c.id)
    golds = []
    for question in questions:
        found: set[int] = set()
        for item, heading in question.gold:
            if (item, heading) not in sections:
                msg = f"{question.question!r}: no section {heading!r} in {item}"
                raise ValueError(msg)
            found |= sections[item, heading]
        golds.append(found)
    return golds


def evaluate(kb: KnowledgeBase, questions: list[Question]) -> list[Score]:
    """Each method's scores on `questions`, searching every ingested context."""
    target = ingested(kb)
    golds = gold_chunks(kb, questions)
    vectors = kb.embed_queries([q.question for q in questions])
    scores = []
    for method in METHODS:
        hits, reciprocal, misses = 0, 0.0, []
        for question, gold, vector in zip(questions, golds, vectors, strict=True):
            found = kb.search(
                question.question, target, method=method, limit=DEPTH, query_vector=vector
            )
            ranked = [h.chunk.id for h in found]
            rank = next((i for i, c in enumerate(ranked, start=1) if c in gold), None)
            if rank is not None and rank <= 5:
                hits += 1
            else:
                misses.append(question.question)
            reciprocal += 1 / rank if rank is not None else 0.0
        n = len(questions)
        scores.append(Score(method, hits / n, reciprocal / n, misses))
    return scores


def table(scores: list[Score], questions: int, chunks: int) -> Table:
    out = Table(title=f"knowledge search: {questions} questions, {chunks} chunks, all contexts")
    out.add_column("method")
    out.add_column("recall@5", justify="right")
    out.add_column(f"MRR@{DEPTH}", justify="right")
    for s in scores:
        out.add_row(s.method, f"{s.recall_at_5:.3f}", f"{s.mrr:.3f}")
    return out


class AgentQuestion(BaseModel):
    """A line of agent_questions.jsonl."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    question: str = Field(min_length=1)
    strategy: StrategyName
    """The strategy the run is forced to: the question's label."""
    gold: tuple[tuple[str, str], ...] = ()
    """(item, the last part of a section's heading) of each section that answers it; none for
    aggregate questions, whose answers are counts, not chunks."""
    count: int | None = Field(None, ge=0)
    """The right count, for an aggregate question where one is well defined."""

    @model_validator(mode="after")
    def _labelled_for_its_strategy(self) -> AgentQuestion:
        if self.strategy == "aggregate" and self.gold:
            msg = "an aggregate question has no gold sections (counts cite no chunk); give count"
            raise ValueError(msg)
        if self.strategy != "aggregate" and not self.gold:
            msg = f"a {self.strategy} question needs its gold sections"
            raise ValueError(msg)
        if self.strategy != "aggregate" and self.count is not None:
            msg = f"only aggregate questions have a count, not {self.strategy} ones"
            raise ValueError(msg)
        return self


def load_agent_questions(
    path: Path = DATA / "agent_questions.jsonl", per_strategy: int | None = None
) -> list[AgentQuestion]:
    """The questions grouped by strategy (in `STRATEGIES` order), the first `per_strategy` of
    each (None: all).

    :raises ValueError: a line that is not a valid question (the message names the line)
    """
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            questions.append(AgentQuestion.model_validate_json(line))
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"])
            msg = f"{path}:{number}: {field + ': ' if field else ''}{error['msg']}"
            raise ValueError(msg) from None
    by_strategy = [[q for q in questions if q.strategy == s][:per_strategy] for s in STRATEGIES]
    return [q for group in by_strategy for q in group]


def prepare_workspace(folder: Path) -> Path:
    """A copy of the knowledge workspace in `folder` (without its store), ingested: its tool
    pack reads the store of the folder it sits in, so runs never touch the real workspace."""
    root = Path(
        shutil.copytree(WORKSPACE, folder / "knowledge", ignore=shutil.ignore_patterns(".*"))
    )
    root = root.resolve()
    ingest(open_knowledge(str(root)))
    return root


def check_gold(kb: KnowledgeBase, questions: Sequence[AgentQuestion]) -> None:
    """:raises ValueError: a gold section that the workspace's corpus does not have"""
    records = kb.store.chunks(kb.store.chunk_ids(ingested(kb)))
    sections = {(c.item, c.heading.rsplit(" › ", 1)[-1]) for c in records.values()}
    for question in questions:
        for item, heading in question.gold:
            if (item, heading) not in sections:
                msg = f"{question.question!r}: no section {heading!r} in {item}"
                raise ValueError(msg)


@dataclass(frozen=True, slots=True)
class AgentRun:
    """One question's run, as read from its trajectory."""

    question: AgentQuestion
    status: RunStatus
    by_finish: bool
    """Ended ok by a successful finish_retrieval call in its last step."""
    steps: int
    budget: int | None
    """None when the run ended before its strategy was set up."""
    retrieved_gold: bool | None
    """None: the question has no gold sections (aggregate)."""
    cited_gold: bool | None
    count_right: bool | None
    """None: the question has no expected count."""
    tokens: int
    seconds: float
    answer: str | None


def score_run(question: AgentQuestion, trajectory: Trajectory) -> AgentRun:
    """What the run recorded in `trajectory` did for `question` (see the module docstring).

    :raises ValueError: the trajectory is not of a whole run
    """
    events = trajectory.events
    result = RetrievalResult.from_events(events)
    end = trajectory.finished
    assert end is not None  # from_events checked it
    gold = set(question.gold)

    def is_gold(c: FoundChunk) -> bool:
        return (c.item, c.heading.rsplit(" › ", 1)[-1]) in gold

    budget = next((e.step_budget for e in events if isinstance(e, StrategySelectedEvent)), None)
    count_right = None
    if question.count is not None:
        count_right = (
            re.search(rf"(?<![\d.]){question.count}(?![\d.])", end.answer or "") is not None
        )
    by_finish = end.status == "ok" and any(
        isinstance(e, ToolFinishedEvent)
        and e.name == "finish_retrieval"
        and e.status == "ok"
        and e.step == end.steps
        for e in events
    )
    return AgentRun(
        question=question,
        status=end.status,
        by_finish=by_finish,
        steps=end.steps,
        budget=budget,
        retrieved_gold=any(is_gold(c) for c in result.chunks) if gold else None,
        cited_gold=any(is_gold(c) for c in result.citations) if gold else None,
        count_right=count_right,
        tokens=end.usage.total_tokens,
        seconds=end.timings.total,
        answer=end.answer,
    )


async def run_agent(
    model: Model,
    questions: Sequence[AgentQuestion],
    root: Path,
    trajectories: Path,
    progress: Callable[[str], None] = lambda line: None,
) -> list[AgentRun]:
    """Each question answered by an agent over the workspace at `root` (ingested), one run at
    a time, scored from its trajectory file in `trajectories`; `progress` gets a line before
    and after each run."""
    agent = Agent(
        workspace=Workspace(root), model=model, settings=AgentSettings(trajectory_dir=trajectories)
    )
    runs = []
    for number, q in enumerate(questions, start=1):
        where = f"[{number}/{len(questions)}] {q.strategy}"
        progress(f"{where}: {q.question}")
        result = await agent.run(q.question, strategy=q.strategy)
        assert result.path is not None  # trajectories are recorded
        run = score_run(q, Trajectory.read(result.path))
        notes = [
            f"{run.status}{' (finish_retrieval)' if run.by_finish else ''}",
            f"{run.steps}/{run.budget} steps",
            f"{run.tokens} tokens, {run.seconds:.0f} s",
            *(["count right"] if run.count_right else []),
            *(["gold retrieved"] if run.retrieved_gold else []),
            *(["gold cited"] if run.cited_gold else []),
        ]
        progress(f"{where}: {'; '.join(notes)}")
        runs.append(run)
    return runs


def agent_table(runs: Sequence[AgentRun], model: str) -> Table:
    out = Table(title=f"knowledge agent: {model}, {len(runs)} runs, strategy forced")
    for name in (
        "strategy",
        "runs",
        "step\nbudget",
        "steps\nmean",
        "steps\nmax",
        "ok",
        "by\nfinish",
        "budget\nexhausted",
        "error",
        "other",
        "gold\nretrieved",
        "gold\ncited",
        "count\nright",
        "tokens\n/run",
        "s/run",
    ):
        out.add_column(name, justify="left" if name == "strategy" else "right")
    for strategy in STRATEGIES:
        group = [r for r in runs if r.question.strategy == strategy]
        if not group:
            continue
        statuses = [r.status for r in group]
        graded = [r for r in group if r.retrieved_gold is not None]
        counted = [r for r in group if r.count_right is not None]

        out.add_row(
            strategy,
            str(len(group)),
            ", ".join(sorted({str(r.budget) for r in group})),
            f"{statistics.mean(r.steps for r in group):.2f}",
            str(max(r.steps for r in group)),
            str(statuses.count("ok")),
            str(sum(r.by_finish for r in group)),
            str(statuses.count("budget_exhausted")),
            str(statuses.count("error")),
            str(len(group) - sum(statuses.count(s) for s in ("ok", "budget_exhausted", "error"))),
            _share(sum(bool(r.retrieved_gold) for r in graded), len(graded)),
            _share(sum(bool(r.cited_gold) for r in graded), len(graded)),
            _share(sum(bool(r.count_right) for r in counted), len(counted)),
            f"{statistics.mean(r.tokens for r in group):.0f}",
            f"{statistics.mean(r.seconds for r in group):.1f}",
        )
    return out


def _share(hits: int, of: int) -> str:
    return f"{hits}/{of}" if of else "–"


async def _agent_runs(
    spec: str, questions: list[AgentQuestion], root: Path, trajectories: Path, err: Console
) -> tuple[str, list[AgentRun]]:
    model = load_model(spec)
    if isinstance(model, LocalModel):
        err.print(f"loading {model.name}")
        await model.load()  # before the first run, so its time is not counted in that run
    runs = await run_agent(
        model,
        questions,
        root,
        trajectories,
        lambda line: err.print(line, highlight=False, soft_wrap=True),
    )
    return model.name, runs


def main_agent(spec: str, per_strategy: int | None, keep: Path | None) -> None:
    # The table needs about 140 columns; rich would cut every cell to fit 80 in a log file.
    console, err = Console(width=max(Console().width, 140)), Console(stderr=True)
    questions = load_agent_questions(per_strategy=per_strategy)
    with tempfile.TemporaryDirectory() as scratch:
        root = prepare_workspace(Path(scratch))
        check_gold(open_knowledge(str(root)), questions)
        trajectories = keep or Path(scratch) / "trajectories"
        err.print(f"{len(questions)} questions, model {spec}, trajectories in {trajectories}")
        name, runs = asyncio.run(_agent_runs(spec, questions, root, trajectories, err))
    console.print(agent_table(runs, name))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="one question in four")
    parser.add_argument("--detail", action="store_true", help="also list each method's misses")
    parser.add_argument("--store", type=Path, help="keep the ingested corpus here")
    parser.add_argument("--agent", metavar="MODEL", help="run the agent questions with MODEL")
    parser.add_argument(
        "--per-strategy", type=int, metavar="N", help="with --agent: the first N of each strategy"
    )
    parser.add_argument("--keep", type=Path, metavar="DIR", help="with --agent: trajectories here")
    args = parser.parse_args()
    configure_logging(logging.ERROR)
    if args.agent is None and (args.per_strategy is not None or args.keep is not None):
        parser.error("--per-strategy and --keep go with --agent")
    if args.per_strategy is not None and args.per_strategy < 1:
        parser.error(f"--per-strategy must be at least 1, not {args.per_strategy}")
    if args.agent is not None:
        main_agent(args.agent, args.per_strategy, args.keep)
        return
    questions = load_questions()
    if args.quick:
        questions = questions[::4]
    with tempfile.TemporaryDirectory() as scratch:
        kb = open_corpus(args.store or Path(scratch))
        scores = evaluate(kb, questions)
        chunks = len(kb.store.chunk_ids(ingested(kb)))
        kb.store.close()
    console = Console()
    console.print(table(scores, len(questions), chunks))
    if args.detail:
        for s in scores:
            console.print(f"\n[bold]{s.method}[/] misses ({len(s.misses)}):")
            for miss in s.misses:
                console.print(f"  {miss}", highlight=False)


if __name__ == "__main__":
    main()
