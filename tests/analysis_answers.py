"""The pipeline's three JSON answers to the main question, as a scripted model plays them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from agentrt import Workspace
from agentrt.workspace import default_workspace_path

QUESTION = "get revenue totals by region and product type over time"
INTENT = {"primary_intent": "time_series_grouped", "confidence": 0.9}
ASKED = {
    "metrics": ["revenue"],
    "group_by": ["region", "product_category"],
    "time": {"column": "date", "grain": "unknown"},
    "analysis": ["total", "trend"],
    "outputs": ["chart", "table"],
    "constraints": [],
}
LABELS = [
    "data",
    "analysis.total",
    "analysis.trend",
    "group_by",
    "time.column",
    "outputs.chart",
    "outputs.table",
]
"""The requirement labels `ASKED` yields."""
NO_CHANGE: dict[str, Any] = {"changes": []}


def adapting_workspace(root: Path) -> Workspace:
    """A copy of the default workspace in `root` whose `analysis` strategy asks the model for
    changes to a plan that passes the gate (`adapt_covered: true`): the default runs such a
    plan as completed, and the tests of the model's changes need them asked for."""
    for part in ("strategies", "tools", "prompts", "registry", "data"):
        shutil.copytree(default_workspace_path() / part, root / part)
    path = root / "strategies" / "analysis.yaml"
    strategy = yaml.safe_load(path.read_text(encoding="utf-8"))
    strategy["pipeline"] = {**strategy.get("pipeline", {}), "adapt_covered": True}
    path.write_text(yaml.safe_dump(strategy, sort_keys=False), encoding="utf-8")
    return Workspace(root)
