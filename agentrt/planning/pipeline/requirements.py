"""Internal. What a question asks of the data, in the `pipeline` planner's closed vocabulary.

The labels here are the schema the model answers under: its answer is checked against them,
then held to the dataset (column names as the data spells them, a trend's date column).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

__all__ = [
    "Analysis",
    "Grain",
    "Output",
    "Requirements",
    "TimeRequirement",
    "on_columns",
    "requirement_labels",
    "requirement_texts",
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


class Requirements(BaseModel):
    """What a question asks of the data, in the pipeline's closed vocabulary."""

    model_config = ConfigDict(extra="forbid")

    metrics: list[str] = []
    group_by: list[str] = []
    time: TimeRequirement = TimeRequirement()
    analysis: list[Analysis] = []
    outputs: list[Output] = []
    constraints: list[str] = []

    def labels(self) -> list[str]:
        """The requirement labels a plan must cover (keys of the capability map)."""
        labels = ["data", *(f"analysis.{a}" for a in self.analysis)]
        if self.group_by:
            labels.append("group_by")
        if self.time.column:
            labels.append("time.column")
        labels += [f"outputs.{o}" for o in self.outputs]
        return list(dict.fromkeys(labels))


def requirement_labels() -> list[str]:
    """Every label a `Requirements` can produce: each must have an entry in the map."""
    return [
        "data",
        "group_by",
        "time.column",
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
    return r.model_copy(
        update={"metrics": spelled["metrics"], "group_by": spelled["group_by"], "time": time}
    )


def with_time_column(r: Requirements, dates: list[str]) -> tuple[Requirements, list[str]]:
    """A trend needs a time column: when the question asks for one and names none, the
    dataset's only date column (of `dates`) is it."""
    if "trend" not in r.analysis or r.time.column is not None or len(dates) != 1:
        return r, []
    time = r.time.model_copy(update={"column": dates[0]})
    note = f"time.column={dates[0]}: a trend needs a date column, and the data has one"
    return r.model_copy(update={"time": time}), [note]


def requirement_texts(r: Requirements) -> list[str]:
    """Retrieval queries, one per requirement."""
    texts = [f"{a} of {', '.join(r.metrics) or 'the data'}" for a in r.analysis]
    if r.group_by:
        texts.append(f"group by {', '.join(r.group_by)}")
    if r.time.column:
        texts.append(f"over time by {r.time.column}")
    texts += [f"produce a {o}" for o in r.outputs]
    return texts


def without_uncued(
    r: Requirements, query: str, cues: Mapping[str, list[str]]
) -> tuple[Requirements, list[str]]:
    """`r` without the analysis `query` holds no cue for (small models add anomalies and
    histograms nobody asked for), and the labels dropped.

    :param cues: words, by analysis, of which a question must hold one (lowercase)
    """
    question = query.lower()
    keep = [a for a in r.analysis if a not in cues or any(w in question for w in cues[a])]
    dropped = [f"analysis.{a}" for a in r.analysis if a not in keep]
    return r.model_copy(update={"analysis": keep}), dropped
