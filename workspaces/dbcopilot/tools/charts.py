"""Charts of query results: the shared chart tools of `agentrt.analysis`, offered here as they are.

They read a table by name from the run's artifacts, where `run_sql` keeps its results.
"""

from __future__ import annotations

from agentrt.analysis import charts

# Offered by this pack as every `Tool` at its module level is, in this order (the catalog's).
plot_line = charts.plot_line
plot_bar = charts.plot_bar
plot_histogram = charts.plot_histogram
