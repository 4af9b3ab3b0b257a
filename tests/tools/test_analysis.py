"""The data-analysis tool pack (tools/analysis.py): real pandas, real matplotlib, real files.

The main job runs through an `Agent` with a scripted model; edge cases call the tools
directly with a `ToolContext` made by hand.
"""

from __future__ import annotations

import importlib.util
import sqlite3
import struct
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd
import pytest

from agentrt import (
    Agent,
    AgentSettings,
    RunResult,
    ScriptedModel,
    ToolError,
    ToolFinishedEvent,
    Workspace,
)
from tests.helpers import call
from tests.tools.conftest import Call

ROOT = Path(__file__).resolve().parents[2]
SALES = ROOT / "data" / "sales.csv"
COLUMNS = "date, region, product_category, channel, units, revenue"
PACK = {
    "load_dataset",
    "parse_datetime",
    "filter_rows",
    "aggregate",
    "segment_metric",
    "compute_summary_stats",
    "compute_correlation",
    "detect_anomalies",
    "plot_line",
    "plot_bar",
    "plot_histogram",
    "save_dataframe",
}


def _module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def sample() -> ModuleType:
    return _module("sample_data", ROOT / "tools" / "_sample_data.py")


@pytest.fixture(scope="module")
def sales() -> pd.DataFrame:
    return pd.read_csv(SALES)


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's header, which must be a real PNG's."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert head[12:16] == b"IHDR"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def daily(days: int, start: str = "2024-01-01") -> pd.DataFrame:
    dates = pd.date_range(start, periods=days, freq="D")
    return pd.DataFrame({"day": dates, "shop": ["a", "b"] * (days // 2) + ["a"] * (days % 2)})


# --- the workspace ---------------------------------------------------------------------------


def test_every_tool_of_the_pack_has_metadata(default: Workspace) -> None:
    """The default workspace loads (metadata checked against the live tools) with the pack."""
    assert set(default.tools) >= PACK
    assert set(default.registry.tools) >= PACK
    assert default.registry.tools_with("time_series_plot") == ["plot_line"]
    assert default.registry.tools_with("correlation") == ["compute_correlation"]
    assert set(default.registry.tools_with("aggregate")) == {"aggregate"}
    for name in PACK:
        assert default.tools[name].cache is False, name


def test_importing_agentrt_and_loading_the_workspace_leave_pandas_alone() -> None:
    probe = (
        "import sys, agentrt; agentrt.Workspace(); "
        "print(sorted(m for m in ('pandas', 'matplotlib', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def test_without_pandas_a_call_says_what_to_install(
    use: Call, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(ToolError, match=r"pip install 'agentrt\[analysis\]'"):
        use("load_dataset")


# --- the main job, through an agent -----------------------------------------------------------


async def test_revenue_by_region_and_category_over_time(
    tmp_path: Path, sales: pd.DataFrame
) -> None:
    """load → parse → aggregate by region and category at an unknown grain → chart and table."""
    # A workspace of the real tools and registry, with a strategy of its own so that the
    # shipped strategies' budgets do not matter here.
    ws = tmp_path / "ws"
    (ws / "strategies").mkdir(parents=True)
    (ws / "strategies" / "analysis.yaml").write_text(
        "description: Data analysis.\nplanner: react\nstep_budget: 8\n"
        "tools: all\ninstructions: exploratory.j2\n"
    )
    (ws / "tools").symlink_to(ROOT / "tools")
    (ws / "registry").symlink_to(ROOT / "registry")
    agent = Agent(
        workspace=Workspace(ws),
        model=ScriptedModel(
            [
                call("load_dataset", source="sales"),
                call("parse_datetime", column="date"),
                call(
                    "aggregate",
                    metrics=["revenue"],
                    group_by=["region", "product_category"],
                    time_column="date",
                    grain="unknown",
                ),
                # Both only read "aggregated": one turn, run side by side.
                call("plot_line", data="aggregated", x="date", y="revenue", color="region")
                + call("save_dataframe", data="aggregated", format="csv"),
                "The chart and the table of monthly revenue are ready.",
            ]
        ),
        settings=AgentSettings(
            trajectory_dir=tmp_path / "trajectories", default_strategy="analysis"
        ),
    )
    result = await agent.run(
        "Get revenue totals by region and product type over time", strategy="analysis"
    )
    check_main_job(result, sales)


def check_main_job(result: RunResult, sales: pd.DataFrame) -> None:
    assert result.status == "ok", result.trajectory.events[-1]
    assert result.path is not None
    assert result.path.is_file()
    finished = {e.name: e for e in result.trajectory.events if isinstance(e, ToolFinishedEvent)}
    # The last two ran side by side and may finish in either order.
    assert list(finished)[:3] == ["load_dataset", "parse_datetime", "aggregate"]
    assert set(list(finished)[3:]) == {"plot_line", "save_dataframe"}
    assert all(e.status == "ok" for e in finished.values()), finished
    outputs: dict[str, Any] = {name: e.output for name, e in finished.items()}

    loaded = outputs["load_dataset"]
    assert loaded["frame"] == "data"
    assert loaded["rows"] == len(sales) == 29240
    assert loaded["columns"]["units"] == "int64"
    assert loaded["source"] == str(SALES)
    assert loaded["date_columns"] == {
        "date": {"min": "2023-01-01", "max": "2024-12-31", "type": "text"}
    }
    assert len(loaded["head"]) == 5
    assert loaded["head"][0] == sales.iloc[0].to_dict()

    parsed = outputs["parse_datetime"]
    assert parsed["columns"]["date"].startswith("datetime64")
    assert (parsed["min"], parsed["max"], parsed["unparsed"]) == ("2023-01-01", "2024-12-31", 0)

    totals = outputs["aggregate"]
    assert totals["frame"] == "aggregated"
    assert totals["grain"] == "month"
    assert totals["span_days"] == 730
    assert "730 days" in totals["grain_reason"]
    assert totals["rows"] == 24 * 4 * 5  # months × regions × categories
    assert list(totals["columns"]) == ["date", "region", "product_category", "revenue"]
    assert totals["head"][0]["date"] == "2023-01-01"

    chart = outputs["plot_line"]
    png = Path(chart["file"])
    assert png.parent == result.path.with_suffix("")  # beside the trajectory
    assert (chart["chart"], chart["series"], chart["panels"]) == ("line", 20, 4)
    assert (chart["panel_by"], chart["color"]) == ("region", "product_category")
    width, height = png_size(png)
    assert width >= 800
    assert height >= 400
    assert 20_000 < png.stat().st_size < 2_000_000

    table = outputs["save_dataframe"]
    written = pd.read_csv(table["file"])
    assert Path(table["file"]).parent == png.parent
    assert table["rows"] == len(written) == 480
    assert list(written.columns) == ["date", "region", "product_category", "revenue"]
    assert written["date"].min() == "2023-01-01"
    assert written["date"].max() == "2024-12-01"
    assert written["revenue"].sum() == pytest.approx(sales["revenue"].sum())
    east_clothing_jan = sales[
        sales["date"].str.startswith("2023-01")
        & (sales["region"] == "East")
        & (sales["product_category"] == "Clothing")
    ]["revenue"].sum()
    assert written.iloc[0].to_dict() == {
        "date": "2023-01-01",
        "region": "East",
        "product_category": "Clothing",
        "revenue": pytest.approx(east_clothing_jan),
    }
    preview = table["preview"].splitlines()
    assert preview[0] == "| date | region | product_category | revenue |"
    assert len(preview) == 2 + 20 + 1
    assert preview[-1] == "… 460 more rows in the file"


# --- the sample dataset ----------------------------------------------------------------------


def test_the_sample_data_is_regenerated_byte_for_byte(sample: ModuleType, tmp_path: Path) -> None:
    assert sample.PATH == SALES
    assert sample.main(tmp_path / "sales.csv").read_bytes() == SALES.read_bytes()


def test_the_sample_data_s_shape(sales: pd.DataFrame, sample: ModuleType) -> None:
    assert list(sales.columns) == COLUMNS.split(", ")
    assert len(sales) == 731 * 4 * 5 * 2  # days × regions × categories × channels
    assert (sales["date"].min(), sales["date"].max()) == ("2023-01-01", "2024-12-31")
    assert sorted(sales["region"].unique()) == sorted(sample.REGIONS)
    assert sorted(sales["product_category"].unique()) == sorted(sample.CATEGORIES)
    assert sorted(sales["channel"].unique()) == ["Online", "Store"]
    assert not sales.duplicated(["date", "region", "product_category", "channel"]).any()
    assert (sales["units"] >= 0).all()
    # Money in cents: revenue is units × a price near the category's.
    price = sales["revenue"] / sales["units"].where(sales["units"] > 0)
    listed = sales["product_category"].map(lambda c: sample.CATEGORIES[c].price_cents / 100)
    assert ((price / listed).dropna().between(0.85, 1.15)).all()
    # Online grows faster than stores: its share of revenue rises from year to year.
    year = sales["date"].str[:4]
    online = sales[sales["channel"] == "Online"].groupby(year)["revenue"].sum()
    assert (online / sales.groupby(year)["revenue"].sum()).is_monotonic_increasing


# --- loading -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory, sales: pd.DataFrame) -> dict[str, Path]:
    """The sample as Parquet (with real dates) and as a SQLite file with two tables."""
    folder = tmp_path_factory.mktemp("copies")
    parquet = folder / "sales.parquet"
    sales.assign(date=pd.to_datetime(sales["date"])).to_parquet(parquet, index=False)
    database = folder / "shop.sqlite"
    with sqlite3.connect(database) as connection:
        sales.to_sql("sales", connection, index=False)
        pd.DataFrame({"region": ["East", "West"], "manager": ["Ann", "Bo"]}).to_sql(
            "regions", connection, index=False
        )
    return {"parquet": parquet, "sqlite": database}


@pytest.mark.parametrize(
    ("kind", "table", "date_type"),
    [("csv", None, "text"), ("parquet", None, "dates"), ("sqlite", "sales", "text")],
)
def test_load_csv_parquet_and_sqlite(
    use: Call,
    artifacts: dict[str, Any],
    copies: dict[str, Path],
    sales: pd.DataFrame,
    kind: str,
    table: str | None,
    date_type: str,
) -> None:
    source = str(SALES) if kind == "csv" else str(copies[kind])
    out = use("load_dataset", source=source, table=table, name="copy")
    assert out["format"] == kind
    assert out["rows"] == len(sales)
    assert list(out["columns"]) == COLUMNS.split(", ")
    assert out["date_columns"]["date"] == {
        "min": "2023-01-01",
        "max": "2024-12-31",
        "type": date_type,
    }
    assert out.get("table") == table
    frame = artifacts["copy"]
    assert frame["revenue"].sum() == pytest.approx(sales["revenue"].sum())


def test_load_by_dataset_name(use: Call, artifacts: dict[str, Any]) -> None:
    out = use("load_dataset")
    assert out["source"] == str(SALES)
    assert isinstance(artifacts["data"], pd.DataFrame)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"source": "shop.sqlite"},
            "shop.sqlite is a SQLite file: pass table, one of: regions, sales",
        ),
        (
            {"source": "shop.sqlite", "table": "orders"},
            "no table 'orders' in shop.sqlite: the tables are regions, sales",
        ),
        (
            {"source": "sales.parquet", "table": "sales"},
            "sales.parquet is a parquet file: table is only for SQLite files",
        ),
        ({"source": "nowhere"}, "no dataset or file 'nowhere': the datasets in "),
    ],
    ids=["sqlite-no-table", "sqlite-unknown-table", "table-for-parquet", "unknown-source"],
)
def test_load_errors_name_what_exists(
    use: Call, copies: dict[str, Path], arguments: dict[str, str], message: str
) -> None:
    if arguments["source"] != "nowhere":
        arguments = arguments | {"source": str(copies["sqlite"].parent / arguments["source"])}
    with pytest.raises(ToolError) as info:
        use("load_dataset", **arguments)
    assert message in str(info.value)
    if arguments["source"] == "nowhere":
        assert str(info.value).split(" are ")[1].startswith("sales;")


def test_sqlite_with_one_table_needs_no_table_name(use: Call, tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "one.db") as connection:
        pd.DataFrame({"a": [1, 2]}).to_sql("only", connection, index=False)
    out = use("load_dataset", source=str(tmp_path / "one.db"))
    assert (out["table"], out["rows"]) == ("only", 2)


# --- errors the model can fix -------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "wrong"),
    [
        ("aggregate", {"metrics": ["Revenue"]}, "Revenue"),
        ("aggregate", {"metrics": ["revenue"], "group_by": ["Region"]}, "Region"),
        ("aggregate", {"metrics": ["revenue"], "time_column": "day", "grain": "unknown"}, "day"),
        ("segment_metric", {"metric": "revenue", "by": "store"}, "store"),
        ("parse_datetime", {"column": "when"}, "when"),
        ("compute_summary_stats", {"columns": ["revenue", "profit"]}, "profit"),
        ("compute_correlation", {"columns": ["units", "price"]}, "price"),
        ("detect_anomalies", {"metric": "sales"}, "sales"),
        ("plot_line", {"x": "date", "y": "revenue", "color": "category"}, "category"),
        ("plot_bar", {"x": "segment", "y": "revenue"}, "segment"),
        ("plot_histogram", {"column": "price"}, "price"),
    ],
)
def test_an_unknown_column_is_named_with_the_columns_there_are(
    use: Call, tool: str, arguments: dict[str, Any], wrong: str
) -> None:
    use("load_dataset")
    with pytest.raises(ToolError) as info:
        use(tool, **arguments)
    assert str(info.value).startswith(f"no column {wrong!r}: the columns are {COLUMNS}")


def test_a_near_miss_gets_a_suggestion(use: Call) -> None:
    use("load_dataset")
    with pytest.raises(ToolError, match=r"\(did you mean 'revenue'\?\)$"):
        use("aggregate", metrics=["Revenue"])


def test_a_frame_named_after_its_dataset_is_that_frame(use: Call) -> None:
    """`load_dataset(source="sales")` keeps the frame `data`; `data="sales"` reads it (the
    1.5B names it so), and a name that is neither is still refused."""
    use("load_dataset", source="sales")
    by_dataset = use("aggregate", metrics=["revenue"], data="sales")
    by_frame = use("aggregate", metrics=["revenue"], data="data")
    assert by_dataset["head"] == by_frame["head"]
    with pytest.raises(ToolError, match=r"^no table 'orders': the tables are data, "):
        use("aggregate", metrics=["revenue"], data="orders")


def test_wrong_types_and_missing_tables(use: Call) -> None:
    with pytest.raises(ToolError, match=r"^no table 'data': no table is loaded yet; make one"):
        use("compute_summary_stats")
    use("load_dataset")
    with pytest.raises(ToolError, match=r"^no table 'totals': the tables are data; make one first"):
        use("plot_line", data="totals", x="date", y="revenue")
    with pytest.raises(
        ToolError,
        match=r"^column 'region' is str, not numbers, so it cannot be used for agg='sum'; "
        r"the numeric columns are units, revenue$",
    ):
        use("aggregate", metrics=["region"])
    with pytest.raises(ToolError, match=r"^column 'units' holds numbers"):
        use("parse_datetime", column="units")
    with pytest.raises(ToolError, match=r"^grain='month' needs time_column"):
        use("aggregate", metrics=["revenue"], grain="month")
    # "unknown" names no period: with no time column, nothing is grouped by time.
    overall = use("aggregate", metrics=["revenue"], grain="unknown")
    assert overall["rows"] == 1
    assert "grain" not in overall


# --- dates and grains ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("days", "grain", "periods"),
    [(31, "day", 31), (201, "week", 29), (701, "month", 24)],
    ids=["30-days", "200-days", "700-days"],
)
def test_an_unknown_grain_follows_the_span(
    use: Call, artifacts: dict[str, Any], days: int, grain: str, periods: int
) -> None:
    """Spans of 30, 200 and 700 days (first to last date) give day, week and month."""
    artifacts["data"] = daily(days).assign(sold=1)
    out = use("aggregate", metrics=["sold"], time_column="day", grain="unknown")
    assert out["grain"] == grain
    assert out["span_days"] == days - 1
    assert out["rows"] == periods
    result = artifacts["aggregated"]
    assert result["sold"].sum() == days
    if grain == "week":
        assert set(result["day"].dt.day_of_week) == {0}  # weeks start on Monday
    if grain == "month":
        assert set(result["day"].dt.day) == {1}


def test_an_unknown_grain_is_never_finer_than_the_data(
    use: Call, artifacts: dict[str, Any]
) -> None:
    """Monthly data over 200 days would be cut into mostly empty weeks: it stays monthly."""
    artifacts["data"] = pd.DataFrame(
        {"month": pd.date_range("2024-01-01", periods=7, freq="MS"), "sold": range(7)}
    )
    out = use("aggregate", metrics=["sold"], time_column="month", grain="unknown")
    assert (out["grain"], out["rows"]) == ("month", 7)
    assert "the data itself is monthly" in out["grain_reason"]


def test_explicit_grains_and_text_dates(use: Call, artifacts: dict[str, Any]) -> None:
    """Text dates are read on the fly; periods are labelled by their first day."""
    use("load_dataset")
    out = use("aggregate", metrics=["revenue", "units"], time_column="date", grain="quarter")
    assert (out["grain"], out["rows"]) == ("quarter", 8)
    assert [r["date"] for r in out["head"]] == [
        "2023-01-01",
        "2023-04-01",
        "2023-07-01",
        "2023-10-01",
        "2024-01-01",
    ]
    out = use("aggregate", metrics=["units"], agg="mean", group_by=["channel"], name="mean")
    assert out["rows"] == 2
    assert "grain" not in out


@pytest.mark.parametrize(
    ("grain", "first", "second"),
    [("year", "2023", "2024"), ("quarter", "2023-Q1", "2023-Q2"), ("month", "2023-01", "2023-02")],
)
def test_two_rows_say_their_difference_and_percent_change(
    use: Call, sales: pd.DataFrame, grain: str, first: str, second: str
) -> None:
    """Two totals (two periods, or two categories) come with the second's difference from the
    first, its change in percent and how many times the smaller the larger is, so that no
    model does the arithmetic; periods are labelled as their grain writes them."""
    use("load_dataset")
    label = {"year": "Y", "quarter": "Q", "month": "M"}[grain]
    sales = sales.assign(date=pd.to_datetime(sales.date))
    periods = sales.date.dt.to_period(label)
    two = sales[periods.isin(periods.drop_duplicates().iloc[:2])]
    use("filter_rows", start=str(two.date.min().date()), end=str(two.date.max().date()))
    out = use("aggregate", metrics=["revenue"], time_column="date", grain=grain)
    totals = two.groupby(two.date.dt.to_period(label))["revenue"].sum()
    change = out["change"]
    assert (change["from"], change["to"]) == (first, second)
    assert change["difference"] == pytest.approx(totals.iloc[1] - totals.iloc[0], abs=0.01)
    assert change["percent"] == pytest.approx((totals.iloc[1] / totals.iloc[0] - 1) * 100, abs=0.01)
    assert change["direction"] == ("up" if totals.iloc[1] > totals.iloc[0] else "down")
    larger, smaller = totals.sort_values(ascending=False)
    assert change["ratio"]["times"] == pytest.approx(larger / smaller, abs=0.001)
    channels = use("aggregate", metrics=["revenue"], group_by=["channel"], name="channels")
    assert (channels["change"]["from"], channels["change"]["to"]) == ("Online", "Store")
    assert "direction" not in channels["change"]  # two categories: neither comes after
    by_channel = two.groupby("channel")["revenue"].sum().sort_values(ascending=False)
    ratio = channels["change"]["ratio"]
    assert (ratio["larger"], ratio["smaller"]) == tuple(by_channel.index)
    assert list(channels["highest"]) == [by_channel.index[0]]  # two groups: which is higher
    assert "highest" not in out  # two periods: the change says it, up or down
    assert ratio["times"] == pytest.approx(by_channel.iloc[0] / by_channel.iloc[1], abs=0.001)


def test_more_rows_name_their_highest_and_lowest(use: Call, sales: pd.DataFrame) -> None:
    use("load_dataset")
    out = use("aggregate", metrics=["revenue"], time_column="date", grain="month")
    by_month = sales.groupby(pd.to_datetime(sales.date).dt.to_period("M"))["revenue"].sum()
    assert out["highest"] == {str(by_month.idxmax()): pytest.approx(by_month.max(), abs=0.01)}
    assert out["lowest"] == {str(by_month.idxmin()): pytest.approx(by_month.min(), abs=0.01)}
    assert out["mean"] == pytest.approx(by_month.mean(), abs=0.01)
    far = (by_month - by_month.mean()).abs().idxmax()
    assert out["furthest"] == {str(far): pytest.approx(by_month[far], abs=0.01)}
    by_both = use("aggregate", metrics=["revenue"], group_by=["region", "channel"], name="both")
    cells = sales.groupby(["region", "channel"])["revenue"].sum()
    assert list(by_both["highest"]) == [" / ".join(cells.idxmax())]
    regions = sales.groupby("region")["revenue"].sum()
    shares = use("aggregate", metrics=["revenue"], group_by=["region"], name="regions")["shares"]
    assert list(shares) == list(regions.sort_values(ascending=False).index)
    assert shares == pytest.approx((regions / regions.sum() * 100).to_dict(), abs=0.01)
    assert "shares" not in out  # totals per month: a share of a period is not asked so
    # Several metrics, or one total: nothing to read off.
    two = use("aggregate", metrics=["revenue", "units"], group_by=["region"], name="two")
    total = use("aggregate", metrics=["revenue"], name="total")
    assert not {"change", "highest"} & (two.keys() | total.keys())


def test_groups_over_two_periods_say_each_group_s_change_largest_first(
    use: Call, sales: pd.DataFrame
) -> None:
    use("load_dataset")
    out = use(
        "aggregate", metrics=["revenue"], group_by=["region"], time_column="date", grain="year"
    )
    by_year = sales.assign(year=sales.date.str[:4]).pivot_table(
        index="region", columns="year", values="revenue", aggfunc="sum"
    )
    percent = ((by_year["2024"] / by_year["2023"] - 1) * 100).sort_values(ascending=False)
    growth = out["growth"]
    assert (growth["from"], growth["to"], growth["by"]) == ("2023", "2024", "region")
    assert [r["group"] for r in growth["rows"]] == list(percent.index)
    for row in growth["rows"]:
        assert row["percent"] == pytest.approx(percent[row["group"]], abs=0.01)
        change = by_year.loc[row["group"], "2024"] - by_year.loc[row["group"], "2023"]
        assert row["difference"] == pytest.approx(change, abs=0.01)
    # Over more periods than two, or with no group, there is no such reading.
    months = use("aggregate", metrics=["revenue"], group_by=["region"], time_column="date")
    assert "growth" not in months


def test_parse_datetime_with_a_format_and_bad_values(use: Call, artifacts: dict[str, Any]) -> None:
    artifacts["data"] = pd.DataFrame({"when": ["31/01/2024", "29/02/2024", "soon", None]})
    out = use("parse_datetime", column="when", format="%d/%m/%Y", name="parsed")
    assert (out["min"], out["max"]) == ("2024-01-31", "2024-02-29")
    assert (out["unparsed"], out["unparsed_examples"]) == (1, ["soon"])
    assert artifacts["data"]["when"][0] == "31/01/2024"  # kept as it was: name was given
    assert artifacts["parsed"]["when"][0] == pd.Timestamp("2024-01-31")
    with pytest.raises(ToolError, match=r"^no value of column 'when' is a date in format '%Y'"):
        use("parse_datetime", column="when", format="%Y")
    artifacts["data"] = pd.DataFrame({"day": [20240131, 20240229]})
    out = use("parse_datetime", column="day", format="%Y%m%d")
    assert out["max"] == "2024-02-29"


# --- reshaping and statistics -------------------------------------------------------------


def test_segments_are_largest_first_with_shares(use: Call, sales: pd.DataFrame) -> None:
    use("load_dataset")
    out = use("segment_metric", metric="revenue", by="region")
    expected = sales.groupby("region")["revenue"].sum().sort_values(ascending=False)
    assert list(out["values"]) == list(expected.index)
    assert out["segments"] == 4
    assert out["total"] == pytest.approx(sales["revenue"].sum())
    assert sum(out["shares"].values()) == pytest.approx(100, abs=0.05)
    assert out["head"][0]["share"] == pytest.approx(expected.iloc[0] / expected.sum() * 100, 0.01)
    out = use("segment_metric", metric="units", by="channel", agg="mean")
    assert "shares" not in out
    assert list(out["columns"]) == ["channel", "units"]


def test_summary_stats_and_correlation(use: Call, sales: pd.DataFrame) -> None:
    use("load_dataset")
    stats = use("compute_summary_stats")["stats"]
    assert list(stats) == ["units", "revenue"]
    revenue = stats["revenue"]
    assert revenue["count"] == 29240
    for key in ("mean", "std", "min", "max"):
        assert revenue[key] == pytest.approx(sales["revenue"].agg(key), rel=1e-4), key
    for q in (10, 25, 50, 75, 90):
        assert revenue[f"{q}%"] == pytest.approx(sales["revenue"].quantile(q / 100), rel=1e-4)
    iqr = sales["revenue"].quantile(0.75) - sales["revenue"].quantile(0.25)
    assert revenue["iqr"] == pytest.approx(iqr, rel=1e-4)
    assert revenue["skew"] > 1
    assert revenue["shape"] == "strongly right-skewed"
    # Per period: the statistics of the daily totals (a median daily revenue).
    daily = use("compute_summary_stats", columns=["revenue"], time_column="date", per="day")
    totals = sales.groupby("date")["revenue"].sum()
    assert daily["per"] == "day"
    assert daily["stats"]["revenue"]["count"] == len(totals) == 731
    assert daily["stats"]["revenue"]["50%"] == pytest.approx(totals.median(), rel=1e-6)
    assert daily["stats"]["revenue"]["std"] == pytest.approx(totals.std(), rel=1e-6)
    with pytest.raises(ToolError, match=r"^per='month' needs time_column"):
        use("compute_summary_stats", per="month")
    region = use("compute_summary_stats", columns=["region"])["stats"]["region"]
    assert (region["unique"], region["freq"]) == (4, 7310)

    out = use("compute_correlation", columns=["units", "revenue"])
    r = sales["units"].corr(sales["revenue"])
    assert out["matrix"]["units"]["revenue"] == pytest.approx(r, abs=1e-4)
    assert out["pairs"] == [{"a": "units", "b": "revenue", "r": out["matrix"]["units"]["revenue"]}]
    with pytest.raises(ToolError, match=r"^column 'region' is str, not numbers"):
        use("compute_correlation", columns=["units", "region"])


# --- anomalies -------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["zscore", "iqr"])
def test_the_injected_spikes_are_the_anomalies_of_daily_revenue(
    use: Call, artifacts: dict[str, Any], sample: ModuleType, sales: pd.DataFrame, method: str
) -> None:
    """Daily totals made by a step before, or by the tool itself (`per`, which names the
    highest and the lowest day too), give the same days."""
    use("load_dataset")
    use("aggregate", metrics=["revenue"], time_column="date", grain="day", name="daily")
    spikes = {s.date.isoformat() for s in sample.SPIKES}
    for out in (
        use("detect_anomalies", metric="revenue", data="daily", method=method),
        use("detect_anomalies", metric="revenue", method=method, time_column="date", per="day"),
    ):
        assert out["checked"] == 731
        assert out["anomalies"] == len(spikes) == 5
        assert {r["date"] for r in out["head"]} == spikes
        assert all(r["score"] > 3 for r in out["head"])
        assert len(artifacts["anomalies"]) == 5
    daily = sales.groupby("date")["revenue"].sum()
    assert out["highest"] == {daily.idxmax(): pytest.approx(daily.max(), abs=0.01)}
    assert out["lowest"] == {daily.idxmin(): pytest.approx(daily.min(), abs=0.01)}
    far = (daily - daily.mean()).abs().idxmax()
    assert out["furthest"] == {far: pytest.approx(daily[far], abs=0.01)}


def test_the_spiked_rows_top_the_anomalies_of_raw_rows(use: Call, sample: ModuleType) -> None:
    """Row by row, categories differ in level, so more rows stand out; the spikes lead."""
    use("load_dataset")
    out = use("detect_anomalies", metric="revenue")
    flagged = {(r["date"], r["region"], r["product_category"], r["channel"]) for r in out["head"]}
    assert flagged == {
        (s.date.isoformat(), s.region, s.product_category, s.channel) for s in sample.SPIKES
    }
    assert out["head"][0]["score"] > 40


# --- charts and files ----------------------------------------------------------------------


def test_bar_chart_and_histogram(use: Call, tmp_path: Path) -> None:
    use("load_dataset")
    bar = use("plot_bar", x="region", y="revenue", color="channel", title="Revenue")
    assert (bar["chart"], bar["series"], bar["bars"]) == ("bar", 2, 8)
    assert bar["summed"] == "rows sharing region, channel were summed"
    assert Path(bar["file"]) == tmp_path / "out" / "revenue_by_region_and_channel.png"
    assert png_size(Path(bar["file"]))[0] >= 800

    histogram = use("plot_histogram", column="units", bins=40, filename="units.jpg")
    assert Path(histogram["file"]).name == "units.png"
    assert (histogram["chart"], histogram["bins"]) == ("histogram", 40)
    assert png_size(Path(histogram["file"]))[0] >= 800

    with pytest.raises(ToolError, match=r"^'date' has 731 values; a bar chart holds at most 40"):
        use("plot_bar", x="date", y="revenue")
    with pytest.raises(ToolError, match="must be a plain file name"):
        use("plot_line", x="date", y="revenue", filename="../escape.png")


@pytest.mark.parametrize("chart", ["plot_line", "plot_bar"])
def test_a_color_that_is_the_x_column_is_no_color(use: Call, chart: str) -> None:
    """x="region", color="region" (the 1.5B's): one series, not pandas' "cannot insert
    region, already exists"."""
    use("load_dataset")
    drawn = use(chart, x="region", y="revenue", color="region")
    assert "color" not in drawn
    assert drawn["series"] == 1


def test_save_markdown_and_parquet(use: Call, artifacts: dict[str, Any]) -> None:
    use("load_dataset")
    use("segment_metric", metric="revenue", by="product_category")
    out = use("save_dataframe", data="segments", format="markdown", filename="shares")
    path = Path(out["file"])
    assert path.name == "shares.md"
    lines = path.read_text().splitlines()
    assert lines[0] == "| product_category | revenue | share |"
    assert lines[1] == "| --- | ---: | ---: |"
    assert len(lines) == 2 + 5
    assert out["preview"] == "\n".join(lines)

    out = use("save_dataframe", data="segments", format="parquet")
    assert "preview" not in out
    back = pd.read_parquet(out["file"])
    pd.testing.assert_frame_equal(back, artifacts["segments"])
