"""An evaluation as one self-contained HTML page: the summary, a chart of latencies, steps per
question and tool usage (PNG, inlined), and a row per question.

The page is the Jinja template `templates/eval_report.html.j2`, autoescaped: answers, errors
and ids are shown as text, never read as markup. The charts need matplotlib (the `analysis`
extra).
"""

from __future__ import annotations

import base64
import importlib.util
import io
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2

from agentrt.eval.folder import EvalReport
from agentrt.exceptions import UserError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["render_report"]

_TEMPLATES = Path(__file__).parent / "templates"
_OK, _FAILED = "#3b7dd8", "#d8553b"


def render_report(report: EvalReport) -> str:
    """The HTML page of `report`.

    :raises UserError: matplotlib is not installed
    """
    if importlib.util.find_spec("matplotlib") is None:
        msg = "the HTML report draws its charts with matplotlib: pip install 'agentrt[analysis]'"
        raise UserError(msg)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["percent"] = lambda v: "–" if v is None else f"{v:.1%}"
    env.filters["number"] = lambda v, digits=2: "–" if v is None else f"{v:.{digits}f}"
    tools = Counter(t for r in report.results for t in r.tools)
    charts = {
        "latency": _png(_latency_histogram(report)),
        "steps": _png(_steps_per_question(report)),
        "tools": _png(_tool_usage(tools)) if tools else None,
    }
    return env.get_template("eval_report.html.j2").render(report=report, charts=charts)


def _latency_histogram(report: EvalReport) -> Figure:
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    latencies = [r.latency for r in report.results]
    fig = Figure(figsize=(5.6, 3.2), layout="constrained")
    ax = fig.add_subplot()
    ax.hist(latencies, bins=max(5, min(30, len(latencies) // 2)), color=_OK)
    ax.set_xlabel("latency (s)")
    ax.set_ylabel("runs")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Latency per run")
    return fig


def _steps_per_question(report: EvalReport) -> Figure:
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    results = report.results
    fig = Figure(figsize=(5.6, max(2.4, 0.24 * len(results) + 1)), layout="constrained")
    ax = fig.add_subplot()
    ax.barh(
        [r.id for r in results],
        [r.steps for r in results],
        color=[_OK if r.status == "ok" and r.doubt is None else _FAILED for r in results],
    )
    ax.invert_yaxis()  # the first question on top, as in the table
    ax.set_xlabel("steps (red: the run did not end ok, or its answer is in doubt)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Steps per question")
    ax.tick_params(axis="y", labelsize=8)
    return fig


def _tool_usage(tools: Counter[str]) -> Figure:
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    ranked = tools.most_common()
    fig = Figure(figsize=(5.6, max(2.0, 0.28 * len(ranked) + 1)), layout="constrained")
    ax = fig.add_subplot()
    ax.barh([name for name, _ in ranked], [count for _, count in ranked], color=_OK)
    ax.invert_yaxis()
    ax.set_xlabel("calls, over all runs")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Tool usage")
    return fig


def _png(fig: Figure) -> str:
    """`fig` as a data URL, to inline in the page."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
