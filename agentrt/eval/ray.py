"""Internal. Evaluation on Ray: every question a Ray task that rebuilds the agent from an
`EvalSpec`.

The spec is plain data (a model spec string, a workspace path, settings), so the task needs
nothing from the driver but it; it scores its run where it ran and returns the `EvalResult`.
Ray is imported only here, and only when this backend is used.

On a cluster of several machines, every node needs agentrt installed (with the extras its
model needs), and the workspace and the output folder at the same paths (a shared file
system): each task writes its trajectory where the spec says.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio

from agentrt.eval.metrics import EvalResult
from agentrt.eval.questions import EvalQuestion
from agentrt.eval.runner import EvalSpec, Evaluator, RunQuestion
from agentrt.exceptions import UserError
from agentrt.logs import configure_logging

__all__ = ["ray_runner"]


@contextmanager
def ray_runner(spec: EvalSpec, *, address: str | None = None) -> Iterator[RunQuestion]:
    """Connect to Ray and yield a function that runs one question of `spec` as a Ray task.

    :param address: a Ray cluster's address (`ray://HOST:10001`, `HOST:6379`, or `auto`); None
        starts a local Ray instance. When Ray is already initialised in this process, it is
        used as it is, and left running.
    :raises UserError: Ray is not installed
    """
    try:
        import ray
    except ImportError:
        msg = "the Ray backend needs its extra: pip install 'agentrt[ray]'"
        raise UserError(msg) from None
    started = not ray.is_initialized()
    if started:
        ray.init(address=address)
    remote = ray.remote(_run_task)

    async def run(question: EvalQuestion) -> EvalResult:
        result: EvalResult = await remote.remote(spec, question)
        return result

    try:
        yield run
    finally:
        if started:
            ray.shutdown()


def _run_task(spec: EvalSpec, question: EvalQuestion) -> EvalResult:
    # Ray passes a worker's stdout on to the driver's: logs go to stderr, as the CLI's do, so
    # that they never mix with what the driver prints (`agentrt eval --json`).
    configure_logging()
    # A new evaluator and event loop per task: a shared model's locks and connections belong
    # to the loop that first used them, and each task has its own.
    return anyio.run(Evaluator(spec).run, question)
