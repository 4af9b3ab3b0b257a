"""`filter_rows` (tools/analysis.py): the rows a question is about, by category and period,
checked against pandas on the bundled sales data; every refusal names what exists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from agentrt import ToolError
from tests.tools.conftest import Call

ROOT = Path(__file__).resolve().parents[2]
SALES = ROOT / "data" / "sales.csv"


@pytest.fixture(scope="module")
def sales() -> pd.DataFrame:
    return pd.read_csv(SALES, parse_dates=["date"])


@pytest.fixture
def use(use: Call) -> Call:
    """The pack's tools, the sales data loaded."""
    use("load_dataset")
    return use


def test_load_lists_the_category_columns_values(use: Any, sales: pd.DataFrame) -> None:
    out = use("load_dataset")
    assert out["categories"] == {
        c: sorted(sales[c].unique()) for c in ("region", "product_category", "channel")
    }


@pytest.mark.parametrize(
    ("period", "first", "after"),
    [
        ("2024", "2024-01-01", "2025-01-01"),
        ("2024-Q3", "2024-07-01", "2024-10-01"),
        ("2023-q4", "2023-10-01", "2024-01-01"),
        ("2024-03", "2024-03-01", "2024-04-01"),
        ("2023-12", "2023-12-01", "2024-01-01"),
        ("2024-02-29", "2024-02-29", "2024-03-01"),
        ("2024-H2", "2024-07-01", "2025-01-01"),
        ("2023-h1", "2023-01-01", "2023-07-01"),
        ("2024-05-01..2024-05-15", "2024-05-01", "2024-05-16"),
    ],
)
def test_a_period_keeps_its_dates(
    use: Any, artifacts: dict[str, Any], sales: pd.DataFrame, period: str, first: str, after: str
) -> None:
    out = use("filter_rows", period=period)
    expected = sales[(sales.date >= first) & (sales.date < after)]
    assert out["kept"] == len(expected) > 0
    assert out["of"] == len(sales)
    assert out["frame"] == "data"  # replaces the table later steps read
    kept = artifacts["data"]
    assert round(kept["revenue"].sum(), 2) == round(expected["revenue"].sum(), 2)


def test_categories_and_dates_together(
    use: Any, artifacts: dict[str, Any], sales: pd.DataFrame
) -> None:
    out = use(
        "filter_rows",
        where={"Product_Category": ["electronics", "Clothing"], "region": "East"},
        start="2024-02-10",
        end="2024-03-05",
        name="subset",
    )
    expected = sales[
        sales.product_category.isin(["Electronics", "Clothing"])
        & (sales.region == "East")
        & (sales.date >= "2024-02-10")
        & (sales.date <= "2024-03-05")
    ]
    assert out["kept"] == len(expected) > 0
    assert out["where"] == {"product_category": ["Electronics", "Clothing"], "region": ["East"]}
    assert (out["from"], out["until"]) == ("2024-02-10", "2024-03-05")
    assert len(artifacts["subset"]) == len(expected)
    assert len(artifacts["data"]) == len(sales)  # untouched under another name


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "nothing to filter by"),
        (
            {"where": {"region": "Asia"}},
            "column 'region' has no value 'Asia'; its values are: East, North, South, West",
        ),
        ({"where": {"country": "France"}}, "'country'"),
        ({"period": "2022"}, "its dates run from 2023-01-01 to 2024-12-31"),
        ({"period": "Q3 2024"}, "period 'Q3 2024' is not a year, half, quarter, month or day"),
        ({"start": "March"}, "start 'March' is not a date"),
        ({"period": "2024-05-15..2024-05-01"}, "period '2024-05-15..2024-05-01' ends before it"),
    ],
    ids=[
        "nothing",
        "unknown-value",
        "unknown-column",
        "no-dates",
        "bad-period",
        "bad-start",
        "backwards-range",
    ],
)
def test_refusals_name_what_exists(use: Any, arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolError) as caught:
        use("filter_rows", **arguments)
    assert message in str(caught.value)
