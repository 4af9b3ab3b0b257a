"""What every family of `benchmarks/agentbench.py` shares: the halves, one run's outcome read
from its events, the row the tables are made of.

A family is a module `benchmarks/agents_<family>.py` with:

- `FAMILY`: its name; `PLANNERS`: the planners (or strategies) it runs, in table order;
- `tasks(half) -> list[Task]`: its tasks of one half (`tuning` or `held-out`), each with an `id`;
- `async run(tasks, *, model, model_name, planner, workdir, progress) -> list[Row]`: one row per
  task, the run scored against the task's computed ground truth.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from agentrt import (
    Agent,
    Event,
    PlanInvalidEvent,
    PlannerFallbackEvent,
    RunFinishedEvent,
    RunResult,
    ToolCallInvalidEvent,
    ToolFinishedEvent,
)

Half = Literal["tuning", "held-out"]
HALVES: tuple[Half, ...] = ("tuning", "held-out")
Progress = Callable[[str], None]
T = TypeVar("T")


def half(items: Sequence[T], which: Half) -> list[T]:
    """Every other item, from the first (`tuning`) or the second (`held-out`): items written in
    groups of a kind split evenly, whatever the group sizes."""
    return list(items[0 if which == "tuning" else 1 :: 2])


def interleave(groups: Sequence[Sequence[T]]) -> list[T]:
    """The first of each group, then the second of each, …: so that the first N tasks (the
    driver's `--limit`) cover every group (database, strategy) alike."""
    longest = max((len(g) for g in groups), default=0)
    return [g[i] for i in range(longest) for g in groups if i < len(g)]


@dataclass(frozen=True, slots=True)
class RunSummary:
    """How one run went, read from its events alone."""

    status: str
    doubt: str | None
    """`run_finished.doubt`: an `ok` run whose answer is not one (a raw call, a tool's error)."""
    answer: str
    seconds: float
    steps: int
    tool_calls: int
    """Calls that ran (`tool_finished`), cached ones included."""
    failed_calls: int
    invalid_calls: int
    invalid_plans: int
    repairs: int
    """Invalid plans the planner asked the model to repair."""
    fallbacks: int
    error: str | None = None
    """Why a run that did not end `ok` ended so (`run_finished.error`)."""

    @property
    def answered(self) -> bool:
        """Ended `ok` with an answer that is one: what a family may count as right."""
        return self.status == "ok" and self.doubt is None and bool(self.answer.strip())


def summarise(events: Sequence[Event], seconds: float) -> RunSummary:
    end = events[-1]
    assert isinstance(end, RunFinishedEvent), "a run's events end with run_finished"
    finished = [e for e in events if isinstance(e, ToolFinishedEvent)]
    invalid_plans = [e for e in events if isinstance(e, PlanInvalidEvent)]
    return RunSummary(
        status=end.status,
        doubt=end.doubt,
        answer=end.answer or "",
        error=end.error,
        seconds=seconds,
        steps=end.steps,
        tool_calls=len(finished),
        failed_calls=sum(e.status != "ok" for e in finished),
        invalid_calls=sum(isinstance(e, ToolCallInvalidEvent) for e in events),
        invalid_plans=len(invalid_plans),
        repairs=sum(e.repairing for e in invalid_plans),
        fallbacks=sum(isinstance(e, PlannerFallbackEvent) for e in events),
    )


async def run_once(
    agent: Agent, query: str, *, strategy: str | None = None
) -> tuple[RunResult, RunSummary]:
    """`query` run to its end by `agent` (its strategy forced when given), timed on the wall."""
    started = time.perf_counter()
    result = await agent.run(query, strategy=strategy)
    summary = summarise(result.trajectory.events, time.perf_counter() - started)
    return result, summary


@dataclass(frozen=True, slots=True)
class Row:
    """One task of one family, run by one model through one planner."""

    family: str
    planner: str
    model: str
    task: str
    kind: str
    """The task's kind within its family (a question type, a call shape), for breakdowns."""
    right: bool
    """Scored against the task's computed ground truth; never true for a run not `answered`."""
    run: RunSummary
    score: float | None = None
    """A graded score where the family has one (multi-hop: token F1), else None."""
    detail: str = ""
    """Why it was scored so, in a few words (what was expected, what came)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """A family's judgement of one run."""

    right: bool
    detail: str
    score: float | None = None


class TaskLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...


K = TypeVar("K", bound=TaskLike)


async def run_each(
    tasks: Sequence[K],
    attempt: Callable[[K], Awaitable[tuple[RunSummary, Verdict]]],
    *,
    question: Callable[[K], str],
    family: str,
    planner: str,
    model_name: str,
    progress: Progress,
) -> list[Row]:
    """Each task attempted once (`attempt`: run it, judge the run), one at a time, with a
    progress line before and after each: what every family's `run` does once it is set up."""
    rows = []
    for number, task in enumerate(tasks, start=1):
        where = f"[{number}/{len(tasks)}] {family} {planner} {task.id}"
        progress(f"{where}: {question(task)}")
        summary, verdict = await attempt(task)
        progress(
            f"{where}: {summary.status}{f' ({summary.doubt})' if summary.doubt else ''}, "
            f"{'right' if verdict.right else 'wrong'}, {summary.seconds:.1f} s: {verdict.detail}"
        )
        rows.append(
            Row(
                family=family,
                planner=planner,
                model=model_name,
                task=task.id,
                kind=task.kind,
                right=verdict.right,
                run=summary,
                score=verdict.score,
                detail=verdict.detail,
            )
        )
    return rows
