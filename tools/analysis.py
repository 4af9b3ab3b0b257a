"""Data analysis: load a table, reshape it, describe it, chart it, save it.

The tools share pandas DataFrames through the run's artifacts (`ToolContext.artifacts`), by
name: `load_dataset` keeps the table it reads as "data"; a tool that reads a frame takes
`data` (the name to read); a tool that makes one takes `name` (the name to keep it under).
Every tool answers with compact JSON, never a whole frame: a frame is described as
`{"frame", "rows", "columns": {column: dtype}, "head": [up to 5 rows]}`, a file as
`{"file": absolute path, …}`. Charts (PNG) and tables go into the run's output folder, beside
its trajectory.

pandas, matplotlib and pyarrow are the `analysis` extra; they are imported when a tool runs,
so loading the workspace stays fast and works without them (a call then says what to
install).

The chart tools (`plot_line`, `plot_bar`, `plot_histogram`) and the frame helpers every tool
here uses are in `agentrt.analysis`, which other workspaces' packs share; this pack offers
the charts by binding them at its module level.

None of these tools is cached by the executor's duplicate guard: each reads or replaces
frames that other calls change, so an identical call can rightly give another result (parse
after a reload, plot after a re-aggregation).

The time-grain policy (`aggregate` with `grain="unknown"`, issue 6 point 5) is in
`resolve_grain`.
"""

from __future__ import annotations

import math
import re
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from agentrt import ToolContext, ToolError, tool
from agentrt.analysis import charts
from agentrt.analysis.frames import (
    INSTALL,
    TABLE_SUFFIXES,
    as_dates,
    import_pandas,
    is_date_like,
    is_number,
    iso,
    numeric_columns,
    output_path,
    parse_dates,
    read_frame,
    remember_source,
    require_columns,
    require_numeric,
)

if TYPE_CHECKING:
    import pandas as pd

WORKSPACE = Path(__file__).resolve().parent.parent
DATA_DIR = WORKSPACE / "data"
"""Where dataset names resolve: `sales` is `data/sales.csv`."""

AggName = Literal["sum", "mean", "count", "min", "max", "median"]
GrainName = Literal["day", "week", "month", "quarter", "year", "unknown"]
GRAINS = ("day", "week", "month", "quarter", "year")
"""Finest first."""

HEAD_ROWS = 5
PREVIEW_ROWS = 20

_NATIVE_GAPS = (("day", 6.5), ("week", 27), ("month", 85), ("quarter", 360), ("year", math.inf))
"""A grain, and the median gap in days between distinct dates below which data is that fine."""
_SQLITE_MAGIC = b"SQLite format 3\x00"
_PARQUET_MAGIC = b"PAR1"


# --- loading -----------------------------------------------------------------------------


@tool(cache=False)
def load_dataset(
    ctx: ToolContext, source: str = "sales", table: str | None = None, name: str = "data"
) -> dict[str, Any]:
    """Load a table (CSV, Parquet, or a SQLite table) for the other analysis tools. Start here.

    The result lists the columns with their types, the first rows, the first and last
    date of every date column, and the values of every category column (text columns with
    at most 20 distinct values).

    Args:
        source: A dataset name such as "sales" (the workspace's data/ folder), or the path of
            a .csv, .parquet or SQLite file.
        table: The table to read from a SQLite file (not needed when it has only one).
        name: The name to keep the loaded table under.
    """
    pd = import_pandas()
    table = table or None
    path = _resolve_source(source)
    kind = _file_kind(path)
    if table is not None and kind != "sqlite":
        raise ToolError(f"{path.name} is a {kind} file: table is only for SQLite files")
    try:
        if kind == "sqlite":
            table, frame = _read_sqlite(path, table)
        elif kind == "parquet":
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path, sep="\t" if path.suffix.lower() == ".tsv" else ",")
    except ToolError:
        raise
    except ImportError as exc:
        raise ToolError(f"reading {kind} needs {exc.name or 'pyarrow'}: {INSTALL}") from None
    except Exception as exc:
        raise ToolError(f"cannot read {path} as {kind}: {exc}") from None
    ctx.artifacts[name] = frame
    remember_source(ctx, source, name)
    result = _describe(name, frame) | {"source": str(path), "format": kind}
    if table is not None:
        result["table"] = table
    result["date_columns"] = _date_columns(frame)
    result["categories"] = _categories(frame, result["date_columns"])
    return result


@tool(cache=False)
def parse_datetime(
    ctx: ToolContext,
    column: str,
    data: str = "data",
    name: str | None = None,
    format: str | None = None,
) -> dict[str, Any]:
    """Turn a column of text (or numbers like 20230131) into dates, for time-based steps.

    Values that cannot be read become empty; the result counts them and shows a few.

    Args:
        column: The column holding the dates, e.g. "date".
        data: The table to read.
        name: The name to keep the result under; by default it replaces `data`.
        format: A strftime format such as "%d/%m/%Y" when the dates are not ISO (2023-01-31);
            by default it is inferred.
    """
    frame = read_frame(ctx, data)
    require_columns(frame, [column])
    format = format or None
    source = frame[column]
    parsed = parse_dates(source, column, format)
    failed = parsed.isna() & source.notna()
    if source.notna().any() and parsed.notna().sum() == 0:
        examples = ", ".join(repr(str(v)) for v in source[failed].head(3))
        how = f"in format {format!r}" if format else "(none could be read)"
        raise ToolError(
            f"no value of column {column!r} is a date {how}, e.g. {examples}; "
            f"formats use strftime codes, e.g. '%Y-%m-%d' or '%d/%m/%Y'"
        )
    result = frame.copy()
    result[column] = parsed
    target = name or data
    ctx.artifacts[target] = result
    out = _describe(target, result) | {"column": column} | _time_range(parsed)
    out["unparsed"] = int(failed.sum())
    if out["unparsed"]:
        out["unparsed_examples"] = [str(v) for v in source[failed].head(3)]
    return out


# --- reshaping -----------------------------------------------------------------------------


@tool(cache=False)
def aggregate(
    ctx: ToolContext,
    metrics: list[str],
    group_by: list[str] = [],  # noqa: B006 - never mutated; the schema's default must be []
    agg: AggName = "sum",
    time_column: str | None = None,
    grain: GrainName | None = None,
    data: str = "data",
    name: str = "aggregated",
) -> dict[str, Any]:
    """Group rows and combine the metric columns: totals, averages or counts per group, and
    per period when a time column is given (e.g. revenue per region per month).

    grain="unknown" picks the period from the dates' span: under 90 days → day, 90 to 365
    days → week, over 365 days → month (never finer than the data itself, so monthly data
    stays monthly). The result says which grain was used. Weeks start on Monday; each period
    is labelled by its first day.

    Args:
        metrics: The numeric columns to combine, e.g. ["revenue"].
        group_by: Category columns to group by, e.g. ["region", "product_category"]; [] for
            one overall row (or one row per period).
        agg: How to combine each group's values.
        time_column: A date column to group by too, truncated to `grain`.
        grain: The period for time_column; "unknown" to choose from the data (or nothing, with
            no time_column); none to group by the exact dates.
        data: The table to read.
        name: The name to keep the result under.
    """
    pd = import_pandas()
    frame = read_frame(ctx, data)
    time_column = time_column or None
    if not metrics:
        raise ToolError("metrics is empty: name the columns to combine, e.g. ['revenue']")
    # "unknown" says no period was named: with no time column there is nothing to choose. The
    # 1.5B added it to a plain total, and the plan failed twice on it (issue 24).
    if grain not in (None, "unknown") and time_column is None:
        raise ToolError(f"grain={grain!r} needs time_column: the date column, e.g. 'date'")
    groups = list(dict.fromkeys(c for c in group_by if c != time_column))
    require_columns(frame, [*metrics, *groups, *([time_column] if time_column else [])])
    if clash := [m for m in metrics if m in groups or m == time_column]:
        raise ToolError(f"{clash[0]!r} is both a metric and a grouping column")
    if agg != "count":
        for metric in metrics:
            require_numeric(frame, metric, f"agg={agg!r}")
    if frame.empty:
        raise ToolError(f"the table {data!r} has no rows")

    extra: dict[str, Any] = {}
    work = frame[[*groups, *metrics]].copy()
    keys = groups
    if time_column is not None:
        times = as_dates(frame, time_column)
        used = grain
        if grain == "unknown":
            used, reason, span = resolve_grain(times)
            extra |= {"grain_reason": reason, "span_days": span}
        work.insert(0, time_column, truncate(times, used) if used else times)
        keys = [time_column, *groups]
        extra = {"grain": used or "exact"} | extra

    if keys:
        result = work.groupby(keys, observed=True, sort=True)[metrics].agg(agg).reset_index()
        missing = int(work[keys].isna().any(axis=1).sum())
        if missing:
            extra["rows_without_group"] = missing
    else:
        result = pd.DataFrame([work[metrics].agg(agg)]).reset_index(drop=True)
    if result.empty:
        raise ToolError(
            f"aggregate made no rows: every row of {data!r} has an empty {', '.join(keys)}"
        )
    ctx.artifacts[name] = result
    if len(metrics) == 1:
        grain_used = extra.get("grain", "exact")
        extra |= _reading(result, keys, metrics[0], time_column, grain_used)
        if agg == "sum" and time_column is None:
            extra |= _shares(result, keys, metrics[0])
    return _describe(name, result) | {"agg": agg, "group_by": groups} | extra


def _reading(
    result: pd.DataFrame, keys: list[str], metric: str, time_column: str | None, grain: str
) -> dict[str, Any]:
    """What a reader of grouped totals looks for first, computed so that no model does the
    arithmetic (the 1.5B misread growth and differences from two rows, issue 24): for two
    rows, the second's difference from the first and its percent change (a later period
    against an earlier one, and for periods whether it went up or down), and how many times
    the smaller the larger is (the ratio a "how many times more" or "A to B" question asks,
    when both are positive), and for two groups that are not periods which is higher; for
    more, the highest and the lowest row and the one furthest from their mean (`_extremes`),
    and each group's change when there are two periods (`_growth`). Rows are labelled by
    their groups, periods as the grain writes them ("2024", "2024-Q3", "2024-03")."""
    values = result[metric]
    if not keys or len(result) < 2 or not values.notna().any():
        return {}
    labels = _labels(result, keys, time_column, grain)
    if len(result) == 2:
        first, second = (_scalar(v) for v in values)
        if first is None or second is None:
            return {}
        change = {"from": labels[0], "to": labels[1], "difference": _scalar(second - first)}
        if time_column is not None and first != second:
            change["direction"] = "up" if second > first else "down"
        if first:
            change["percent"] = round((second - first) / abs(first) * 100, 2)
        if first > 0 and second > 0:
            pair = zip(labels, (first, second), strict=True)
            (low, small), (high, large) = sorted(pair, key=lambda p: p[1])
            change["ratio"] = {"larger": high, "smaller": low, "times": round(large / small, 3)}
        if time_column is not None:
            return {"change": change}
        # Two groups, not periods: "which channel made more?" is answered by the higher one,
        # which the change (in the rows' order) named second (issue 24).
        return {"change": change} | _extremes(values, labels)
    return _growth(result, keys, metric, time_column, grain) | _extremes(values, labels)


def _labels(
    result: pd.DataFrame, keys: list[str], time_column: str | None, grain: str
) -> list[str]:
    """Each row's groups, periods as the grain writes them, joined: "2024-Q3 / East"."""
    return [
        " / ".join(
            period_label(v, grain) if k == time_column else str(_scalar(v))
            for k, v in zip(keys, row, strict=True)
        )
        for row in result[keys].itertuples(index=False, name=None)
    ]


def _shares(result: pd.DataFrame, keys: list[str], metric: str) -> dict[str, Any]:
    """Each group's share of the total in percent, largest first, for totals of groups that
    are all positive: what "what percent of revenue did electronics account for?" asks (the
    1.5B filtered electronics first, and its share was 100 %, issue 24)."""
    values = result[metric]
    if len(result) < 2 or not (values > 0).all():
        return {}
    labels = _labels(result, keys, None, "exact")
    percent = (values / values.sum() * 100).round(2).to_numpy()
    ranked = sorted(zip(labels, percent, strict=True), key=lambda p: -p[1])
    return {"shares": {label: _scalar(share) for label, share in ranked}}


def _extremes(values: pd.Series, labels: list[str]) -> dict[str, Any]:
    """The highest and the lowest of `values` (labelled in order by `labels`; gaps skipped),
    their mean, and the one furthest from it, above or below: "which month deviates most from
    the average month" was the lowest month, and the 1.5B's answer named the highest (issue
    24)."""
    values = values.reset_index(drop=True)
    top, bottom = int(values.idxmax()), int(values.idxmin())
    high, low, mean = float(values.iloc[top]), float(values.iloc[bottom]), float(values.mean())
    far = top if high - mean >= mean - low else bottom
    return {
        "highest": {labels[top]: _scalar(high)},
        "lowest": {labels[bottom]: _scalar(low)},
        "mean": _scalar(mean),
        "furthest": {labels[far]: _scalar(values.iloc[far])},
    }


def _growth(
    result: pd.DataFrame, keys: list[str], metric: str, time_column: str | None, grain: str
) -> dict[str, Any]:
    """Totals of several groups over two periods: each group's change from the first to the
    second, largest percent first (a question of which region grew fastest is answered by
    this, not by the highest cell, issue 24); nothing for other shapes."""
    groups = [k for k in keys if k != time_column]
    if time_column is None or not groups or result[time_column].nunique() != 2:
        return {}
    wide = result.pivot_table(index=groups, columns=time_column, values=metric, aggfunc="sum")
    before, after = wide.columns
    wide = wide[wide[before].notna() & wide[after].notna() & (wide[before] != 0)]
    percent = ((wide[after] - wide[before]) / wide[before].abs() * 100).sort_values(ascending=False)
    rows = [
        {
            "group": " / ".join(
                str(_scalar(v)) for v in (key if isinstance(key, tuple) else (key,))
            ),
            "difference": _scalar(wide.at[key, after] - wide.at[key, before]),
            "percent": round(float(change), 2),
        }
        for key, change in percent.items()
    ]
    if not rows:
        return {}
    return {
        "growth": {
            "from": period_label(before, grain),
            "to": period_label(after, grain),
            "by": " / ".join(groups),
            "rows": rows,
        }
    }


def period_label(when: Any, grain: str) -> str:
    """A period's first day as its grain writes it: "2024", "2024-Q3", "2024-03", else the
    day "2024-03-04"."""
    day = str(_scalar(when))[:10]
    if grain == "year":
        return day[:4]
    if grain == "quarter":
        return f"{day[:4]}-Q{(int(day[5:7]) - 1) // 3 + 1}"
    return day[:7] if grain == "month" else day


@tool(cache=False)
def segment_metric(
    ctx: ToolContext,
    metric: str,
    by: str,
    agg: AggName = "sum",
    data: str = "data",
    name: str = "segments",
) -> dict[str, Any]:
    """Split a metric by a category and compare the parts: each segment's value and, for sums
    and counts, its share of the total in percent, largest first (e.g. revenue by region).

    Args:
        metric: The numeric column to measure, e.g. "revenue".
        by: The category column whose values are the segments, e.g. "region".
        agg: How to combine each segment's values.
        data: The table to read.
        name: The name to keep the result (columns: by, metric, share) under.
    """
    frame = read_frame(ctx, data)
    require_columns(frame, [metric, by])
    if metric == by:
        raise ToolError("metric and by are the same column: split a metric by another column")
    if agg != "count":
        require_numeric(frame, metric, f"agg={agg!r}")
    values = frame.groupby(by, observed=True)[metric].agg(agg).sort_values(ascending=False)
    if values.empty:
        raise ToolError(f"column {by!r} of {data!r} has no values to split by")
    result = values.reset_index()
    out: dict[str, Any] = {"metric": metric, "by": by, "agg": agg, "segments": len(result)}
    if agg in ("sum", "count"):
        total = values.sum()
        result["share"] = (values.to_numpy() / total * 100).round(2) if total else math.nan
        out["total"] = _scalar(total)
        top = result.head(PREVIEW_ROWS)
        out["shares"] = {str(k): _scalar(v) for k, v in zip(top[by], top["share"], strict=True)}
    top = result.head(PREVIEW_ROWS)
    out["values"] = {str(k): _scalar(v) for k, v in zip(top[by], top[metric], strict=True)}
    ctx.artifacts[name] = result
    return _describe(name, result) | out


MAX_CATEGORIES = 20
"""A text column with at most this many distinct values is a category: `load_dataset` lists
them, and `filter_rows` names them when asked for one the data does not hold."""

_PERIOD = re.compile(
    r"^(?P<year>\d{4})(?:-(?:[Hh](?P<half>[12])|[Qq](?P<quarter>[1-4])"
    r"|(?P<month>0[1-9]|1[0-2])(?:-(?P<day>\d{2}))?))?$"
)


@tool(cache=False)
def filter_rows(
    ctx: ToolContext,
    where: dict[str, str | list[str]] = {},  # noqa: B006 - never mutated; the schema's default must be {}
    period: str | None = None,
    start: str | None = None,
    end: str | None = None,
    date_column: str | None = None,
    data: str = "data",
    name: str | None = None,
) -> dict[str, Any]:
    """Keep only the rows a question is about: category columns equal to given values, and/or
    dates in a period (e.g. only 2024, only Electronics and Clothing). Filter before grouping.

    Args:
        where: Category column → the value, or values, to keep, e.g.
            {"region": "East"} or {"product_category": ["Electronics", "Clothing"]}.
        period: Dates to keep: a year "2024", a half "2024-H2", a quarter "2024-Q3", a
            month "2024-03", a day "2024-03-15" or days "2024-05-01..2024-05-15".
        start: The first date to keep, e.g. "2024-01-01" (with or instead of `end`).
        end: The last date to keep, e.g. "2024-06-30".
        date_column: The date column `period`, `start` and `end` apply to; by default the
            table's only date column.
        data: The table to read.
        name: The name to keep the result under; by default it replaces `data`.
    """
    pd = import_pandas()
    frame = read_frame(ctx, data)
    where = where or {}
    period, start, end = period or None, start or None, end or None
    if not where and period is None and start is None and end is None:
        raise ToolError("nothing to filter by: give where (column → values) or a period")
    keep = pd.Series(True, index=frame.index)
    kept: dict[str, Any] = {}
    for column, wanted in where.items():
        column = _column_named(frame, column)
        values = [wanted] if isinstance(wanted, str) else list(wanted)
        if not values:
            raise ToolError(f"where[{column!r}] is empty: give the value(s) to keep")
        present = [str(v) for v in frame[column].dropna().unique()]
        by_lower = {v.lower(): v for v in present}
        spelled = []
        for value in values:
            right = value if value in present else by_lower.get(str(value).strip().lower())
            if right is None:
                raise ToolError(
                    f"column {column!r} has no value {value!r}; its values are: {_listing(present)}"
                )
            spelled.append(right)
        keep &= frame[column].astype(str).isin(spelled)
        kept[column] = spelled
    dates_filtered: dict[str, Any] = {}
    if period is not None or start is not None or end is not None:
        column = _date_column(frame, date_column)
        times = as_dates(frame, column)
        if getattr(times.dt, "tz", None) is not None:
            times = times.dt.tz_localize(None)
        low, high = period_bounds(period) if period is not None else (None, None)
        if start is not None:
            low = max(filter(None, [low, _day(start, "start")]))
        if end is not None:
            high = min(filter(None, [high, _day(end, "end") + timedelta(days=1)]))
        if low is not None:
            keep &= times >= pd.Timestamp(low)
        if high is not None:
            keep &= times < pd.Timestamp(high)
        if not (keep & times.notna()).any() and not where:
            first, last = times.min(), times.max()
            raise ToolError(
                f"no row of {data!r} has a {column!r} in that period: its dates run from "
                f"{_scalar(first)} to {_scalar(last)}"
            )
        dates_filtered = {"date_column": column, "from": iso(low) if low else None}
        dates_filtered["until"] = iso(high - timedelta(days=1)) if high else None
    result = frame[keep]
    if result.empty:
        raise ToolError(
            f"no row of {data!r} matches all of these filters together "
            f"({_filter_words(kept, period, start, end)})"
        )
    target = name or data
    ctx.artifacts[target] = result
    out = _describe(target, result) | {"kept": len(result), "of": len(frame)}
    if kept:
        out["where"] = kept
    return out | dates_filtered


def period_bounds(period: str) -> tuple[datetime, datetime]:
    """The first moment of a period and the first moment after it: a year "2024", a half
    "2024-H2", a quarter "2024-Q3", a month "2024-03", a day "2024-03-15" or days from one
    to another "2024-05-01..2024-05-15"."""
    if ".." in period:
        first, _, last = period.strip().partition("..")
        low, high = _day(first, "period"), _day(last, "period")
        if high < low:
            raise ToolError(f"period {period!r} ends before it starts")
        return low, high + timedelta(days=1)
    match = _PERIOD.match(period.strip())
    if match is None:
        raise ToolError(
            f"period {period!r} is not a year, half, quarter, month or day: write e.g. '2024', "
            f"'2024-H2', '2024-Q3', '2024-03', '2024-03-15' or '2024-05-01..2024-05-15'"
        )
    year = int(match["year"])
    if match["half"]:
        low, months = datetime(year, 6 * int(match["half"]) - 5, 1), 6
    elif match["quarter"]:
        first = 3 * int(match["quarter"]) - 2
        low, months = datetime(year, first, 1), 3
    elif match["day"]:
        low = _day(period.strip(), "period")
        return low, low + timedelta(days=1)
    elif match["month"]:
        low, months = datetime(year, int(match["month"]), 1), 1
    else:
        low, months = datetime(year, 1, 1), 12
    after = low.month - 1 + months
    return low, datetime(low.year + after // 12, after % 12 + 1, 1)


def _day(text: str, what: str) -> datetime:
    try:
        return datetime.fromisoformat(text.strip()[:10])
    except ValueError:
        raise ToolError(f"{what} {text!r} is not a date: write it as YYYY-MM-DD") from None


def _column_named(frame: pd.DataFrame, column: str) -> str:
    """`column` as the frame spells it (any casing); a column it lacks is a `ToolError`."""
    by_lower = {str(c).lower(): str(c) for c in frame.columns}
    right = column if column in frame.columns else by_lower.get(column.strip().lower())
    if right is None:
        require_columns(frame, [column])  # raises, listing the columns
    return right or column


def _date_column(frame: pd.DataFrame, given: str | None) -> str:
    if given:
        return _column_named(frame, given)
    dates = list(_date_columns(frame))
    if len(dates) != 1:
        found = ", ".join(dates) if dates else "none"
        raise ToolError(f"name the date_column to filter by (the date columns: {found})")
    return dates[0]


def _listing(values: list[str]) -> str:
    shown = sorted(values)[:MAX_CATEGORIES]
    more = len(values) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _filter_words(
    kept: dict[str, Any], period: str | None, start: str | None, end: str | None
) -> str:
    words = [f"{c} in {', '.join(v)}" for c, v in kept.items()]
    words += [f"{k} {v}" for k, v in (("period", period), ("from", start), ("until", end)) if v]
    return "; ".join(words)


# --- statistics ----------------------------------------------------------------------------


STAT_PERCENTILES = (0.1, 0.25, 0.5, 0.75, 0.9)
"""The percentiles `compute_summary_stats` gives: the quartiles and the deciles at each end,
which a question about a distribution's spread or its tails asks for as often."""


@tool(cache=False)
def compute_summary_stats(
    ctx: ToolContext,
    columns: list[str] | None = None,
    data: str = "data",
    time_column: str | None = None,
    per: GrainName | None = None,
) -> dict[str, Any]:
    """Descriptive statistics per column: count, mean, std, min, the 10th, 25th, 50th
    (median), 75th and 90th percentiles, the interquartile range (iqr), max, and how the
    values are spread (skew). Text columns get their distinct values and the most frequent
    one; date columns their first and last date. With `per`, the numeric columns are first
    totalled per period of `time_column` (the median daily revenue: per="day").

    Args:
        columns: The columns to describe; by default every numeric column.
        data: The table to read.
        time_column: The date column whose periods `per` totals by.
        per: Describe the totals per this period ("day", "week", "month", "quarter",
            "year") rather than the rows; "unknown" or none: the rows.
    """
    pd = import_pandas()
    frame = read_frame(ctx, data)
    if per not in (None, "unknown"):
        frame = _per_period(frame, time_column, per)
    if columns:
        require_columns(frame, columns)
        chosen = list(dict.fromkeys(columns))
    else:
        chosen = numeric_columns(frame)
        if not chosen:
            raise ToolError(f"{data!r} has no numeric columns: {_dtypes(frame)}")
    stats: dict[str, Any] = {}
    for column in chosen:
        series = frame[column]
        entry: dict[str, Any] = {"missing": int(series.isna().sum())}
        if is_number(series):
            described = series.describe(percentiles=STAT_PERCENTILES)
            entry |= {str(k): _scalar(v) for k, v in described.items()}
            entry["iqr"] = _scalar(described["75%"] - described["25%"])
            entry["count"] = int(series.count())
            skew = _scalar(series.skew())
            entry["skew"] = skew
            entry["shape"] = _shape(skew)
        elif pd.api.types.is_datetime64_any_dtype(series):
            entry |= {"count": int(series.count())} | _time_range(series)
        else:
            counts = series.value_counts()
            entry |= {"count": int(series.count()), "unique": len(counts)}
            if len(counts):
                entry |= {"top": _scalar(counts.index[0]), "freq": int(counts.iloc[0])}
        stats[column] = entry
    per_period = {"per": per} if per not in (None, "unknown") else {}
    return {"frame": data, "rows": len(frame), **per_period, "stats": stats}


def _per_period(frame: pd.DataFrame, time_column: str | None, grain: str) -> pd.DataFrame:
    """The numeric columns of `frame` totalled per `grain` period of `time_column` (periods
    with no rows are not zeros: they are left out)."""
    if time_column is None:
        raise ToolError(f"per={grain!r} needs time_column: the date column, e.g. 'date'")
    require_columns(frame, [time_column])
    numeric = [c for c in numeric_columns(frame) if c != time_column]
    periods = truncate(as_dates(frame, time_column), grain)
    return frame[numeric].groupby(periods.rename(time_column)).sum().reset_index()


@tool(cache=False)
def compute_correlation(
    ctx: ToolContext, columns: list[str] | None = None, data: str = "data"
) -> dict[str, Any]:
    """How numeric columns move together: the Pearson correlation of every pair (-1 to 1),
    strongest pairs first.

    Args:
        columns: Two or more numeric columns; by default every numeric column.
        data: The table to read.
    """
    frame = read_frame(ctx, data)
    if columns:
        require_columns(frame, columns)
        chosen = list(dict.fromkeys(columns))
        for column in chosen:
            require_numeric(frame, column, "a correlation")
    else:
        chosen = numeric_columns(frame)
    if len(chosen) < 2:
        raise ToolError(
            f"a correlation needs two numeric columns; {data!r} has "
            f"{', '.join(numeric_columns(frame)) or 'none'}"
        )
    matrix = frame[chosen].astype(float).corr(method="pearson")
    pairs = [
        {"a": a, "b": b, "r": _scalar(matrix.loc[a, b])}
        for i, a in enumerate(chosen)
        for b in chosen[i + 1 :]
    ]
    pairs.sort(key=lambda p: -abs(p["r"]) if p["r"] is not None else 0.0)
    return {
        "frame": data,
        "rows": len(frame),
        "method": "pearson",
        "columns": chosen,
        "matrix": {a: {b: _scalar(matrix.loc[a, b]) for b in chosen} for a in chosen},
        "pairs": pairs[:10],
    }


@tool(cache=False)
def detect_anomalies(
    ctx: ToolContext,
    metric: str,
    data: str = "data",
    method: Literal["zscore", "iqr"] = "zscore",
    threshold: Annotated[float, Field(gt=0)] = 3.0,
    name: str = "anomalies",
    time_column: str | None = None,
    per: GrainName | None = None,
) -> dict[str, Any]:
    """Find rows whose metric is unusually high or low. The flagged rows are kept with a
    `score` column, most unusual first. With `per`, the metric is first totalled per period
    of `time_column` (an unusual day: per="day"), and the periods are checked.

    Args:
        metric: The numeric column to check, e.g. "revenue".
        data: The table to read.
        method: "zscore": more than `threshold` standard deviations from the mean. "iqr":
            more than `threshold` interquartile ranges outside the middle half.
        threshold: How far counts as unusual: 3 is strict, 2 (or 1.5 for iqr) looser.
        name: The name to keep the flagged rows under.
        time_column: The date column whose periods `per` totals by.
        per: Check the totals per this period ("day", "week", "month", "quarter", "year")
            rather than the rows; "unknown" or none: the rows.
    """
    frame = read_frame(ctx, data)
    require_columns(frame, [metric])
    require_numeric(frame, metric, "anomaly detection")
    if per not in (None, "unknown"):
        frame = _per_period(frame, time_column, per)
    values = frame[metric].astype(float)
    valid = values.dropna()
    if valid.empty:
        raise ToolError(f"column {metric!r} of {data!r} has no values")
    out: dict[str, Any] = {"metric": metric, "method": method, "threshold": threshold}
    if per not in (None, "unknown"):
        # The extremes too: the lowest day is asked for as "unusually low" and is seldom as
        # far below the mean as a spike is above it.
        when = frame[time_column]
        labels = [period_label(when[i], per) for i in valid.index]
        out |= {"per": per} | _extremes(valid, labels)
    if method == "zscore":
        mean, std = float(valid.mean()), float(valid.std())
        spread = std if std > 0 and math.isfinite(std) else 0.0
        score = (values - mean) / spread if spread else values * 0.0
        low, high = mean - threshold * spread, mean + threshold * spread
        out |= {"mean": _scalar(mean), "std": _scalar(std)}
    else:
        q1, q3 = float(valid.quantile(0.25)), float(valid.quantile(0.75))
        spread = q3 - q1
        # Distance outside the middle half, in interquartile ranges (0 inside it).
        beyond = values.where(values > q3, 0.0) - q3 * (values > q3)
        below = values.where(values < q1, 0.0) - q1 * (values < q1)
        score = (beyond + below) / spread if spread else values * 0.0
        low, high = q1 - threshold * spread, q3 + threshold * spread
        out |= {"q1": _scalar(q1), "q3": _scalar(q3)}
    flagged = score.abs() > threshold
    column = "score" if "score" not in frame.columns else "anomaly_score"
    result = frame[flagged].assign(**{column: score[flagged].round(2)})
    result = result.sort_values(column, key=abs, ascending=False)
    ctx.artifacts[name] = result
    out |= {"checked": len(valid), "anomalies": len(result)}
    out["bounds"] = {"low": _scalar(low), "high": _scalar(high)}
    if not spread:
        out["note"] = f"every value of {metric!r} is about the same: nothing stands out"
    return _describe(name, result) | out


# --- charts --------------------------------------------------------------------------------

# Offered by this pack as every `Tool` at its module level is. Bound here, not imported at the
# top, because a catalog lists a pack's tools in the order its module binds them.
plot_line = charts.plot_line
plot_bar = charts.plot_bar
plot_histogram = charts.plot_histogram


# --- saving --------------------------------------------------------------------------------


@tool(cache=False)
def save_dataframe(
    ctx: ToolContext,
    data: str = "data",
    format: Literal["csv", "markdown", "parquet"] = "csv",
    filename: str | None = None,
) -> dict[str, Any]:
    """Write a table to a file (the table the user gets) and show its first rows.

    Args:
        data: The table to write, e.g. "aggregated".
        format: "csv" for spreadsheets, "markdown" for reading, "parquet" for other tools.
        filename: The file's name; by default the table's name.
    """
    frame = read_frame(ctx, data)
    suffix = {"csv": ".csv", "markdown": ".md", "parquet": ".parquet"}[format]
    path = output_path(ctx, filename, data, suffix)
    try:
        if format == "csv":
            frame.to_csv(path, index=False)
        elif format == "markdown":
            path.write_text(markdown_table(frame) + "\n", encoding="utf-8")
        else:
            frame.to_parquet(path, index=False)
    except ImportError as exc:
        raise ToolError(f"writing {format} needs {exc.name or 'pyarrow'}: {INSTALL}") from None
    except (ValueError, TypeError) as exc:  # e.g. a column Parquet cannot hold
        raise ToolError(f"cannot write {data!r} as {format}: {exc}") from None
    result: dict[str, Any] = {
        "file": str(path),
        "format": format,
        "frame": data,
        "rows": len(frame),
        "columns": [str(c) for c in frame.columns],
    }
    if format != "parquet":
        preview = markdown_table(frame.head(PREVIEW_ROWS))
        if len(frame) > PREVIEW_ROWS:
            preview += f"\n… {len(frame) - PREVIEW_ROWS} more rows in the file"
        result["preview"] = preview
    return result


# --- the time-grain policy -----------------------------------------------------------------


def resolve_grain(times: pd.Series) -> tuple[str, str, int]:
    """The grain for `grain="unknown"`: (grain, the reason in words, span in days).

    Issue 6 point 5 reads "< 90 days or > 60 points daily; 90–365 days weekly; > 365 days
    monthly". The span (last date − first date) decides: under 90 days → day, 90 to 365 days
    inclusive → week, over 365 → month. "> 60 points daily" is read as the density side of
    the day rule: data with many points a day (hourly, by the minute) also goes to day, which
    is the finest grain there is, so it needs no rule of its own. Density is used the other
    way too: the grain is never finer than the data's own spacing (the median gap between
    distinct timestamps), so weekly data over 60 days stays weekly and monthly data over 200
    days stays monthly, instead of being cut into periods that are mostly empty.
    """
    pd = import_pandas()
    distinct = pd.Series(times.dropna().unique()).sort_values()
    if distinct.empty:
        raise ToolError("the time column has no dates")
    day = pd.Timedelta(days=1)
    span_days = (distinct.iloc[-1] - distinct.iloc[0]) / day
    by_span = "day" if span_days < 90 else "week" if span_days <= 365 else "month"
    reason = f"the dates span {span_days:.0f} days → {by_span}"
    if len(distinct) < 2:
        return by_span, reason, round(span_days)
    gap = float(distinct.diff().dropna().median() / day)
    # The finest grain that does not cut the data into mostly empty periods.
    native = next(g for g, most in _NATIVE_GAPS if gap < most)
    if GRAINS.index(native) <= GRAINS.index(by_span):
        return by_span, reason, round(span_days)
    reason += f", but the data itself is {native}ly (dates {gap:.0f} days apart) → {native}"
    return native, reason, round(span_days)


def truncate(times: pd.Series, grain: str) -> pd.Series:
    """Each timestamp's period, as the period's first day (weeks start on Monday)."""
    pd = import_pandas()
    if getattr(times.dt, "tz", None) is not None:
        times = times.dt.tz_localize(None)  # periods are in the data's local time
    days = times.dt.normalize()
    if grain == "day":
        return days
    if grain == "week":
        return days - pd.to_timedelta(days.dt.day_of_week, unit="D")
    period = {"month": "M", "quarter": "Q", "year": "Y"}[grain]
    return times.dt.to_period(period).dt.start_time


# --- helpers -------------------------------------------------------------------------------


def _dtypes(frame: pd.DataFrame) -> str:
    return ", ".join(f"{c} ({t})" for c, t in frame.dtypes.items())


def _describe(name: str, frame: pd.DataFrame) -> dict[str, Any]:
    """The compact description of a frame every frame-making tool answers with."""
    return {
        "frame": name,
        "rows": len(frame),
        "columns": {str(c): str(t) for c, t in frame.dtypes.items()},
        "head": _records(frame.head(HEAD_ROWS)),
    }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    names = [str(c) for c in frame.columns]
    return [
        dict(zip(names, map(_scalar, row), strict=True))
        for row in frame.itertuples(index=False, name=None)
    ]


def _scalar(value: Any) -> Any:
    """A cell as plain JSON: numbers rounded for reading, dates as ISO text, gaps as null."""
    pd = import_pandas()
    if value is None or (not isinstance(value, str | bytes) and bool(pd.isna(value))):
        return None
    if type(value).__name__ == "datetime64":  # numpy's, as .unique() gives them
        value = pd.Timestamp(value)
    if isinstance(value, datetime):  # pandas' Timestamp too
        return iso(value)
    if isinstance(value, timedelta):
        return str(value)
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        value = value.item()
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return round(value, 4) if abs(value) >= 1 else float(f"{value:.4g}")
    return str(value)


def _shape(skew: float | None) -> str | None:
    if skew is None:
        return None
    side = "right" if skew > 0 else "left"
    if abs(skew) < 0.5:
        return "roughly symmetric"
    return f"{'strongly' if abs(skew) >= 1 else 'moderately'} {side}-skewed"


def _resolve_source(source: str) -> Path:
    text = source.strip()
    if not text:
        raise ToolError("source is empty: give a dataset name such as 'sales' or a file path")
    given = Path(text).expanduser()
    candidates = [given] if given.is_absolute() else [DATA_DIR / text, WORKSPACE / text, given]
    if not given.suffix:
        candidates += [DATA_DIR / f"{text}{suffix}" for suffix in TABLE_SUFFIXES]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    names = sorted(
        {p.stem for p in DATA_DIR.glob("*") if p.suffix.lower() in TABLE_SUFFIXES}
        if DATA_DIR.is_dir()
        else set()
    )
    known = f"the datasets in {DATA_DIR} are {', '.join(names)}" if names else "no datasets"
    raise ToolError(
        f"no dataset or file {source!r}: {known}; or give the path of a .csv, .parquet or "
        f"SQLite file"
    )


def _file_kind(path: Path) -> str:
    with path.open("rb") as f:
        head = f.read(16)
    if head.startswith(_SQLITE_MAGIC):
        return "sqlite"
    if head.startswith(_PARQUET_MAGIC):
        return "parquet"
    kind = TABLE_SUFFIXES.get(path.suffix.lower(), "csv")
    if kind != "csv":
        raise ToolError(f"{path} is named like a {kind} file but is not one")
    return kind


def _read_sqlite(path: Path, table: str | None) -> tuple[str, pd.DataFrame]:
    pd = import_pandas()
    # Read-only: loading a dataset must never change it.
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as connection:
        tables = [
            row[0]
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name"
            )
        ]
        if table is None:
            if len(tables) != 1:
                listed = ", ".join(tables) if tables else "it has none"
                raise ToolError(f"{path.name} is a SQLite file: pass table, one of: {listed}")
            table = tables[0]
        elif table not in tables:
            listed = ", ".join(tables) if tables else "none"
            raise ToolError(f"no table {table!r} in {path.name}: the tables are {listed}")
        quoted = '"' + table.replace('"', '""') + '"'  # a known table name, quoted as SQL says
        frame = pd.read_sql_query(f"SELECT * FROM {quoted}", connection)
    return table, frame


def _date_columns(frame: pd.DataFrame) -> dict[str, Any]:
    pd = import_pandas()
    found: dict[str, Any] = {}
    for column in frame.columns:
        series = frame[column]
        if not is_date_like(series):
            continue
        is_dates = pd.api.types.is_datetime64_any_dtype(series)
        try:
            parsed = parse_dates(series, str(column), None)
        except ToolError:
            continue
        found[str(column)] = _time_range(parsed) | {"type": "dates" if is_dates else "text"}
    return found


def _categories(frame: pd.DataFrame, dates: dict[str, Any]) -> dict[str, list[str]]:
    """The values of each text column with few of them (`MAX_CATEGORIES`), sorted."""
    found: dict[str, list[str]] = {}
    for column in frame.columns:
        series = frame[column]
        if str(column) in dates or is_number(series):
            continue
        values = series.dropna().unique()
        if 0 < len(values) <= MAX_CATEGORIES:
            found[str(column)] = sorted(str(v) for v in values)
    return found


def _time_range(times: pd.Series) -> dict[str, Any]:
    valid = times.dropna()
    if valid.empty:
        return {"min": None, "max": None}
    return {"min": _scalar(valid.min()), "max": _scalar(valid.max())}


def markdown_table(frame: pd.DataFrame) -> str:
    """A frame as a Markdown table; numbers right-aligned, money-like floats to 2 places."""
    columns = [str(c) for c in frame.columns]
    numeric = [is_number(frame[c]) for c in frame.columns]
    lines = [
        "| " + " | ".join(_cell_text(c) for c in columns) + " |",
        "| " + " | ".join("---:" if n else "---" for n in numeric) + " |",
    ]
    for row in frame.itertuples(index=False, name=None):
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    plain = _scalar(value)
    if plain is None:
        return ""
    if isinstance(plain, float):
        return f"{plain:,.2f}" if abs(plain) >= 1 or plain == 0 else f"{plain:.4g}"
    return _cell_text(str(plain))


def _cell_text(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
