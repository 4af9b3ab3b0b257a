"""Internal. Named results as a store keeps them: of what a session's tools keep by name, the
pandas data frames (what the SQL and analysis tools keep), as JSON columns and rows (dates as
ISO text). Anything else a tool keeps there (a database connection, an index) lives as long
as the process.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping

from pydantic import JsonValue

__all__ = ["frames_of", "restored"]


def frames_of(artifacts: Mapping[str, object]) -> dict[str, JsonValue]:
    """The data frames among `artifacts`, each as `{"columns": […], "data": […]}`."""
    # No data frame exists unless pandas was imported: the store never imports it to look.
    pd = sys.modules.get("pandas")
    if pd is None:
        return {}
    found: dict[str, JsonValue] = {}
    for name, value in artifacts.items():
        if isinstance(value, pd.DataFrame):
            found[name] = json.loads(value.to_json(orient="split", index=False, date_format="iso"))
    return found


def restored(results: Mapping[str, JsonValue]) -> dict[str, object]:
    """The data frames `frames_of` stored."""
    if not results:
        return {}
    # Only a store with data frames in it gets here, so pandas is installed.
    import pandas as pd  # type: ignore[import-untyped]

    frames: dict[str, object] = {}
    for name, value in results.items():
        if isinstance(value, dict):
            frames[name] = pd.DataFrame(value["data"], columns=value["columns"])
    return frames
