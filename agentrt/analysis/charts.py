"""Charts for analysis tool packs: `plot_line`, `plot_bar` and `plot_histogram`, as tools.

A pack offers them by importing them (`from agentrt.analysis.charts import plot_line`): every
`Tool` at a pack's module level joins its workspace's catalog. They draw a table the run
keeps by name (`agentrt.analysis.frames`) into a PNG in the run's output folder and answer
`{"file": absolute path, "chart", "series", …}`.

matplotlib is the `analysis` extra, imported when a chart is drawn. Charts use its Agg
canvas on a bare `Figure`, without pyplot: no display is needed, and no global state is
shared between calls running in parallel threads. No chart is cached by the executor's
duplicate guard: an identical call after the table changed rightly draws another chart.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from agentrt.analysis.frames import (
    INSTALL,
    as_dates,
    import_pandas,
    is_date_like,
    is_number,
    iso,
    output_path,
    read_frame,
    require_columns,
    require_numeric,
)
from agentrt.exceptions import ToolError
from agentrt.tool import ToolContext, tool

if TYPE_CHECKING:
    # pandas ships no type information (pandas-stubs is not a dependency): frames are Any.
    import pandas as pd  # type: ignore[import-untyped]
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_bar", "plot_histogram", "plot_line"]

MAX_LINES = 20
"""Lines in one chart panel; more are unreadable (and run out of distinct colours)."""
MAX_PANELS = 12
MAX_BARS = 40
"""Bar positions along x; a longer series is a line chart."""


@tool(cache=False)
def plot_line(
    ctx: ToolContext,
    x: str,
    y: str,
    color: str | None = None,
    data: str = "data",
    title: str | None = None,
    filename: str | None = None,
) -> dict[str, Any]:
    """Draw a line chart (PNG), usually a metric over time, with one line per category of
    `color`.

    When rows repeat for an x within a line (e.g. a table aggregated by region and
    product_category drawn with color="region"), the chart gets one panel per color value and
    one line per the other category; with no such category the repeated rows are summed.

    Args:
        x: The column along the horizontal axis, e.g. "date".
        y: The numeric column to draw, e.g. "revenue".
        color: A category column to draw one line per value of, e.g. "region".
        data: The table to read.
        title: The chart's title; by default made from the columns.
        filename: The PNG's file name; by default made from the columns.
    """
    # A line per value of x is no line at all (the 1.5B wrote x="region", color="region").
    color = color if color and color != x else None
    table = _line_table(read_frame(ctx, data), x, y, color, data)
    panel_by, line_by, summed = _layout(table, x, color)
    keys = [c for c in (panel_by, line_by) if c]
    if summed:
        table = table.groupby([x, *keys], observed=True, sort=False)[y].sum().reset_index()
    lines = _ordered_values(table, line_by, y) if line_by else [None]
    panels = _ordered_values(table, panel_by, y) if panel_by else [None]
    if len(lines) > MAX_LINES:
        raise ToolError(
            f"{line_by!r} has {len(lines)} values; a chart holds at most {MAX_LINES} lines: "
            f"aggregate by fewer categories, or draw another column"
        )
    if len(panels) > MAX_PANELS:
        raise ToolError(
            f"{panel_by!r} has {len(panels)} values; a chart holds at most {MAX_PANELS} panels"
        )

    figure, axes = _figure(len(panels))
    drawn = _draw_lines(
        axes, table, x, y, panel_by=panel_by, panels=panels, line_by=line_by, lines=lines
    )
    if line_by:
        _legend(figure, axes, [str(v) for v in lines], _label(line_by))
    default = _by(y, [x, *keys])
    path = _save_figure(ctx, figure, title or _sentence(default), filename, default)
    result: dict[str, Any] = {"file": str(path), "chart": "line", "series": drawn}
    if panel_by:
        result["panels"] = len(panels)
        result["panel_by"] = panel_by
    if line_by:
        result["color"] = line_by
    if summed:
        result["summed"] = f"rows sharing {', '.join([x, *keys])} were summed"
    return result | {"points": len(table)}


@tool(cache=False)
def plot_bar(
    ctx: ToolContext,
    x: str,
    y: str,
    color: str | None = None,
    data: str = "data",
    title: str | None = None,
    filename: str | None = None,
) -> dict[str, Any]:
    """Draw a bar chart (PNG) comparing a metric across categories or periods; with `color`,
    one bar per category of it in each group. Rows sharing an x (and color) are summed.
    Categories are ordered largest first, periods in time order.

    Args:
        x: The column of the bars' labels, e.g. "region" or a monthly "date".
        y: The numeric column giving the bars' heights, e.g. "revenue".
        color: A category column to split each bar by, e.g. "channel".
        data: The table to read.
        title: The chart's title; by default made from the columns.
        filename: The PNG's file name; by default made from the columns.
    """
    frame = read_frame(ctx, data)
    color = color if color and color != x else None
    require_columns(frame, [x, y, *([color] if color else [])])
    require_numeric(frame, y, "a bar chart")
    table = frame[list(dict.fromkeys([x, y, *([color] if color else [])]))].copy()
    dated = is_date_like(table[x])
    if dated:
        table[x] = as_dates(frame, x)
    keys = [x, *([color] if color else [])]
    summed = bool(table.duplicated(keys).any())
    table = table.dropna(subset=keys).groupby(keys, observed=True)[y].sum().reset_index()
    if table.empty:
        raise ToolError(f"nothing to draw: {data!r} has no rows with {' and '.join(keys)}")
    positions = _bar_positions(table, x, y, dated)
    groups = _ordered_values(table, color, y) if color else [None]
    if len(positions) > MAX_BARS:
        raise ToolError(
            f"{x!r} has {len(positions)} values; a bar chart holds at most {MAX_BARS}: "
            f"aggregate to a coarser grain, or use plot_line for a long time series"
        )
    if len(groups) > MAX_LINES:
        raise ToolError(
            f"{color!r} has {len(groups)} values; a bar chart splits into at most {MAX_LINES}"
        )

    figure, (ax,) = _figure(1)
    labels = _date_labels(positions) if dated else [str(p) for p in positions]
    _draw_bars(ax, table, x, y, color=color, groups=groups, positions=positions, labels=labels)
    if color:
        _legend(figure, [ax], [str(g) for g in groups], _label(color))
    default = _by(y, keys)
    path = _save_figure(ctx, figure, title or _sentence(default), filename, default)
    result: dict[str, Any] = {"file": str(path), "chart": "bar", "series": len(groups)}
    result["bars"] = len(positions) * len(groups)
    if summed:
        result["summed"] = f"rows sharing {', '.join(keys)} were summed"
    return result


@tool(cache=False)
def plot_histogram(
    ctx: ToolContext,
    column: str,
    bins: Annotated[int, Field(ge=2, le=200)] = 30,
    data: str = "data",
    title: str | None = None,
    filename: str | None = None,
) -> dict[str, Any]:
    """Draw a histogram (PNG): how the values of a numeric column are spread, with its mean
    and median marked.

    Args:
        column: The numeric column, e.g. "revenue".
        bins: How many bars to split the range into.
        data: The table to read.
        title: The chart's title; by default made from the column.
        filename: The PNG's file name; by default made from the column.
    """
    frame = read_frame(ctx, data)
    require_columns(frame, [column])
    require_numeric(frame, column, "a histogram")
    values = frame[column].dropna().astype(float)
    if values.empty:
        raise ToolError(f"column {column!r} of {data!r} has no values")
    figure, (ax,) = _figure(1)
    ax.hist(values.to_numpy(), bins=bins, color=_palette(1)[0], edgecolor="white")
    mean, median = float(values.mean()), float(values.median())
    ax.axvline(mean, color="#d62728", linestyle="--", label=f"mean {mean:,.2f}")
    ax.axvline(median, color="#2ca02c", linestyle=":", label=f"median {median:,.2f}")
    ax.legend(frameon=False)
    _style_axes(ax, None, x_label=column, y_label="rows", x_numbers=True)
    default = f"distribution of {column}"
    path = _save_figure(ctx, figure, title or _sentence(default), filename, default)
    return {"file": str(path), "chart": "histogram", "series": 1, "bins": bins}


def _line_table(frame: pd.DataFrame, x: str, y: str, color: str | None, data: str) -> pd.DataFrame:
    """The rows a line chart draws: x (as dates when it holds them), y, and the category
    columns a layout may split by."""
    require_columns(frame, [x, y, *([color] if color else [])])
    require_numeric(frame, y, "a line chart")
    wanted = [x, y, *([color] if color else []), *_categories(frame, exclude=(x, y))]
    table = frame[list(dict.fromkeys(wanted))].copy()
    if is_date_like(table[x]):
        table[x] = as_dates(frame, x)
    table = table.dropna(subset=[x, y])
    if table.empty:
        raise ToolError(f"nothing to draw: {data!r} has no rows with both {x!r} and {y!r}")
    return table


def _draw_lines(
    axes: list[Axes],
    table: pd.DataFrame,
    x: str,
    y: str,
    *,
    panel_by: str | None,
    panels: list[Any],
    line_by: str | None,
    lines: list[Any],
) -> int:
    """Draw one panel per value of `panel_by` and in it one line per value of `line_by` (a
    single `None` value: no such column); how many lines were drawn."""
    palette = _palette(len(lines))
    drawn = 0
    columns = 1 if len(panels) == 1 else 2
    for index, (ax, panel) in enumerate(zip(axes, panels, strict=True)):
        part = table if panel is None else table[table[panel_by] == panel]
        for i, line in enumerate(lines):
            points = part if line is None else part[part[line_by] == line]
            if points.empty:
                continue
            points = points.sort_values(x)
            ax.plot(
                points[x],
                points[y],
                label=y if line is None else str(line),
                color=palette[i],
                linewidth=1.0 if len(points) > 120 else 1.6,
                marker="o" if len(points) <= 36 else None,
                markersize=3,
            )
            drawn += 1
        if panel is not None:
            ax.set_title(f"{_label(panel_by or '')}: {panel}", fontsize=10)
        # Axis labels on the outer panels only; dates under every panel with none below it.
        bottom = index + columns >= len(panels)
        _style_axes(
            ax, table[x], x_label=x if bottom else "", y_label=y if index % columns == 0 else ""
        )
        if bottom:
            ax.tick_params(axis="x", labelbottom=True)
    return drawn


def _bar_positions(table: pd.DataFrame, x: str, y: str, dated: bool) -> list[Any]:
    """The bars' x values in order: periods and numbers in theirs, categories largest first."""
    pd = import_pandas()
    if dated:
        return list(pd.DatetimeIndex(table[x].unique()).sort_values())
    if is_number(table[x]):
        return sorted(table[x].unique().tolist())
    return _ordered_values(table, x, y)


def _draw_bars(
    ax: Axes,
    table: pd.DataFrame,
    x: str,
    y: str,
    *,
    color: str | None,
    groups: list[Any],
    positions: list[Any],
    labels: list[str],
) -> None:
    """Draw one bar per value of `color` (a single `None` value: no such column) at each
    position along x, under its label."""
    palette = _palette(len(groups))
    width = 0.8 / len(groups)
    for i, group in enumerate(groups):
        part = table if group is None else table[table[color] == group]
        heights = part.set_index(x)[y].reindex(positions).fillna(0.0)
        offsets = [p - 0.4 + width * (i + 0.5) for p in range(len(positions))]
        bars = ax.bar(offsets, heights.to_numpy(), width=width, color=palette[i], label=str(group))
        if len(positions) * len(groups) <= 12:
            ax.bar_label(bars, labels=[_short_number(v) for v in heights], fontsize=8, padding=2)
    ax.set_xticks(range(len(positions)), labels)
    if len(positions) > 6 or max(len(s) for s in labels) > 10:
        ax.tick_params(axis="x", labelrotation=35)
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
    _style_axes(ax, None, x_label=x, y_label=y)


def _categories(frame: pd.DataFrame, exclude: Iterable[str]) -> list[str]:
    """Columns of labels (text, categories, flags) that are not dates, in the frame's order."""
    skip = set(exclude)
    return [
        str(c)
        for c in frame.columns
        if c not in skip and not is_number(frame[c]) and not is_date_like(frame[c])
    ]


def _layout(table: pd.DataFrame, x: str, color: str | None) -> tuple[str | None, str | None, bool]:
    """How a line chart splits: (panel column, line column, whether repeats are summed)."""
    lines = [color] if color else []
    if not table.duplicated([x, *lines]).any():
        return None, color, False
    others = [c for c in _categories(table, exclude=(x, color or x)) if c != color]
    split = [*lines, *others]
    if len(split) <= 2 and others and not table.duplicated([x, *split]).any():
        return (split[0], split[1], False) if len(split) == 2 else (None, split[0], False)
    return None, color, True


def _ordered_values(table: pd.DataFrame, column: str, y: str) -> list[Any]:
    """A column's distinct values, largest total of y first (the legend's order)."""
    totals = table.groupby(column, observed=True, sort=False)[y].sum()
    return list(totals.sort_values(ascending=False, kind="stable").index)


def _palette(n: int) -> list[Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(max(n, 1))]


def _figure(panels: int) -> tuple[Figure, list[Axes]]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ToolError(f"the charts need matplotlib: {INSTALL}") from None
    columns = 1 if panels == 1 else 2
    rows = math.ceil(panels / columns)
    size = (10.0, 5.5) if panels == 1 else (12.0, 0.8 + 3.0 * rows)
    figure = Figure(figsize=size, dpi=100, layout="constrained")
    FigureCanvasAgg(figure)  # the headless raster canvas, attached to this figure alone
    grid = figure.subplots(rows, columns, squeeze=False, sharex=True, sharey=True)
    axes = list(grid.ravel())
    for spare in axes[panels:]:
        spare.set_visible(False)
    return figure, axes[:panels]


def _style_axes(
    ax: Axes, x_values: pd.Series | None, *, x_label: str, y_label: str, x_numbers: bool = False
) -> None:
    from matplotlib import dates as mdates
    from matplotlib.ticker import FuncFormatter

    pd = import_pandas()
    ax.set_xlabel(_label(x_label))
    ax.set_ylabel(_label(y_label))
    ax.grid(axis="y", alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)
    numbers = FuncFormatter(lambda v, _: _short_number(v))
    ax.yaxis.set_major_formatter(numbers)
    if x_numbers:
        ax.xaxis.set_major_formatter(numbers)
    if x_values is not None and pd.api.types.is_datetime64_any_dtype(x_values):
        # matplotlib.dates has no type information yet (matplotlib ships no dates.pyi).
        locator = mdates.AutoDateLocator(minticks=4, maxticks=10)  # type: ignore[no-untyped-call]
        ax.xaxis.set_major_locator(locator)
        concise = mdates.ConciseDateFormatter(locator)  # type: ignore[no-untyped-call]
        ax.xaxis.set_major_formatter(concise)


def _legend(figure: Figure, axes: list[Axes], order: list[str], title: str) -> None:
    # One legend for all panels (a panel may lack a line), outside them so it hides none.
    handles: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    labels = [label for label in order if label in handles]
    figure.legend(
        [handles[label] for label in labels],
        labels,
        title=title,
        loc="outside right upper",
        frameon=False,
    )


def _save_figure(
    ctx: ToolContext, figure: Figure, title: str, filename: str | None, default: str
) -> Path:
    figure.suptitle(title, fontsize=13)
    path = output_path(ctx, filename, default, ".png")
    figure.savefig(path, format="png")
    return path


def _label(column: str) -> str:
    return column.replace("_", " ")


def _by(y: str, columns: list[str]) -> str:
    """A chart's default title: "revenue by date, region and product_category"."""
    listed = columns[0] if len(columns) == 1 else f"{', '.join(columns[:-1])} and {columns[-1]}"
    return f"{y} by {listed}"


def _sentence(text: str) -> str:
    text = _label(text)
    return text[:1].upper() + text[1:]


def _short_number(value: float) -> str:
    """A number for an axis or a bar: 950 · 12.5k · 3.4M."""
    size = abs(value)
    if size >= 1e9:
        return f"{value / 1e9:.3g}B"
    if size >= 1e6:
        return f"{value / 1e6:.3g}M"
    if size >= 1e3:
        return f"{value / 1e3:.3g}k"
    if size >= 100 or value == int(value):
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _date_labels(moments: list[Any]) -> list[str]:
    """Dates as labels as short as their grain allows: 2024, 2024-03, 2024-03-18."""
    times = [m.to_pydatetime() if hasattr(m, "to_pydatetime") else m for m in moments]
    if all(iso(t) == t.date().isoformat() for t in times):
        if all((t.month, t.day) == (1, 1) for t in times):
            return [f"{t.year}" for t in times]
        if all(t.day == 1 for t in times):
            return [t.strftime("%Y-%m") for t in times]
        return [t.date().isoformat() for t in times]
    return [iso(t) for t in times]
