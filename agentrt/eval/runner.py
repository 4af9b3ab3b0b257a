"""Evaluation read from trajectories: a question set (`agentrt.eval.questions`) run through an
agent and scored (`agentrt.eval.metrics`).

`Evaluator` runs questions in this process; `evaluate` runs a set with bounded concurrency
through any function that runs one question (this process, or a Ray task: `agentrt.eval.ray`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio
from pydantic import BaseModel, ConfigDict

from agentrt.agent import Agent
from agentrt.eval.metrics import EvalResult, score
from agentrt.eval.questions import EvalQuestion
from agentrt.exceptions import UserError
from agentrt.models.spec import model_factory
from agentrt.settings import AgentSettings
from agentrt.workspace import Workspace

__all__ = ["EvalSpec", "Evaluator", "RunQuestion", "evaluate", "run_question"]


class EvalSpec(BaseModel):
    """What an evaluation runs, as plain data that crosses process boundaries (a Ray task
    rebuilds the agent from it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    """A model spec (see `agentrt.models.spec`)."""
    workspace: Path | None = None
    """The workspace folder; None: the built-in one."""
    output: Path
    """The evaluation's output folder; trajectories go to its `trajectories/`."""
    settings: AgentSettings = AgentSettings()
    """The agent's settings; `trajectory_dir` is replaced by the output folder's."""

    @property
    def agent_settings(self) -> AgentSettings:
        return self.settings.model_copy(update={"trajectory_dir": self.output / "trajectories"})


RunQuestion = Callable[[EvalQuestion], Awaitable[EvalResult]]
"""Runs one question and scores it: what `evaluate` drives, whatever runs it."""


class Evaluator:
    """Runs questions of one `EvalSpec` in this process: the workspace loaded once, a model
    for each run as the spec's kind wants it (see `agentrt.models.spec.model_factory`).

    :raises UserError: the spec names an unknown model, or the workspace lacks the agent's
        default strategy
    """

    def __init__(self, spec: EvalSpec) -> None:
        self.spec = spec
        self.workspace = Workspace(spec.workspace)
        self.models = model_factory(spec.model)
        # An agent now, so that a setting the workspace cannot meet fails before any run.
        Agent(workspace=self.workspace, model=self.models(), settings=spec.agent_settings)

    def check(self, questions: Sequence[EvalQuestion]) -> None:
        """Fail before anything runs on a question naming a strategy the workspace lacks."""
        known = self.workspace.strategies
        if unknown := sorted({q.strategy for q in questions if q.strategy} - set(known)):
            msg = (
                f"the question set names strategies {self.workspace.root} does not have: "
                f"{', '.join(unknown)} (it has: {', '.join(known)})"
            )
            raise UserError(msg)

    async def run(self, question: EvalQuestion) -> EvalResult:
        agent = Agent(
            workspace=self.workspace, model=self.models(), settings=self.spec.agent_settings
        )
        async with agent:  # the MCP servers of the workspace's mcp.yaml, for this question
            return await run_question(agent, question, relative_to=self.spec.output)


async def run_question(
    agent: Agent, question: EvalQuestion, *, relative_to: Path | None = None
) -> EvalResult:
    """Run `question` through `agent` and score the run.

    :param relative_to: name the trajectory relative to this folder, when it is inside it
    """
    run = await agent.run(question.question, strategy=question.strategy)
    path = run.path
    if path is not None and relative_to is not None and path.is_relative_to(relative_to):
        path = path.relative_to(relative_to)
    return score(question, run.trajectory.events, path.as_posix() if path else None)


async def evaluate(
    questions: Sequence[EvalQuestion],
    run: RunQuestion,
    *,
    concurrency: int = 1,
    on_result: Callable[[EvalResult], None] | None = None,
) -> list[EvalResult]:
    """Run every question through `run`, at most `concurrency` at once.

    :param on_result: called with each result as it comes, in the order runs finish
    :returns: the results, in the order of `questions`
    """
    if concurrency < 1:
        msg = f"concurrency must be at least 1 (got {concurrency})"
        raise UserError(msg)
    limiter = anyio.CapacityLimiter(concurrency)
    results: dict[str, EvalResult] = {}

    async def one(question: EvalQuestion) -> None:
        async with limiter:
            result = await run(question)
        results[question.id] = result
        if on_result is not None:
            on_result(result)

    async with anyio.create_task_group() as tg:
        for question in questions:
            tg.start_soon(one, question)
    return [results[q.id] for q in questions]
