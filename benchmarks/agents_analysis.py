"""Family (a) of `benchmarks/agentbench.py`: data-analysis questions over the bundled sales data.

    .venv/bin/python benchmarks/agents_analysis.py --truths            # each question's truth
    .venv/bin/python benchmarks/agents_analysis.py --model local:small --planner pipeline --limit 3
    .venv/bin/python benchmarks/agentbench.py ...                    # every family (the driver)

What it measures: whether an agent over the default workspace answers the questions a user asks
next of `data/sales.csv` (daily rows 2023-01-01 … 2024-12-31; date, region, product_category,
channel, units, revenue): totals, top-k, filters by period, distributions, comparisons, trends
and anomalies, through four planners:

- `pipeline`: the workspace's `analysis` strategy (the `pipeline` planner), forced;
- `react`: the `exploratory` strategy (`react`, every tool), forced;
- `dag`, `vm`: `analysis_dag` / `analysis_vm`, strategies this module adds to a copy of the
  default workspace: the `analysis` strategy's tools, step budget and instructions, with
  `planner: dag` / `vm`.

The default workspace (strategies/, tools/, prompts/, registry/, data/ of the repository root)
is copied into the run's `workdir` (`workspace/`), so the repository is never written; the
trajectories, and the charts and files beside them, go to `workdir/trajectories/`.

The data (`data/agents/analysis.yaml`): 91 questions written as users type them, in rounds of
the seven kinds, so that the halves (`agents_common.half`: tuning the even positions, held-out
the odd) take each kind about equally. An "order line" (the issue's "order") is one row: one
day's sales of one category in one region through one channel. Each question carries a `truth`
spec, never an answer: `expected()` computes the answer from the CSV with pandas. A spec filters
rows (`where`: year, half, quarter, month, start/end dates, region, product_category, channel),
optionally totals them per a unit first (`per`: date, month, …), aggregates a `metric` (revenue
or units; `agg`: sum, mean, median, std, min, max, count, quantile `q`, share_above `above` in
percent, iqr), optionally by a dimension (`by`: region, product_category, channel, year,
quarter, month, date, weekday, or a list of them) and picks from the groups (`pick`: max, min,
farthest from the groups' mean; `top` / `bottom`: k); or combines two such measures (`op` over
`of`: diff, ratio, growth_pct = (a / b - 1) × 100, share_pct = a / b × 100), read as a label
with `sign` ([negative, positive]). The answer is then one of:

- a number (no `by`): right when the answer holds a number within 1 % of it, by magnitude (the
  sign is said in words); numbers are read as models write them: 1,234,567.89, 1.23 million,
  $1.2M, 12.5 %, 45k (the digits of a date or period, 2024-06-16 or 2024Q3, are not numbers).
  A percent (share_above, growth_pct, share_pct) may also be written as a
  fraction (0.125 for 12.5 %). Any number of the answer may match: an answer that lists many
  numbers has more chances (a 1 % band around a sum of millions is rarely hit by chance);
- numbers (`by` without a pick, e.g. revenue by quarter and category): every one of them;
- a label (`pick`): the expected label is named and is the first label of its dimension the
  answer's prose names (so "West, ahead of East" is right and "East trails West" is not); the
  lines of a markdown table are read only when the prose names none, and then its first row
  answers (a table sorted by the value, largest first, answers "which is highest");
- labels (`top` / `bottom` k): all k are named, in any order.

Labels are found as written: regions, categories, channels and weekdays by name (any case;
Groceries also as grocery, Sports as sport, Store as stores / in-store); years as 2024; months
as 2024-07, July 2024, Jul 2024 (or July alone when the question is about one year); quarters
as 2024Q3, 2024-Q3, Q3 2024 (Q3 alone within one year); days as 2024-06-12, June 12(, 2024),
12 June 2024. Direction labels (`sign`): up as up, increase(d), grew, growth, rose, higher;
down as down, decrease(d), declined, fell, dropped, lower.

A run is right only if it is `answered` (`RunSummary.answered`: ended `ok`, no doubt, an
answer) and its answer (the text the user reads, with any markdown table it holds) states the
truth as above. The held-out half is for the final count only.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import math
import re
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

# benchmarks/ is not a package: agents_common is imported from beside this file.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from agents_common import Half, Progress, Row, RunSummary, Verdict, half, run_each, run_once

from agentrt import Agent, AgentSettings, Model, Workspace
from agentrt.workspace import default_workspace_path

if TYPE_CHECKING:
    import pandas as pd

FAMILY = "analysis"
PLANNERS = ("pipeline", "react", "dag", "vm")
STRATEGIES = {
    "pipeline": "analysis",
    "react": "exploratory",
    "dag": "analysis_dag",
    "vm": "analysis_vm",
}
"""The strategy each planner's runs are forced to."""
DATA = Path(__file__).parent / "data" / "agents" / "analysis.yaml"
WORKSPACE_PARTS = ("strategies", "tools", "prompts", "registry", "data")
"""What of the default workspace a run's copy holds."""
TOLERANCE = 0.01
"""A number is right within this relative distance of the truth."""

Dimension = Literal[
    "region", "product_category", "channel", "year", "quarter", "month", "date", "weekday"
]
CATEGORICAL = ("region", "product_category", "channel", "weekday")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
DIRECTIONS = {
    "up": ("up", "increase", "increased", "increasing", "grew", "growth", "rose", "higher"),
    "down": ("down", "decrease", "decreased", "decreasing", "declined", "fell", "dropped", "lower"),
}
_ALIASES = {"Groceries": ("grocery",), "Sports": ("sport",), "Store": ("stores", "in-store")}


# --- the data -------------------------------------------------------------------------------


class Where(BaseModel):
    """Which rows a measure reads; every field given must hold."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    year: int | None = None
    half: Literal[1, 2] | None = None
    quarter: Literal[1, 2, 3, 4] | None = None
    month: int | None = Field(None, ge=1, le=12)
    start: date | None = None
    end: date | None = None
    """Inclusive."""
    region: str | list[str] | None = None
    product_category: str | list[str] | None = None
    channel: str | list[str] | None = None

    @model_validator(mode="after")
    def _in_a_year(self) -> Where:
        if (self.half or self.quarter or self.month) and self.year is None:
            msg = "half, quarter and month need a year"
            raise ValueError(msg)
        return self


class Measure(BaseModel):
    """A number, or one per group: `metric` of the rows `where` selects, aggregated."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: Literal["revenue", "units"] = "revenue"
    where: Where = Where()
    per: Dimension | None = None
    """Total the metric per this unit first (per date: daily totals), then aggregate those."""
    agg: Literal[
        "sum", "mean", "median", "std", "min", "max", "count", "quantile", "share_above", "iqr"
    ] = "sum"
    q: float | None = Field(None, gt=0, lt=1)
    """For `quantile`."""
    above: float | None = None
    """For `share_above`: the percent of values strictly above it."""

    @model_validator(mode="after")
    def _parameters(self) -> Measure:
        if (self.agg == "quantile") != (self.q is not None):
            msg = "q is given exactly with agg: quantile"
            raise ValueError(msg)
        if (self.agg == "share_above") != (self.above is not None):
            msg = "above is given exactly with agg: share_above"
            raise ValueError(msg)
        return self


class Truth(Measure):
    """How a question's answer is computed (see the module docstring)."""

    by: Dimension | list[Dimension] | None = None
    pick: Literal["max", "min", "farthest"] | None = None
    top: int | None = Field(None, ge=1)
    bottom: int | None = Field(None, ge=1)
    op: Literal["diff", "ratio", "growth_pct", "share_pct"] | None = None
    of: list[Measure] = []
    sign: tuple[str, str] | None = None
    """Labels for a negative and a positive result: the answer is a direction."""

    @model_validator(mode="after")
    def _shape(self) -> Truth:
        picks = sum(x is not None for x in (self.pick, self.top, self.bottom))
        problems = []
        if picks > 1:
            problems.append("give one of pick, top, bottom")
        if picks and not isinstance(self.by, str):
            problems.append("pick, top and bottom need one `by` dimension")
        if (self.op is None) != (not self.of):
            problems.append("op and of go together")
        if self.op is not None and len(self.of) != 2:
            problems.append("op combines two measures")
        if self.sign is not None and (self.op is None or self.by is not None):
            problems.append("sign reads one combined number")
        if self.sign is not None and set(self.sign) != set(DIRECTIONS):
            problems.append(f"sign labels are {sorted(DIRECTIONS)}")
        if problems:
            raise ValueError("; ".join(problems))
        return self


Kind = Literal["total", "top-k", "period", "distribution", "comparison", "trend", "anomaly"]
KINDS: tuple[Kind, ...] = (
    "total",
    "top-k",
    "period",
    "distribution",
    "comparison",
    "trend",
    "anomaly",
)


class Task(BaseModel):
    """One question of the family, as written in the data file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9-]+$")
    kind: Kind
    question: str = Field(min_length=5)
    truth: Truth


@functools.cache
def load(path: Path = DATA) -> tuple[Task, ...]:
    """Every question of the data file, in its order.

    :raises ValueError: a malformed question, or an id given twice
    """
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    tasks = tuple(Task.model_validate(item) for item in raw)
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        msg = f"{path}: ids given twice: {sorted({i for i in ids if ids.count(i) > 1})}"
        raise ValueError(msg)
    return tasks


def tasks(which: Half) -> list[Task]:
    return half(load(), which)


# --- ground truth -----------------------------------------------------------------------------


@functools.cache
def sales(path: Path | None = None) -> pd.DataFrame:
    """The sales data with a column per dimension (`quarter`, `month` as periods; `date` as a
    day)."""
    import pandas as pd

    frame = pd.read_csv(path or default_workspace_path() / "data" / "sales.csv")
    days = pd.to_datetime(frame["date"])
    frame["date"] = days.dt.to_period("D")
    frame["year"] = days.dt.year
    frame["quarter"] = days.dt.to_period("Q")
    frame["month"] = days.dt.to_period("M")
    frame["weekday"] = days.dt.day_name()
    return frame


@dataclass(frozen=True, slots=True)
class Expected:
    """A question's computed answer, in the form the answer is checked in."""

    kind: Literal["number", "numbers", "label", "labels"]
    numbers: tuple[float, ...] = ()
    labels: tuple[str, ...] = ()
    dimension: str | None = None
    """What the labels name (a `by` dimension, or `direction`)."""
    candidates: tuple[str, ...] = ()
    """Every label of that dimension, the expected ones among them."""
    percent: bool = False
    year: int | None = None
    """The one year the question is about, if any: months and quarters may omit it."""

    def __str__(self) -> str:
        if self.kind in ("label", "labels"):
            return ", ".join(self.labels)
        shown = ", ".join(f"{n:,.4g}" if abs(n) < 1000 else f"{n:,.2f}" for n in self.numbers[:3])
        more = f" … ({len(self.numbers)} numbers)" if len(self.numbers) > 3 else ""
        return shown + (" %" if self.percent else "") + more


def _select(frame: pd.DataFrame, where: Where) -> pd.DataFrame:
    mask = frame["revenue"].notna()
    if where.year is not None:
        mask &= frame["year"] == where.year
    if where.half is not None:
        mask &= frame["quarter"].dt.quarter.isin((1, 2) if where.half == 1 else (3, 4))
    if where.quarter is not None:
        mask &= frame["quarter"].dt.quarter == where.quarter
    if where.month is not None:
        mask &= frame["month"].dt.month == where.month
    if where.start is not None:
        mask &= frame["date"].dt.start_time >= str(where.start)
    if where.end is not None:
        mask &= frame["date"].dt.start_time <= str(where.end)
    for column in ("region", "product_category", "channel"):
        wanted = getattr(where, column)
        if wanted is not None:
            values = [wanted] if isinstance(wanted, str) else wanted
            unknown = set(values) - set(frame[column])
            if unknown:
                msg = f"where.{column}: no rows of {sorted(unknown)}"
                raise ValueError(msg)
            mask &= frame[column].isin(values)
    selected = frame[mask]
    if selected.empty:
        msg = f"no rows match {where}"
        raise ValueError(msg)
    return selected


def _aggregate(values: Any, measure: Measure) -> Any:
    """`values` (a Series, or a grouped one) aggregated as `measure` says."""
    match measure.agg:
        case "quantile":
            return values.quantile(measure.q)
        case "share_above":
            return values.apply(lambda s: 100 * float((s > measure.above).mean()))
        case "iqr":
            return values.quantile(0.75) - values.quantile(0.25)
        case "count":
            return values.size()
        case agg:
            return values.agg(agg)


def measure_value(
    measure: Measure, by: Sequence[str] = (), frame: pd.DataFrame | None = None
) -> Any:
    """`measure` over the sales data: a float, or a Series indexed by `by`."""
    rows = _select(sales() if frame is None else frame, measure.where)
    keys = list(by)
    if measure.per is not None:
        rows = rows.groupby([*keys, measure.per], observed=True)[measure.metric].sum().reset_index()
    if not keys:
        column = rows[measure.metric]
        if measure.agg in ("share_above", "count"):
            single = column.groupby(lambda _: 0)
            return float(_aggregate(single, measure).iloc[0])
        return float(_aggregate(column, measure))
    return _aggregate(rows.groupby(keys, observed=True)[measure.metric], measure)


def _combine(op: str, a: Any, b: Any) -> Any:
    match op:
        case "diff":
            return a - b
        case "ratio":
            return a / b
        case "growth_pct":
            return (a / b - 1) * 100
        case _:
            return a / b * 100


def label(dimension: str, value: Any) -> str:
    """How a group's key is written in the expected answer (2024-07, 2024Q3, 2024-06-12)."""
    if dimension == "year":
        return str(int(value))
    return str(value)


def expected(truth: Truth, frame: pd.DataFrame | None = None) -> Expected:
    """The answer `truth` computes from the sales data (or `frame`)."""
    by = [truth.by] if isinstance(truth.by, str) else list(truth.by or [])
    if truth.op is not None:
        a, b = (measure_value(m, by, frame) for m in truth.of)
        value = _combine(truth.op, a, b)
    else:
        value = measure_value(truth, by, frame)
    percent = truth.op in ("growth_pct", "share_pct") or (
        truth.op is None and truth.agg == "share_above"
    )
    years = {m.where.year for m in (truth.of or [truth])}
    year = years.pop() if len(years) == 1 else None
    if truth.sign is not None:
        direction = truth.sign[1] if value > 0 else truth.sign[0]
        return Expected(
            "label", labels=(direction,), dimension="direction", candidates=tuple(DIRECTIONS)
        )
    if not by:
        return Expected("number", numbers=(float(value),), percent=percent)
    series = value.dropna()
    if len(by) > 1 or (truth.pick is None and truth.top is None and truth.bottom is None):
        return Expected("numbers", numbers=tuple(float(v) for v in series), percent=percent)
    (dimension,) = by
    candidates = tuple(label(dimension, k) for k in series.index)
    if truth.pick is not None:
        scores = (series - series.mean()).abs() if truth.pick == "farthest" else series
        key = scores.idxmin() if truth.pick == "min" else scores.idxmax()
        ranked = scores.sort_values(ascending=truth.pick == "min")
        if len(ranked) > 1 and math.isclose(ranked.iloc[0], ranked.iloc[1], rel_tol=1e-9):
            msg = f"a tie for {truth.pick} of {dimension}: {list(ranked.index[:2])}"
            raise ValueError(msg)
        return Expected(
            "label",
            labels=(label(dimension, key),),
            dimension=dimension,
            candidates=candidates,
            year=year,
        )
    k = truth.top or truth.bottom or 0
    chosen = series.nlargest(k) if truth.top else series.nsmallest(k)
    return Expected(
        "labels",
        labels=tuple(label(dimension, i) for i in chosen.index),
        dimension=dimension,
        candidates=candidates,
        year=year,
    )


# --- reading an answer ------------------------------------------------------------------------

_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[-−])?\$?\s?"
    r"(?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:\s?(?P<scale>%|percent\b|million\b|mn\b|m\b|billion\b|bn\b|b\b|thousand\b|k\b))?",
    re.IGNORECASE,
)
_SCALES = {"million": 1e6, "mn": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9, "b": 1e9}
_SCALES |= {"thousand": 1e3, "k": 1e3}


_PERIOD = re.compile(r"(?<![\w.])\d{4}(?:-\d{2}(?:-\d{2})?|-?Q[1-4])(?![\w.])", re.IGNORECASE)
"""A day, month or quarter written as digits (2024-06-12, 2024-06, 2024Q3): not a number."""


def numbers_in(text: str) -> list[float]:
    """Every number of `text`, scaled as written (1.2M: 1,200,000; 12.5 %: 12.5); the digits of
    dates and periods (2024-06-16) are not numbers."""
    found = []
    for m in _NUMBER.finditer(_PERIOD.sub(" ", text)):
        value = float(m["digits"].replace(",", ""))
        scale = (m["scale"] or "").lower()
        value *= _SCALES.get(scale, 1.0)
        found.append(-value if m["sign"] else value)
    return found


def _near(value: float, truth: float) -> bool:
    return abs(abs(value) - abs(truth)) <= TOLERANCE * abs(truth)


def states_number(text: str, truth: float, *, percent: bool = False) -> bool:
    """Whether `text` holds `truth` (a percent also as a fraction) within 1 %."""
    targets = [truth, truth / 100] if percent else [truth]
    return any(_near(n, t) for n in numbers_in(text) for t in targets)


_MONTH_WORD = r"(?P<mname>" + "|".join(m[:3] + f"(?:{m[3:]})?" for m in MONTHS) + r")\.?"


def _month_number(word: str) -> int:
    return [m[:3].lower() for m in MONTHS].index(word[:3].lower()) + 1


def mentions(text: str, dimension: str, candidates: Sequence[str], year: int | None) -> list[str]:
    """The labels of `dimension` among `candidates` that `text` names, in the order named."""
    found: list[tuple[int, str]] = []
    if dimension in (*CATEGORICAL, "year", "direction"):
        for candidate in candidates:
            words = (candidate, *_ALIASES.get(candidate, ()), *DIRECTIONS.get(candidate, ()))
            if dimension == "weekday":
                words = (candidate, candidate + "s")
            pattern = r"(?<![\w-])(?:" + "|".join(re.escape(w) for w in words) + r")(?![\w-])"
            flags = 0 if dimension == "year" else re.IGNORECASE
            found += [(m.start(), candidate) for m in re.finditer(pattern, text, flags)]
    elif dimension == "month":
        for m in re.finditer(r"(?<!\d)(\d{4})-(\d{2})(?!\d)", text):
            found.append((m.start(), f"{m[1]}-{m[2]}"))
        for m in re.finditer(rf"\b{_MONTH_WORD}(?:,?\s+(?P<y>\d{{4}}))?\b", text):
            y = m["y"] or year
            if y is not None:
                found.append((m.start(), f"{y}-{_month_number(m['mname']):02d}"))
    elif dimension == "quarter":
        patterns = (
            r"\b(?P<y>\d{4})\s?-?\s?Q(?P<q>[1-4])\b",
            r"\bQ(?P<q>[1-4])(?:\s?[-/ ]\s?(?P<y>\d{4}))?\b",
        )
        for pattern in patterns:
            for m in re.finditer(pattern, text, re.IGNORECASE):
                y = m["y"] or year
                if y is not None:
                    found.append((m.start(), f"{y}Q{m['q']}"))
    elif dimension == "date":
        for m in re.finditer(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)", text):
            found.append((m.start(), f"{m[1]}-{m[2]}-{m[3]}"))
        named = (
            rf"\b{_MONTH_WORD}\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(?P<y>\d{{4}}))?\b",
            rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_WORD}(?:,?\s+(?P<y>\d{{4}}))?\b",
        )
        for pattern in named:
            for m in re.finditer(pattern, text):
                y = m["y"] or year
                if y is not None:
                    day = f"{y}-{_month_number(m['mname']):02d}-{int(m['d']):02d}"
                    found.append((m.start(), day))
    else:
        msg = f"no reading of {dimension!r} labels"
        raise ValueError(msg)
    allowed = set(candidates)
    return [name for _, name in sorted(found) if name in allowed]


def without_data_rows(answer: str) -> str:
    """`answer` without the rows of the loaded data its JSON shows (the `head` of a result
    whose frame is `data`: loading, parsing and filtering keep that name). Those rows are
    samples of the input, not results: an answer that dumped one held `"units": 16`, taken for
    16.14 % within 1 % (session 18)."""
    decoder = json.JSONDecoder()
    parts, at = [], 0
    while (start := answer.find("{", at)) != -1:
        try:
            value, end = decoder.raw_decode(answer, start)
        except ValueError:
            parts.append(answer[at : start + 1])
            at = start + 1
            continue
        parts += [answer[at:start], json.dumps(_rows_dropped(value))]
        at = end
    return "".join([*parts, answer[at:]])


def _rows_dropped(value: Any) -> Any:
    if isinstance(value, dict):
        data = value.get("frame") == "data"
        return {k: _rows_dropped(v) for k, v in value.items() if not (data and k == "head")}
    if isinstance(value, list):
        return [_rows_dropped(v) for v in value]
    return value


def check(answer: str, want: Expected) -> tuple[bool, str]:
    """Whether `answer` states `want`, and why not (or what it named); the data's own rows
    shown in it (`without_data_rows`) state nothing."""
    answer = without_data_rows(answer)
    if want.kind == "number":
        ok = states_number(answer, want.numbers[0], percent=want.percent)
        return ok, "" if ok else f"no number near {want}"
    if want.kind == "numbers":
        missing = [n for n in want.numbers if not states_number(answer, n, percent=want.percent)]
        return (
            not missing,
            f"{len(missing)} of {len(want.numbers)} numbers missing" if missing else "",
        )
    assert want.dimension is not None
    named = mentions(answer, want.dimension, want.candidates, want.year)
    if want.kind == "label":
        # The prose says which; a table is read only when the prose names none (then its
        # first row answers, as a table sorted by the value does).
        lines = answer.splitlines()
        prose = "\n".join(line for line in lines if not line.lstrip().startswith("|"))
        table = "\n".join(line for line in lines if line.lstrip().startswith("|"))
        named = mentions(prose, want.dimension, want.candidates, want.year) or mentions(
            table, want.dimension, want.candidates, want.year
        )
        if not named:
            return False, f"no {want.dimension} named"
        ok = named[0] == want.labels[0]
        return ok, "" if ok else f"named {named[0]} first"
    absent = [lb for lb in want.labels if lb not in named]
    return not absent, f"missing {', '.join(absent)}" if absent else ""


def score(task: Task, run: RunSummary, want: Expected | None = None) -> tuple[bool, str]:
    """Whether `run` answered `task` rightly, and why (see the module docstring)."""
    want = want or expected(task.truth)
    if not run.answered:
        why = run.doubt or (run.status if run.status != "ok" else "empty answer")
        return False, f"not answered ({why}); expected {want}"
    ok, why = check(run.answer, want)
    return ok, f"expected {want}" + (f"; {why}" if why else "")


# --- running ----------------------------------------------------------------------------------


def prepare_workspace(folder: Path) -> Path:
    """A copy of the default workspace in `folder` (made once), with the `analysis_dag` and
    `analysis_vm` strategies added: the `analysis` strategy's tools on the other planners."""
    if not (folder / "strategies" / "analysis_vm.yaml").is_file():
        source = default_workspace_path()
        for part in WORKSPACE_PARTS:
            shutil.copytree(source / part, folder / part, dirs_exist_ok=True)
        analysis = yaml.safe_load((source / "strategies" / "analysis.yaml").read_text("utf-8"))
        for planner in ("dag", "vm"):
            strategy = {
                "description": analysis["description"],
                "planner": planner,
                "step_budget": analysis["step_budget"],
                "tools": analysis["tools"],
                "instructions": analysis["instructions"],
            }
            path = folder / "strategies" / f"analysis_{planner}.yaml"
            path.write_text(yaml.safe_dump(strategy, sort_keys=False), encoding="utf-8")
    return folder


async def run(
    tasks: Sequence[Task],
    *,
    model: Model,
    model_name: str,
    planner: str,
    workdir: Path,
    progress: Progress = lambda line: None,
) -> list[Row]:
    """Each task run once, one at a time, by an agent over a copy of the default workspace
    in `workdir`, its strategy forced to `planner`'s; trajectories in `workdir/trajectories`."""
    if planner not in STRATEGIES:
        msg = f"planner {planner!r}: the analysis family runs {', '.join(PLANNERS)}"
        raise ValueError(msg)
    root = prepare_workspace(workdir / "workspace")
    agent = Agent(
        model,
        workspace=Workspace(root),
        settings=AgentSettings(trajectory_dir=workdir / "trajectories"),
    )

    async def attempt(task: Task) -> tuple[RunSummary, Verdict]:
        _, summary = await run_once(agent, task.question, strategy=STRATEGIES[planner])
        right, detail = score(task, summary, expected(task.truth))
        return summary, Verdict(right, detail)

    return await run_each(
        tasks,
        attempt,
        question=lambda t: t.question,
        family=FAMILY,
        planner=planner,
        model_name=model_name,
        progress=progress,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--truths", action="store_true", help="print each question's truth")
    parser.add_argument("--model", default="local:small", help="a model spec (agentrt run)")
    parser.add_argument("--planner", choices=PLANNERS, default="pipeline")
    parser.add_argument("--half", choices=("tuning", "held-out"), default="tuning")
    parser.add_argument("--limit", type=int, help="only the first N tasks of the half")
    parser.add_argument("--ids", nargs="+", help="only these tasks")
    parser.add_argument("--workdir", type=Path, help="keep the workspace copy and trajectories")
    args = parser.parse_args()
    chosen = tasks(args.half)
    if args.ids:
        chosen = [t for t in chosen if t.id in args.ids]
    chosen = chosen[: args.limit] if args.limit else chosen
    if args.truths:
        for task in chosen:
            print(f"{task.id:38} {task.kind:12} {expected(task.truth)}")
        return
    import tempfile

    from agentrt.models.spec import load_model

    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or Path(scratch)
        rows = asyncio.run(
            run(
                chosen,
                model=load_model(args.model),
                model_name=args.model,
                planner=args.planner,
                workdir=workdir,
                progress=lambda line: print(line, file=sys.stderr),
            )
        )
    right = sum(r.right for r in rows)
    seconds = sum(r.run.seconds for r in rows) / max(len(rows), 1)
    print(f"{args.planner} on {args.model}: {right}/{len(rows)} right, {seconds:.0f} s a task")
    for r in rows:
        print(
            f"  {r.task:38} {r.run.status:8} {'right' if r.right else 'wrong':5} "
            f"{r.run.seconds:6.1f}s  {r.detail}"
        )


if __name__ == "__main__":
    main()
