"""The copilot workspace's tools on a real database: grounding, guarded SQL, charts, examples."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agentrt import ToolError, Workspace
from agentrt.exceptions import QueryRefused, WorkspaceError
from agentrt.sql.examples import Example, ExampleSelector, fitting, load_examples
from agentrt.sql.grounding import SchemaIndex
from agentrt.sql.guard import GuardPolicy, SqlGuard
from agentrt.vectors.embedder import Embedder
from tests.helpers import tool_context

COPILOT = Path(__file__).parents[2] / "workspaces" / "dbcopilot"


@pytest.fixture(scope="module")
def workspace() -> Workspace:
    return Workspace(COPILOT)


@pytest.fixture(scope="module")
def copilot(
    workspace: Workspace, embedder: Embedder, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    from .shop import make_shop

    shop = make_shop(tmp_path_factory.mktemp("copilot") / "shop.sqlite")
    module = sys.modules[workspace.tools["run_sql"].fn.__module__]
    return module.Copilot(
        guard=SqlGuard(shop, GuardPolicy(max_rows=50)),
        index=SchemaIndex.build(shop, embedder, None),
        examples=ExampleSelector.build(load_examples(COPILOT / "examples"), embedder, None),
    )


class TestWorkspace:
    def test_loads_with_its_tools_and_metadata(self, workspace: Workspace) -> None:
        assert {"ground_schema", "run_sql", "plot_line", "plot_bar"} <= set(workspace.tools)
        assert workspace.registry.tools_with("query_database") == ["run_sql"]
        assert workspace.strategies["copilot"].tools[:2] == ["ground_schema", "run_sql"]


class TestTools:
    def test_ground_schema_gives_only_the_grounded_schema_and_examples(
        self, workspace: Workspace, copilot: Any, tmp_path: Path
    ) -> None:
        ctx = tool_context({"copilot": copilot}, tmp_path)
        out = workspace.tools["ground_schema"].fn(ctx, question="Who sold the most yoga mats?")
        assert "sales(" in out["schema"]
        assert "store_staff" not in out["schema"]
        assert "products.name = 'Yoga Mat'" in out["schema"]
        assert out["examples"][0].startswith("Question: Who sold the most units?")
        assert len(out["examples"]) == 3

    def test_the_configured_synonyms_file_is_applied(
        self, workspace: Workspace, shared_shop: Path, tmp_path: Path
    ) -> None:
        """`synonyms:` in copilot.yaml names a file beside it: "desk light" is 'Desk Lamp'."""
        (tmp_path / "synonyms.yaml").write_text("desk light: products.name=Desk Lamp\n")
        config = tmp_path / "copilot.yaml"
        config.write_text(f"database: {shared_shop}\nsynonyms: synonyms.yaml\n")
        module = sys.modules[workspace.tools["run_sql"].fn.__module__]
        copilot = module.Copilot.from_config(config)
        grounding = copilot.index.ground("How many desk lights were sold?")
        assert grounding.contains(values=["products.name=Desk Lamp"])
        assert grounding.values[0].literal

    def test_a_missing_column_names_an_inferred_join(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        """The copilot's guard suggests the joins its schema index found, declared or not."""
        database = tmp_path / "world.sqlite"
        with sqlite3.connect(database) as connection:
            connection.executescript(
                "CREATE TABLE country (code TEXT PRIMARY KEY, name TEXT, continent TEXT);"
                "CREATE TABLE city (id INTEGER PRIMARY KEY, name TEXT, country_code TEXT);"
                "INSERT INTO country VALUES ('FR', 'France', 'Europe');"
                "INSERT INTO city VALUES (1, 'Lyon', 'FR');"
            )
        connection.close()
        config = tmp_path / "copilot.yaml"
        config.write_text(f"database: {database}\n")
        module = sys.modules[workspace.tools["run_sql"].fn.__module__]
        ctx = tool_context({"copilot": module.Copilot.from_config(config)}, tmp_path)
        with pytest.raises(ToolError) as caught:
            workspace.tools["run_sql"].fn(ctx, sql="SELECT name, continent FROM city")
        assert str(caught.value).endswith(
            "continent is a column of country, which the query does not read: "
            "JOIN country ON country.code = city.country_code, then read country.continent"
        )

    def test_run_sql_summarises_within_bounds_and_keeps_the_table(
        self, workspace: Workspace, copilot: Any, tmp_path: Path
    ) -> None:
        ctx = tool_context({"copilot": copilot}, tmp_path)
        out = workspace.tools["run_sql"].fn(ctx, sql="SELECT id, sold_on, quantity FROM sales")
        assert out["columns"] == ["id", "sold_on", "quantity"]
        assert (out["rows"], out["more_rows"], out["shown"]) == (50, True, 20)
        assert len(json.dumps(out)) <= 4000
        assert len(ctx.artifacts["result"]) == 50

    def test_no_row_or_only_null_says_what_to_check(
        self, workspace: Workspace, copilot: Any, tmp_path: Path
    ) -> None:
        ctx = tool_context({"copilot": copilot}, tmp_path)
        run_sql = workspace.tools["run_sql"].fn
        for sql in ["SELECT name FROM products WHERE name = 'Yoga'", "SELECT avg(NULL)"]:
            assert run_sql(ctx, sql=sql)["empty"].startswith("No row, or only NULL: ")
        assert "empty" not in run_sql(ctx, sql="SELECT count(*) FROM products WHERE id < 0")

    def test_a_result_feeds_the_chart_tools(
        self, workspace: Workspace, copilot: Any, tmp_path: Path
    ) -> None:
        ctx = tool_context({"copilot": copilot}, tmp_path)
        workspace.tools["run_sql"].fn(
            ctx,
            sql="SELECT substr(sold_on, 1, 7) AS month, sum(quantity) AS units FROM sales "
            "GROUP BY month ORDER BY month",
            name="trend",
        )
        chart = workspace.tools["plot_line"].fn(ctx, x="month", y="units", data="trend")
        assert Path(chart["file"]).read_bytes().startswith(b"\x89PNG")

    def test_a_refusal_reaches_the_model_with_its_reason(
        self, workspace: Workspace, copilot: Any, tmp_path: Path
    ) -> None:
        ctx = tool_context({"copilot": copilot}, tmp_path)
        with pytest.raises(QueryRefused, match=r"only reading statements") as caught:
            workspace.tools["run_sql"].fn(ctx, sql="DELETE FROM sales")
        assert isinstance(caught.value, ToolError)


class TestSummary:
    def test_long_cells_and_many_columns_stay_bounded(self, shared_shop: Path) -> None:
        guard = SqlGuard(shared_shop)
        wide = ", ".join(f"printf('%.300c', 'x') AS c{i}" for i in range(30))
        out = guard.execute(f"SELECT {wide} FROM sales LIMIT 5").summary(max_chars=3000)
        assert len(json.dumps(out)) <= 3000
        assert out["rows"] == 5
        assert out["shown"] < 5
        assert all(len(c) <= 80 for row in out["head"] for c in row)


class TestExampleSelector:
    EXAMPLES: ClassVar[list[Example]] = [
        Example(question="Who sold the most units?", sql="SELECT 1"),
        Example(question="Which city has the most customers?", sql="SELECT 2"),
        Example(question="Draw the monthly revenue trend", plan="query, then plot_line"),
    ]

    def test_the_nearest_examples_first(self, embedder: Embedder) -> None:
        selector = ExampleSelector.build(self.EXAMPLES, embedder, None)
        (best,) = selector.select("which employee had the highest sales?", 1)
        assert best.sql == "SELECT 1"
        two = selector.select("plot revenue per month", 2)
        assert two[0].plan == "query, then plot_line"

    def test_the_dialogue_counts(self, embedder: Embedder) -> None:
        """A follow-up ("and as a chart?") is matched with the turn before it."""
        selector = ExampleSelector.build(self.EXAMPLES, embedder, None)
        (best,) = selector.select(
            "and as a chart?", 1, context=["how many customers are there in each city"]
        )
        assert best.sql == "SELECT 2"

    def test_embedded_once_then_cached(self, embedder: Embedder, tmp_path: Path) -> None:
        assert ExampleSelector.build(self.EXAMPLES, embedder, tmp_path).embedded == 3
        assert ExampleSelector.build(self.EXAMPLES, embedder, tmp_path).embedded == 0
        edited = [*self.EXAMPLES[:2], Example(question="Revenue by month", sql="SELECT 3")]
        assert ExampleSelector.build(edited, embedder, tmp_path).embedded == 1

    def test_only_examples_that_would_run_on_the_database_are_kept(
        self, copilot: Any, tmp_path: Path
    ) -> None:
        """Only the examples whose tables and columns the database has (and plans in words)
        are shown: the test shop has no customers, and its stores no region."""
        examples = load_examples(COPILOT / "examples")
        unfit = ["How many customers live in each city?", "Compare the revenue of the regions"]
        assert [e.question for e in fitting(examples, copilot.guard)] == [
            e.question for e in examples if not e.question.startswith(tuple(unfit))
        ]
        other = tmp_path / "other.sqlite"
        with sqlite3.connect(other) as db:
            db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, city TEXT)")
            db.execute("CREATE TABLE products (id INTEGER PRIMARY KEY, list_price NUMERIC)")
        kept = fitting([*examples, *self.EXAMPLES[2:]], SqlGuard(other))
        assert [e.question for e in kept] == [
            "How many customers live in each city?",
            "Draw the monthly revenue trend",
        ]

    def test_a_bad_examples_file_names_itself(self, tmp_path: Path) -> None:
        (tmp_path / "bad.yaml").write_text("- question: What?\n")
        with pytest.raises(WorkspaceError, match=r"bad.yaml: entry 0: .*needs `sql`, `plan`"):
            load_examples(tmp_path)
