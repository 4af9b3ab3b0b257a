"""The pipeline's three JSON answers to the main question, as a scripted model plays them."""

from __future__ import annotations

from typing import Any

QUESTION = "get revenue totals by region and product type over time"
INTENT = {"primary_intent": "time_series_grouped", "confidence": 0.9}
ASKED = {
    "metrics": ["revenue"],
    "group_by": ["region", "product_category"],
    "time": {"column": "date", "grain": "unknown"},
    "analysis": ["total", "trend"],
    "outputs": ["chart", "table"],
    "constraints": [],
}
LABELS = [
    "data",
    "analysis.total",
    "analysis.trend",
    "group_by",
    "time.column",
    "outputs.chart",
    "outputs.table",
]
"""The requirement labels `ASKED` yields."""
NO_CHANGE: dict[str, Any] = {"changes": []}
