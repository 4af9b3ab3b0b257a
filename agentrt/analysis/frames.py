"""Data frames for analysis tool packs: the frames a run keeps, their columns, dates, files.

Tools share pandas DataFrames through the run's artifacts (`ToolContext.artifacts`), by
name. These helpers read a frame by name, check its columns, read dates, and name the files
tools write into the run's output folder. Every problem is a `ToolError` the model can act
on: it names the value and lists what would do instead.

pandas is the `analysis` extra: it is imported when a tool runs (`import_pandas`), so
loading a workspace stays fast and works without it.
"""

from __future__ import annotations

import difflib
import importlib
import re
import warnings
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from agentrt.exceptions import ToolError
from agentrt.tool import ToolContext

if TYPE_CHECKING:
    # pandas ships no type information (pandas-stubs is not a dependency): frames are Any.
    import pandas as pd  # type: ignore[import-untyped]

__all__ = [
    "INSTALL",
    "TABLE_SUFFIXES",
    "as_dates",
    "import_pandas",
    "is_date_like",
    "is_number",
    "iso",
    "numeric_columns",
    "output_path",
    "parse_dates",
    "read_frame",
    "remember_source",
    "require_columns",
    "require_numeric",
]

INSTALL = "pip install 'agentrt[analysis]'"
TABLE_SUFFIXES = {
    ".csv": "csv",
    ".tsv": "csv",
    ".txt": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".sqlite": "sqlite",
    ".sqlite3": "sqlite",
    ".db": "sqlite",
}
"""The formats of the tables `load_dataset` reads, by file suffix."""
_KNOWN_SUFFIXES = {
    *TABLE_SUFFIXES,
    ".md",
    ".png",
    ".jpg",
    ".jpeg",
    ".svg",
    ".pdf",
    ".json",
    ".xlsx",
}
"""Suffixes a file name may carry for another format: replaced by the right one."""

# Text that reads as a date: 2023-01-31, 2023/1/31, 31.01.2023, 01/31/23, optionally with a
# time; or a year and month, 2023-01.
_DATE_TEXT = re.compile(
    r"^\s*(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}|\d{4}-(?:0[1-9]|1[0-2]))"
    r"(?:[ T]\d{1,2}:\d{2}\S*)?\s*$"
)


def import_pandas() -> ModuleType:
    """pandas, imported now; a `ToolError` saying what to install when it is missing."""
    try:
        return importlib.import_module("pandas")
    except ImportError:
        raise ToolError(f"the analysis tools need pandas: {INSTALL}") from None


_SOURCES = "agentrt.analysis.sources"
"""The artifact that maps the datasets loaded in a run to the frames they were loaded as."""


def remember_source(ctx: ToolContext, source: str, name: str) -> None:
    """Note that the dataset `source` ("sales", "data/sales.csv") was loaded as the frame
    `name`: a tool given the dataset's name for the frame reads it (`read_frame`)."""
    sources = ctx.artifacts.setdefault(_SOURCES, {})
    sources[Path(source.strip()).stem] = name


def read_frame(ctx: ToolContext, data: str) -> pd.DataFrame:
    """The frame the run keeps under the name `data`, or the one the dataset named `data` was
    loaded as: models name the frame after its dataset (`data: "sales"` for the frame `data`
    that `load_dataset(source="sales")` made, the 1.5B in every react run of issue 24)."""
    pd = import_pandas()
    frame = ctx.artifacts.get(data)
    if frame is None:
        loaded = ctx.artifacts.get(_SOURCES, {}).get(Path(data.strip()).stem)
        frame = ctx.artifacts.get(loaded) if loaded is not None else None
    if isinstance(frame, pd.DataFrame):
        return frame
    frames = [k for k, v in ctx.artifacts.items() if isinstance(v, pd.DataFrame)]
    have = f"the tables are {', '.join(frames)}" if frames else "no table is loaded yet"
    if data in ctx.artifacts:
        raise ToolError(f"{data!r} is not a table ({have})")
    # Charts serve both the analysis tools and the copilot's: name the tool of each.
    msg = f"no table {data!r}: {have}; make one first (load_dataset, or run_sql's result)"
    raise ToolError(msg)


def require_columns(frame: pd.DataFrame, names: Iterable[str]) -> None:
    """Fail on the first name that is not a column, suggesting the closest one."""
    columns = [str(c) for c in frame.columns]
    for name in names:
        if name in frame.columns:
            continue
        message = f"no column {name!r}: the columns are {', '.join(columns)}"
        close = [c for c in columns if c.lower() == name.lower()] or difflib.get_close_matches(
            name, columns, n=1
        )
        if close:
            message += f" (did you mean {close[0]!r}?)"
        raise ToolError(message)


def is_number(series: pd.Series) -> bool:
    """Whether a column holds numbers (true/false flags are not numbers here)."""
    pd = import_pandas()
    return bool(pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series))


def numeric_columns(frame: pd.DataFrame) -> list[str]:
    """The names of the columns that hold numbers, in the frame's order."""
    return [str(c) for c in frame.columns if is_number(frame[c])]


def require_numeric(frame: pd.DataFrame, column: str, purpose: str) -> None:
    """Fail unless `column` holds numbers; `purpose` says what needed them."""
    if not is_number(frame[column]):
        numeric = ", ".join(numeric_columns(frame)) or "none"
        raise ToolError(
            f"column {column!r} is {frame[column].dtype}, not numbers, so it cannot be used for "
            f"{purpose}; the numeric columns are {numeric}"
        )


def iso(moment: datetime) -> str:
    """A moment as ISO text: the date alone at midnight."""
    midnight = (moment.hour, moment.minute, moment.second, moment.microsecond) == (0, 0, 0, 0)
    return moment.date().isoformat() if midnight else moment.isoformat()


def is_date_like(series: pd.Series) -> bool:
    """Whether a column holds dates, or text in which every sampled value reads as one."""
    pd = import_pandas()
    if pd.api.types.is_datetime64_any_dtype(series):
        return True
    if is_number(series) or pd.api.types.is_bool_dtype(series):
        return False
    sample = series.dropna().head(50)
    return bool(len(sample)) and all(
        isinstance(v, str) and _DATE_TEXT.match(v) is not None for v in sample
    )


def parse_dates(series: pd.Series, column: str, fmt: str | None) -> pd.Series:
    """A column read as dates (a strftime `fmt`, or ISO 8601 then inferred); unreadable
    values become empty."""
    pd = import_pandas()
    if pd.api.types.is_datetime64_any_dtype(series):
        return series
    if pd.api.types.is_bool_dtype(series):
        raise ToolError(f"column {column!r} holds true/false values, not dates")
    text = series
    if is_number(series):
        if fmt is None:
            raise ToolError(
                f"column {column!r} holds numbers ({series.dtype}), not dates: pass a format "
                f"such as '%Y%m%d' if they are dates written as numbers"
            )
        text = series.map(
            lambda v: None if pd.isna(v) else str(int(v)) if float(v).is_integer() else str(v)
        )
    try:
        # Inference warnings ("could not infer format…") are noise: failures are counted.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if fmt is not None:
                return pd.to_datetime(text, format=fmt, errors="coerce")
            parsed = pd.to_datetime(text, format="ISO8601", errors="coerce")
            if parsed.isna().sum() > text.isna().sum():
                inferred = pd.to_datetime(text, errors="coerce")
                if inferred.isna().sum() < parsed.isna().sum():
                    parsed = inferred
            return parsed
    except (ValueError, TypeError, OverflowError) as exc:
        raise ToolError(f"cannot read column {column!r} as dates: {exc}") from None


def as_dates(frame: pd.DataFrame, column: str) -> pd.Series:
    """A column as dates, for a step that needs them: text is read if every value is a date."""
    series = frame[column]
    parsed = parse_dates(series, column, None)
    failed = parsed.isna() & series.notna()
    if failed.any():
        examples = ", ".join(repr(str(v)) for v in series[failed].head(3))
        raise ToolError(
            f"column {column!r} is not all dates (e.g. {examples}): use parse_datetime on it "
            f"first, with a format if needed"
        )
    return parsed


def output_path(ctx: ToolContext, filename: str | None, default: str, suffix: str) -> Path:
    """Where a tool writes a file in the run's output folder: `filename` (a plain name) or
    one made from `default`, ending in `suffix`."""
    if filename:
        name = filename.strip()
        if not name or name != Path(name).name or name.startswith("."):
            raise ToolError(
                f"filename {filename!r} must be a plain file name like 'report{suffix}'"
            )
    else:
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", default).strip("_.") or "output"
    current = Path(name).suffix.lower()
    if current in _KNOWN_SUFFIXES and current != suffix:
        name = name[: -len(current)]
    if not name.lower().endswith(suffix):
        name += suffix
    ctx.output_dir.mkdir(parents=True, exist_ok=True)
    return (ctx.output_dir / name).resolve()
