"""Internal. What a question asks of the data, in the `pipeline` planner's closed vocabulary.

The labels here are the schema the model answers under: its answer is checked against them,
then held to the dataset (column names as the data spells them, a trend's date column).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

from agentrt.planning.pipeline.periods import (
    named_period,
    period_bounds,
    period_cued,
    years_named,
)

__all__ = [
    "Analysis",
    "Filters",
    "Grain",
    "Output",
    "Requirements",
    "TimeRequirement",
    "column_in_name",
    "columns_in_names",
    "grain_in_group_by",
    "metrics_in_question",
    "on_columns",
    "on_values",
    "requirement_labels",
    "requirement_texts",
    "where_by_values",
    "with_named_period",
    "with_named_values",
    "with_time_column",
    "without_uncued",
]

Analysis = Literal["total", "compare", "trend", "distribution", "anomaly", "correlation", "summary"]
Output = Literal["chart", "table"]
Grain = Literal["day", "week", "month", "quarter", "year", "unknown"]


class TimeRequirement(BaseModel):
    model_config = ConfigDict(extra="forbid")

    column: str | None = None
    grain: Grain = "unknown"
    """`unknown` unless the question names one; resolved from the data when the plan runs."""


class Filters(BaseModel):
    """The rows a question is about: categories it names, a period it names."""

    model_config = ConfigDict(extra="forbid")

    where: dict[str, list[str]] = {}
    """Category column → the values kept (`{"product_category": ["Electronics"]}`)."""
    period: str | None = None
    """The dates kept: a year "2024", a half "2024-H2", a quarter "2024-Q3", a month
    "2024-03", a day "2024-03-15", days from one to another "2024-05-01..2024-05-15"."""

    def __bool__(self) -> bool:
        return bool(self.where) or self.period is not None


class Requirements(BaseModel):
    """What a question asks of the data, in the pipeline's closed vocabulary."""

    model_config = ConfigDict(extra="forbid")

    metrics: list[str] = []
    group_by: list[str] = []
    time: TimeRequirement = TimeRequirement()
    analysis: list[Analysis] = []
    filters: Filters = Filters()
    outputs: list[Output] = []
    constraints: list[str] = []

    def labels(self) -> list[str]:
        """The requirement labels a plan must cover (keys of the capability map)."""
        labels = ["data", *(f"analysis.{a}" for a in self.analysis)]
        if self.group_by:
            labels.append("group_by")
        if self.time.column:
            labels.append("time.column")
        if self.filters:
            labels.append("filters")
        labels += [f"outputs.{o}" for o in self.outputs]
        return list(dict.fromkeys(labels))


def requirement_labels() -> list[str]:
    """Every label a `Requirements` can produce: each must have an entry in the map."""
    return [
        "data",
        "group_by",
        "time.column",
        "filters",
        *(f"analysis.{a}" for a in get_args(Analysis)),
        *(f"outputs.{o}" for o in get_args(Output)),
    ]


def on_columns(r: Requirements, columns: list[str]) -> Requirements | str:
    """The requirements with column names spelled as the dataset spells them; or, for a column
    the dataset does not have, what is wrong (the model is asked again)."""
    by_lower = {c.lower(): c for c in columns}
    named = [
        ("time.column", [r.time.column] if r.time.column is not None else []),
        ("metrics", r.metrics),
        ("group_by", r.group_by),
        ("filters.where", list(r.filters.where)),
    ]
    for field, names in named:
        for name in names:
            if name.strip().lower() not in by_lower:
                return (
                    f"{field}: there is no column {name!r}; the columns are: {', '.join(columns)}"
                )
    spelled = {field: [by_lower[n.strip().lower()] for n in names] for field, names in named}
    time = r.time
    if spelled["time.column"]:
        time = time.model_copy(update={"column": spelled["time.column"][0]})
    where = dict(zip(spelled["filters.where"], r.filters.where.values(), strict=True))
    filters = r.filters.model_copy(update={"where": where})
    return r.model_copy(
        update={
            "metrics": spelled["metrics"],
            "group_by": spelled["group_by"],
            "time": time,
            "filters": filters,
        }
    )


def on_values(
    r: Requirements,
    categories: Mapping[str, list[str]] | None,
    dates: Mapping[str, Mapping[str, object]],
) -> Requirements | str:
    """The filters with each value spelled as the data spells it and the period in its
    written form; or, for a value the data does not hold or a period outside its dates, what
    is wrong and what exists (the model is asked again: never a filter that keeps no row).

    :param categories: each category column's values, as the loaded dataset lists them
    :param dates: the dataset's date columns, with their first and last dates (`min`, `max`)
    """
    where: dict[str, list[str]] = {}
    for column, values in r.filters.where.items():
        known = list((categories or {}).get(column, []))
        if column in dates and r.filters.period is not None:
            continue  # the dates written as values: the period (the question's) holds them
        if column in dates:
            return (
                f"filters.where: {column!r} is a date column; put the dates in "
                f'filters.period (e.g. "2024", "2024-Q3", "2024-03", "2024-05-01..2024-05-15")'
            )
        if not known:
            continue  # no list of values to hold it to: the filter step says if it is wrong
        by_lower = {v.lower(): v for v in known}
        for value in values:
            if value.strip().lower() not in by_lower:
                return (
                    f"filters.where: column {column!r} has no value {value!r}; its values are: "
                    f"{', '.join(known)}"
                )
        where[column] = [by_lower[v.strip().lower()] for v in values]
    period = r.filters.period
    if period is not None:
        period = period.strip().upper()
        bounds = period_bounds(period)
        if bounds is None:
            return (
                f'filters.period: {r.filters.period!r} is not a period; write a year "2024", '
                f'a half "2024-H2", a quarter "2024-Q3", a month "2024-03", a day "2024-03-15" '
                f'or days from one to another "2024-05-01..2024-05-15"'
            )
        if not _in_data(bounds, dates):
            lo, hi = _spans(dates)[0]
            return (
                f"filters.period: the data has no dates in {period}; "
                f"its dates run from {lo} to {hi}"
            )
    kept = {c: vs for c, vs in r.filters.where.items() if c not in dates}
    filters = Filters(where={**kept, **where}, period=period)
    return r.model_copy(update={"filters": filters})


def _spans(dates: Mapping[str, Mapping[str, object]]) -> list[tuple[str, str]]:
    return [(str(d.get("min", ""))[:10], str(d.get("max", ""))[:10]) for d in dates.values()]


def _in_data(bounds: tuple[date, date], dates: Mapping[str, Mapping[str, object]]) -> bool:
    """A period overlaps the dates of one of the data's date columns (or the data lists none)."""
    spans = _spans(dates)
    first, last = bounds[0].isoformat(), bounds[1].isoformat()
    return not spans or any(lo and hi and first <= hi and last >= lo for lo, hi in spans)


def with_named_period(
    r: Requirements, query: str, dates: Mapping[str, Mapping[str, object]]
) -> tuple[Requirements, list[str]]:
    """The period `query` names in words, kept as the filter the model left out or wrote
    less precisely (a period holding it: its year, the month of a range of days), and a note
    of it: the 1.5B wrote no period for "the second half of 2024" (issue 24), and "2024-05"
    for "from 2024-05-01 through 2024-05-15". Only a period within the data's dates: a number
    such as "above 2000" is not taken for a year the data lacks."""
    named = named_period(query.lower())
    bounds = period_bounds(named) if named else None
    held = r.filters.period
    if named is None or bounds is None or not _in_data(bounds, dates):
        return r, []
    if held is not None:
        wider = period_bounds(held)
        if wider is None or held.strip().upper() == named.upper():
            return r, []
        if not wider[0] <= bounds[0] <= bounds[1] <= wider[1]:
            return r, []
    filters = r.filters.model_copy(update={"period": named})
    note = f"filters.period={named}: named in the question"
    return r.model_copy(update={"filters": filters}), [note]


def columns_in_names(r: Requirements, columns: list[str]) -> tuple[Requirements, list[str]]:
    """Metrics and groupings named with words around a column's name ("order revenue",
    "product category") spelled as the one column they name, and a note of each; a name in
    which no column, or several, can be read is left for `on_columns` to refuse."""
    notes: list[str] = []

    def spelled(field: str, names: list[str]) -> list[str]:
        out = []
        for name in names:
            column = column_in_name(name, columns)
            if column is not None and column != name:
                notes.append(f"{field}: {name!r} is the column {column!r}")
            out.append(column or name)
        return out

    metrics, group_by = spelled("metrics", r.metrics), spelled("group_by", r.group_by)
    return r.model_copy(update={"metrics": metrics, "group_by": group_by}), notes


def metrics_in_question(
    r: Requirements, query: str, columns: list[str]
) -> tuple[Requirements, list[str]]:
    """Metrics that name no column ("median", the 1.5B's metric for "the median daily
    revenue", written again when it was told) replaced by the one of `columns` (the data's
    measures: neither categories nor dates, which a question names as often, "all regions")
    the question names and the requirements use for nothing else; and a note of it. Left for
    `on_columns` to refuse when the question names none, or several."""
    known = {c.lower() for c in columns}
    strays = [m for m in r.metrics if m.strip().lower() not in known]
    if not strays:
        return r, []
    question = query.lower()
    used = {c.lower() for c in [*r.metrics, *r.group_by, *r.filters.where, r.time.column or ""]}
    named = [
        c
        for c in columns
        if c.lower() not in used and _holds(question, c.lower().replace("_", " "))
    ]
    if len(named) != 1:
        return r, []
    kept = [m for m in r.metrics if m not in strays]
    note = f"metrics: {', '.join(map(repr, strays))} name no column; the question's is {named[0]!r}"
    return r.model_copy(update={"metrics": [*kept, named[0]]}), [note]


def column_in_name(name: str, columns: list[str]) -> str | None:
    """The one column `name` holds with words around it ("order revenue", "order_revenue" →
    revenue; "product category" → product_category); None when it is a column already (in
    any casing), or holds none or several."""
    by_lower = {c.lower(): c for c in columns}
    if name.strip().lower() in by_lower:
        return None  # a column already, in some casing: `on_columns` spells it
    words = re.sub(r"[\s\-]+", "_", name.strip().lower())
    if words in by_lower:
        return by_lower[words]
    text = name.lower().replace("_", " ")
    found = [c for c in columns if _holds(text, c.lower().replace("_", " "))]
    return found[0] if len(found) == 1 else None


def grain_in_group_by(
    r: Requirements, columns: list[str], dates: list[str]
) -> tuple[Requirements, list[str]]:
    """A period grouped by as if it were a column (`group_by: ["quarter"]`, no such column)
    is the time grain, over the data's only date column; and a note of it."""
    grains = {g for g in get_args(Grain) if g != "unknown"}
    named = {c.lower() for c in columns}
    periods = [g for g in r.group_by if g.strip().lower() in grains and g.lower() not in named]
    if not periods or (len(dates) != 1 and r.time.column is None):
        return r, []
    grain = periods[0].strip().lower()
    time = r.time.model_copy(
        update={
            "column": r.time.column or dates[0],
            "grain": r.time.grain if r.time.grain != "unknown" else grain,
        }
    )
    groups = [g for g in r.group_by if g not in periods]
    note = f"time.grain={time.grain}: group_by {periods[0]!r} is a period of {time.column}"
    return r.model_copy(update={"group_by": groups, "time": time}), [note]


def where_by_values(
    r: Requirements, categories: Mapping[str, list[str]] | None
) -> tuple[Requirements, list[str]]:
    """A filter put under a column the data lacks (`{"category": ["Electronics"]}`), or under
    a category column that holds none of its values (`{"region": ["Groceries"]}`, the 1.5B),
    moved to the one category column that holds all its values, and a note of each move."""
    known = {c.lower(): {k.lower() for k in values} for c, values in (categories or {}).items()}
    where: dict[str, list[str]] = {}
    notes: list[str] = []
    for column, values in r.filters.where.items():
        wanted = {v.strip().lower() for v in values}
        owners = [c for c, held in (categories or {}).items() if wanted <= known[c.lower()]]
        held = known.get(column.strip().lower())
        misplaced = held is None or not wanted & held
        if misplaced and len(owners) == 1 and wanted:
            why = f"there is no column {column!r}" if held is None else f"{column} has none"
            notes.append(
                f"filters.where.{owners[0]}: {why}, and "
                f"{owners[0]} is the one that holds {', '.join(values)}"
            )
            column = owners[0]
        where[column] = list(dict.fromkeys([*where.get(column, []), *values]))
    if not notes:
        return r, []
    return r.model_copy(update={"filters": r.filters.model_copy(update={"where": where})}), notes


def with_named_values(
    r: Requirements, query: str, categories: Mapping[str, list[str]] | None
) -> tuple[Requirements, list[str]]:
    """Values of a category column that `query` names, kept as a filter the model left out,
    and a note of each: the 1.5B read "compare electronics and clothing revenue by quarter"
    as every category by quarter (issue 24). A column the model filters already is left as
    it is; so is one it groups by when the question names one of its values only ("which
    region beat the East?" compares the East with the others), unless the question compares
    values of another column: "online vs store for clothing" is of clothing only (the 1.5B
    grouped by category, and the answer compared every category)."""
    question = query.lower()
    grouped = {c.lower() for c in r.group_by}
    where = dict(r.filters.where)
    notes: list[str] = []
    named_in = {
        column: [v for v in values if _holds(question, v.lower())]
        for column, values in (categories or {}).items()
    }
    for column, named in named_in.items():
        compared = any(len(n) > 1 for c, n in named_in.items() if c != column)
        one_of_a_grouping = column.lower() in grouped and len(named) == 1
        if column in where or not named or (one_of_a_grouping and not compared):
            continue
        where[column] = named
        notes.append(f"filters.where.{column}=[{', '.join(named)}]: named in the question")
    if not notes:
        return r, []
    return r.model_copy(update={"filters": r.filters.model_copy(update={"where": where})}), notes


def with_time_column(
    r: Requirements, query: str, dates: list[str]
) -> tuple[Requirements, list[str]]:
    """A trend, years compared ("from 2023 to 2024") or a grain ("daily") needs a time column:
    when the question asks for one and the model named none, the dataset's only date column
    (of `dates`) is it. Years compared with no grain named are compared by year, not by the
    month the data's span would choose (the 1.5B's growth question got 24 months), by their
    totals. A question read as asking for no analysis at all is asked for its totals (per
    period, when it names one)."""
    years = len(years_named(query.lower())) >= 2
    notes: list[str] = []
    time = r.time
    needs = None
    if "trend" in r.analysis:
        needs = "a trend needs"
    elif years:
        needs = "years compared need"
    elif time.grain != "unknown":
        needs = f"grain {time.grain} needs"
    if needs is not None and time.column is None and len(dates) == 1:
        time = time.model_copy(update={"column": dates[0]})
        notes.append(f"time.column={dates[0]}: {needs} a date column, and the data has one")
    if years and time.column is not None and time.grain == "unknown":
        time = time.model_copy(update={"grain": "year"})
        notes.append("time.grain=year: the question compares years")
    analysis = r.analysis
    if years and time.column is not None and "total" not in analysis:
        # "By how much did revenue grow from 2023 to 2024?": the 1.5B read a trend, and over a
        # template with no aggregate the plan drew a line and computed no year's total.
        analysis = [*analysis, "total"]
        notes.append("analysis.total: the years compared are compared by their totals")
    if not analysis:
        # "Which month had the highest revenue?": the 1.5B read a month grain and no analysis
        # (its "trend" had no cue), and the plan computed nothing per month; "what was our
        # revenue in the second half of 2024?" got a filter, a histogram and no sum.
        analysis = ["total"]
        asked = f"about each {time.grain}" if time.column and time.grain != "unknown" else ""
        notes.append(f"analysis.total: the question asks {asked or 'for nothing else'}")
    update = {"time": time, "analysis": analysis}
    return (r.model_copy(update=update), notes) if notes else (r, [])


def groups_in_columns(r: Requirements, columns: list[str]) -> tuple[Requirements, list[str]]:
    """`r` without the groupings that name no column, and what was dropped. Only for a reading
    after one the model was told of: the 1.5B grouped "the average revenue per order line" by
    `order_line` again after being shown the columns, and the run fell back to `react`; one
    row is one order line already."""
    known = {c.lower() for c in columns}
    kept = [g for g in r.group_by if g.strip().lower() in known]
    if len(kept) == len(r.group_by):
        return r, []
    gone = ", ".join(g for g in r.group_by if g not in kept)
    return r.model_copy(update={"group_by": kept}), [f"group_by=[{gone}]: no such column, twice"]


def with_average(r: Requirements, asked: bool) -> tuple[Requirements, list[str]]:
    """An average asked for (`asked`) and no statistic read is asked of a summary too: the
    1.5B read "what's our average daily revenue?" as daily totals, and the answer had no mean."""
    if not asked or {"summary", "distribution"} & set(r.analysis):
        return r, []
    analysis = [*r.analysis, "summary"]
    return r.model_copy(update={"analysis": analysis}), [
        "analysis.summary: the question asks for an average"
    ]


def of_the_whole(r: Requirements, asked: bool) -> tuple[Requirements, list[str]]:
    """A share asked for (`asked`) is of every group: a filter on a column `r` groups by is
    dropped. The 1.5B grouped "what percent of total revenue did electronics account for?"
    by category and kept only electronics, whose share was then 100 %."""
    grouped = set(r.group_by)
    gone = [c for c in r.filters.where if c in grouped]
    if not asked or not gone:
        return r, []
    where = {c: v for c, v in r.filters.where.items() if c not in grouped}
    filters = r.filters.model_copy(update={"where": where})
    notes = [f"filters.where.{c}: a share is of all its groups" for c in gone]
    return r.model_copy(update={"filters": filters}), notes


def requirement_texts(r: Requirements) -> list[str]:
    """Retrieval queries, one per requirement."""
    texts = [f"{a} of {', '.join(r.metrics) or 'the data'}" for a in r.analysis]
    if r.group_by:
        texts.append(f"group by {', '.join(r.group_by)}")
    if r.time.column:
        texts.append(f"over time by {r.time.column}")
    if r.filters:
        kept = [*r.filters.where, *(["a period"] if r.filters.period else [])]
        texts.append(f"keep only the rows of {', '.join(kept)}")
    texts += [f"produce a {o}" for o in r.outputs]
    return texts


def without_uncued(
    r: Requirements,
    query: str,
    cues: Mapping[str, list[str]],
    categories: Mapping[str, list[str]] | None = None,
) -> tuple[Requirements, list[str]]:
    """`r` without what `query` holds no cue for, and what was dropped. Small models add
    analysis nobody asked for (anomalies, histograms), groupings nobody named (a distribution
    "by region and product category"), filters the question does not state: a plan is never
    made to serve them, and never failed for lacking them.

    - an analysis needs one of its cue words (`cues`);
    - a grouping column needs its name, a word of its name ("category" for
      product_category), or one of its values ("electronics") in the question;
    - a filter value needs to be in the question; a period needs its year, and its quarter
      or month, in it;
    - a time column needs a word of change over time (the trend cues), of a period ("by
      quarter", "monthly") or its own name: "in 2024" is a filter, not a time series.

    :param cues: words, by analysis, of which a question must hold one (lowercase)
    :param categories: each category column's values (their names cue the column)
    """
    question = query.lower()
    keep = [a for a in r.analysis if a not in cues or any(w in question for w in cues[a])]
    dropped = [f"analysis.{a}" for a in r.analysis if a not in keep]
    values = {k.lower(): v for k, v in (categories or {}).items()}
    groups = [c for c in r.group_by if _column_cued(c, question, values.get(c.lower(), []))]
    if len(groups) < len(r.group_by):
        dropped.append(f"group_by=[{', '.join(c for c in r.group_by if c not in groups)}]")
    where: dict[str, list[str]] = {}
    for column, kept in r.filters.where.items():
        cued = [v for v in kept if _holds(question, v.lower())]
        if cued:
            where[column] = cued
        if len(cued) < len(kept):
            uncued = [v for v in kept if v not in cued]
            dropped.append(f"filters.where.{column}=[{', '.join(uncued)}]")
    period = r.filters.period
    if period is not None and not period_cued(period, question):
        dropped.append(f"filters.period={period}")
        period = None
    time = r.time
    timed = time.column is not None or time.grain != "unknown"
    if timed and not _time_cued(time.column or "", question, cues.get("trend", [])):
        dropped += [f"time.column={time.column}"] if time.column else []
        dropped += [f"time.grain={time.grain}"] if time.grain != "unknown" else []
        time = TimeRequirement()
    return (
        r.model_copy(
            update={
                "analysis": keep,
                "group_by": groups,
                "time": time,
                "filters": Filters(where=where, period=period),
            }
        ),
        dropped,
    )


def _holds(question: str, words: str) -> bool:
    """`question` (lowercase) holds `words` as whole words (a plural or singular `s` aside)."""
    words = words.strip()
    stem = words[:-1] if words.endswith("s") and len(words) > 3 else words
    return bool(stem) and re.search(rf"\b{re.escape(stem)}(?:e?s)?\b", question) is not None


def _column_cued(column: str, question: str, values: list[str]) -> bool:
    name = column.lower().replace("_", " ").strip()
    words = [w for w in re.split(r"[\s\-]+", name) if len(w) >= 4]
    stems = [w[:-1] if w.endswith("y") else w for w in words]  # category → categories
    return (
        _holds(question, name)
        or any(re.search(rf"\b{re.escape(s)}", question) for s in stems)
        or any(_holds(question, v.lower()) for v in values)
    )


_TIME_WORDS = re.compile(r"\b(?:dai|day|week|month|quarter|year|annual|time|date|period|season)")
"""Words that ask for something over time, by a period (a year named as a number is a
filter's period, not this)."""


def _time_cued(column: str, question: str, trend: list[str]) -> bool:
    return (
        any(w in question for w in trend)
        or _TIME_WORDS.search(question) is not None
        or _holds(question, column.lower().replace("_", " "))
        or len(years_named(question)) >= 2
    )
