"""The four retrieval strategies are data: budgets, tools, instructions."""

from __future__ import annotations

import pytest

from agentrt import Workspace
from tests.knowledge.support import SAMPLE

SHELL = {"ls", "cat", "head", "grep", "wc"}


@pytest.fixture(scope="module")
def workspace() -> Workspace:
    return Workspace(SAMPLE)


class TestStrategies:
    def test_budgets_and_tools(self, workspace: Workspace) -> None:
        """The retrieval budgets are 1 / 3 / 5 / 5 turns; each strategy has one more turn, in
        which it calls finish_retrieval with the results in hand."""
        strategies = workspace.strategies
        assert {name: s.step_budget - 1 for name, s in strategies.items()} == {
            "aggregate": 1,
            "list": 3,
            "targeted": 5,
            "exploratory": 5,
        }
        tools = {name: set(s.tools) for name, s in strategies.items()}
        assert tools["aggregate"] == {"count_items_or_chunks", "finish_retrieval"}
        assert "search_content" not in tools["aggregate"]
        assert SHELL.isdisjoint(tools["list"])
        assert tools["targeted"] >= SHELL
        assert tools["exploratory"] >= SHELL
        assert all("finish_retrieval" in t for t in tools.values())
        # Their answer is finish_retrieval's: no turn may answer in text.
        assert all(s.calls_only for s in strategies.values())

    @pytest.mark.parametrize("name", ["aggregate", "list", "targeted", "exploratory"])
    def test_instructions_say_the_rules(self, workspace: Workspace, name: str) -> None:
        text = workspace.render(workspace.strategies[name].instructions, tools=[])
        for rule in (
            "in the language of the user's question",
            "Do not translate queries",
            "Search every knowledge base that\n   could hold the answer",
            "Follow up at least once",
            "call\nfinish_retrieval",
            # The contexts, as contexts.yaml declares them:
            "- guides: Heliograph station guides. Installation, configuration",
            "- support: Support articles.",
        ):
            assert rule in text, rule

    def test_each_strategy_says_how_it_differs(self, workspace: Workspace) -> None:
        def render(name: str) -> str:
            return workspace.render(workspace.strategies[name].instructions, tools=[])

        assert "Use count_items_or_chunks only" in render("aggregate")
        assert "includeContent false" in render("list")
        assert 'searchMethod "keyword"' in render("targeted")
        assert "never start with item_names alone" in render("targeted")
        assert "Counting tools are not for this question" in render("exploratory")

    def test_contexts_are_enabled_per_tool(self, workspace: Workspace) -> None:
        assert workspace.knowledge is not None
        assert not workspace.knowledge.enabled("retrieve_knowledge_graph", "support")
        assert workspace.knowledge.enabled("search_content", "support")
