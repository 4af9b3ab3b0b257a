"""Internal. The `pipeline` planner: a small model gets a correct plan because deterministic
checks, not the model, hold the line.

    requirements.py   what the question asks of the data, in a closed vocabulary
    periods.py        the periods a filter keeps, and the one a question names in words
    adaptation.py     the template bound to the requirements, and the model's changes to it
    coverage.py       the gate: every requirement has a step, every step a requirement
    completion.py     the plan completed by the planner: unneeded steps out, missing ones in
    repair.py         safe repairs as the plan runs; semantic ones refused
    planner.py        the run: the model's three questions, the gate, execution

What the engine knows of the analysis tools (which parameters name columns, how data is
loaded) is the workspace's `registry/pipeline.yaml`.
"""

from agentrt.planning.pipeline.adaptation import Adaptation, Change, apply_changes, bind
from agentrt.planning.pipeline.coverage import Coverage, check_coverage
from agentrt.planning.pipeline.planner import run_pipeline
from agentrt.planning.pipeline.requirements import (
    Analysis,
    Filters,
    Grain,
    Output,
    Requirements,
    TimeRequirement,
    requirement_labels,
)

__all__ = [
    "Adaptation",
    "Analysis",
    "Change",
    "Coverage",
    "Filters",
    "Grain",
    "Output",
    "Requirements",
    "TimeRequirement",
    "apply_changes",
    "bind",
    "check_coverage",
    "requirement_labels",
    "run_pipeline",
]
