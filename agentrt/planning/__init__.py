"""Planners: how a run gets from the query to an answer."""

from agentrt.planning.base import Planner, PlannerInput, PlannerResult, PlannerSpec
from agentrt.planning.react import run_react

__all__ = ["PLANNERS", "Planner", "PlannerInput", "PlannerResult", "PlannerSpec"]

PLANNERS: dict[str, PlannerSpec] = {"react": PlannerSpec(run_react, "react.j2")}
"""Planner kinds by the name a strategy gives in its `planner` field."""
