"""Charts of query results: the default workspace's chart tools, offered here as they are.

They read a table by name from the run's artifacts, where `run_sql` keeps its results.
"""

from __future__ import annotations

from agentrt.catalog.packs import load_tool_packs
from agentrt.workspace import default_workspace_path

_analysis = {t.name: t for t in load_tool_packs(default_workspace_path() / "tools")}

plot_line = _analysis["plot_line"]
plot_bar = _analysis["plot_bar"]
plot_histogram = _analysis["plot_histogram"]
