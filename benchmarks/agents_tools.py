"""Family (b) of `benchmarks/agentbench.py`, tool use: does a run call the right tools on its first
turn, and then answer?

    .venv/bin/python benchmarks/agentbench.py --families tools                  # the tuning half
    .venv/bin/python benchmarks/agentbench.py --families tools --max-tokens 512 # a longer turn cap

The data and its scoring are `benchmarks/toolcalling.py`'s (data/toolcalling/, loaded and
scored by that module, not copied): 60 stub tools in 12 domains of near siblings, and questions
by kind: `simple` (one call), `candidates` (one call, where a sibling tool looks right too),
`parallel` (two or three independent calls) and `none` (no offered tool fits). Each question's
expected calls were written with the data, before any model ran on it; the stub tools answer
`ok`. toolcalling's `dev` half is this family's `tuning` half, its `held-out` half the same.

Each question is asked of a code-first agent (`react`) offered its domain's five tools, with
the agent's default settings (a react turn of the embedded model constrained by grammar). Unlike
toolcalling.py, which stops after the first turn, the run goes to its end. A row is right when
the first turn's calls are right by toolcalling's rule (exactly the expected calls, in any
order, each with the expected arguments; for a `none` question no call and no invalid call)
*and* the run is `answered`: it ended `ok`, with an answer, and no doubt on it.

Every turn of a run is capped at `--max-tokens` tokens (the embedded model's `max_tokens`; 192
by default, as toolcalling's first turn: three calls take about 110), restored after the family
ran. A row's detail says `cut` when the first turn reached the cap.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrt import (
    Agent,
    AgentSettings,
    Event,
    Model,
    ModelResponseEvent,
    ToolCallEvent,
    ToolCallInvalidEvent,
    TurnStartedEvent,
)

sys.path.insert(0, str(Path(__file__).parent))

import toolcalling  # benchmarks/toolcalling.py, found through the line above
from agents_common import Half, Progress, Row, RunSummary, Verdict, run_each, run_once

FAMILY = "tools"
PLANNERS = ("react",)
MAX_TOKENS = 192
"""The default cap on a turn's tokens, toolcalling's."""

Task = toolcalling.Question


def tasks(half: Half) -> list[Task]:
    """The questions of one half: toolcalling's `dev` half for `tuning`."""
    _, questions = toolcalling.load()
    return toolcalling.half(questions, "dev" if half == "tuning" else "held-out")


@dataclass
class FirstTurn:
    """What a run's first turn did."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """The calls read from it (`finish` not counted), in order."""
    invalid: bool = False
    cut: bool = False
    """The turn reached the token cap."""


def first_turn(events: Sequence[Event], cap: int | None) -> FirstTurn:
    """The first turn of a run, read from its events."""
    turn = FirstTurn()
    for event in events:
        if isinstance(event, TurnStartedEvent) and event.step > 1:
            break
        if isinstance(event, ToolCallEvent) and event.name != "finish":
            turn.calls.append((event.name, dict(event.arguments)))
        elif isinstance(event, ToolCallInvalidEvent):
            turn.invalid = True
        elif isinstance(event, ModelResponseEvent) and event.purpose == "turn":
            turn.cut = cap is not None and event.usage.completion_tokens >= cap
    return turn


def calls_right(question: Task, turn: FirstTurn) -> bool:
    """toolcalling's rule: the expected calls, and for a `none` question not even an invalid
    one (a call attempted is not an answer)."""
    return toolcalling.right(question, turn.calls) and not (turn.invalid and not question.calls)


def _shown(calls: Sequence[tuple[str, dict[str, Any]]]) -> str:
    return "; ".join(f"{name}({args})" for name, args in calls) or "no call"


def score(question: Task, turn: FirstTurn, run: RunSummary) -> Verdict:
    """The verdict on one run: right when its first turn's calls are and it ended answered."""
    calls_ok = calls_right(question, turn)
    if not calls_ok:
        detail = f"expected {_shown(question.calls)}; first turn {_shown(turn.calls)}"
        detail += " (an invalid call)" if turn.invalid else ""
    elif not run.answered:
        detail = f"calls right, not answered ({run.status}{', ' + run.doubt if run.doubt else ''})"
    else:
        detail = "calls right, answered"
    return Verdict(calls_ok and run.answered, detail + (", first turn cut" if turn.cut else ""))


async def run(
    tasks: Sequence[Task],
    *,
    model: Model,
    model_name: str,
    planner: str,
    workdir: Path,
    progress: Progress,
    max_tokens: int = MAX_TOKENS,
) -> list[Row]:
    """Each question run to its end by a react agent over its domain's tools, scored.

    :param max_tokens: every turn's token cap, for a model that has one (the embedded model)
    """
    if planner not in PLANNERS:
        msg = f"the tools family runs {', '.join(PLANNERS)}, not {planner!r}"
        raise ValueError(msg)
    del workdir  # nothing is written: runs record no trajectory
    tools, _ = toolcalling.load()
    capped = hasattr(model, "max_tokens")
    before = getattr(model, "max_tokens", None)
    if capped:
        model.max_tokens = max_tokens  # type: ignore[attr-defined]

    async def attempt(question: Task) -> tuple[RunSummary, Verdict]:
        agent = Agent(model, tools=tools[question.domain], settings=_SETTINGS)
        result, summary = await run_once(agent, question.text)
        turn = first_turn(result.trajectory.events, max_tokens if capped else None)
        return summary, score(question, turn, summary)

    try:
        return await run_each(
            tasks,
            attempt,
            question=lambda q: q.text,
            family=FAMILY,
            planner=planner,
            model_name=model_name,
            progress=progress,
        )
    finally:
        if capped:
            model.max_tokens = before  # type: ignore[attr-defined]


_SETTINGS = AgentSettings(trajectory_dir=None)
