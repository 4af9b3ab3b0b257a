"""Hybrid tool retrieval: FTS5 BM25 beside the embedding, multi-intent splitting, near-duplicate
collapse and the "no tool fits" signal, on the packaged all-MiniLM-L6-v2 model."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from agentrt import Agent, AgentSettings, ScriptedModel, ToolsNarrowedEvent, Workspace
from agentrt.catalog import lexical
from agentrt.catalog.fusion import fuse, round_robin, split_intents
from agentrt.catalog.index import Retrieval, ToolIndex, narrow
from agentrt.catalog.lexical import LexicalIndex, name_words
from agentrt.catalog.metadata import CapabilityMap, Registry, ToolMetadata
from agentrt.vectors.embedder import Embedder, load_embedder
from tests.helpers import ROOT, TEST_WORKSPACE, check_stream, finish, last, run_python


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return load_embedder()


def meta(name: str, description: str, **fields: list[str]) -> ToolMetadata:
    return ToolMetadata(name=name, description=description, **fields)


CATALOG = [
    meta("send_email", "Send an email to recipients.", params=["to", "body"]),
    meta("list_servers", "Show the cloud servers of the account."),
    meta("add_server", "Create a new cloud server in the account."),
    meta("get_weather", "Current temperature and wind for a city."),
]


class TestLexical:
    def index(self) -> LexicalIndex:
        return LexicalIndex([m.name for m in CATALOG], [m.document() for m in CATALOG])

    def test_the_word_cache_stays_bounded(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A long-running server's queries bring ever new words: the oldest are forgotten, and
        a forgotten word is counted again, the same."""
        monkeypatch.setattr(lexical, "DF_CACHE", 8)
        index = self.index()
        first = index.search("send email", 3)
        for n in range(100):
            index.search(f"word{n} email", 3)
        assert len(index._df) <= 8
        assert index.search("send email", 3) == first

    def test_names_are_words(self) -> None:
        assert name_words("send_email") == "send email"
        assert name_words("getHTTPStatus") == "get http status"
        assert name_words("gh.create-issue") == "gh create issue"

    def test_the_verb_decides(self) -> None:
        """The words a dense vector blurs: "list" servers is not "add" a server."""
        result = self.index().search("list the servers", 4)
        assert result.ranked[0][0] == 1
        assert result.coverage == 1.0

    def test_stemmed(self) -> None:
        assert self.index().search("emails", 4).ranked[0][0] == 0

    @pytest.mark.parametrize(
        "query", ['"', 'NEAR(a b) AND "x', "send* -email ^weather", "(((", "a:b OR", "{}"]
    )
    def test_fts_syntax_in_user_text_never_raises(self, query: str) -> None:
        self.index().search(query, 4)

    def test_words_the_catalog_does_not_know(self) -> None:
        result = self.index().search("zyzzyva quokka", 4)
        assert (result.ranked, result.coverage) == ([], 0.0)
        assert self.index().search("  ?! ", 4).coverage == 0.0


class TestFusion:
    @pytest.mark.parametrize(
        ("text", "parts"),
        [
            ("total revenue per region", ["total revenue per region"]),
            ("sales and margin per region", ["sales and margin per region"]),
            ("load the csv; then plot it", ["load the csv", "plot it"]),
            ("load the csv and then plot it", ["load the csv", "plot it"]),
            ("email Bob. Also book a room", ["email Bob", "book a room"]),
            ("fetch the page, and summarise it", ["fetch the page", "summarise it"]),
        ],
    )
    def test_split(self, text: str, parts: list[str]) -> None:
        expected = parts if len(parts) == 1 else [*parts, text]
        assert split_intents(text) == expected

    def test_round_robin_keeps_each_best(self) -> None:
        major = [(1, 0.9), (2, 0.8), (3, 0.7)]
        minor = [(7, 0.2), (1, 0.1)]
        assert [row for row, _ in round_robin([major, minor])] == [1, 7, 2, 3]

    def test_lexical_weighs_by_coverage(self) -> None:
        dense = [(1, 0.6), (2, 0.5), (3, 0.1)]
        lexical = [(2, 9.0), (3, 1.0)]
        assert fuse(dense, lexical, 0.0)[0][0] == 1
        assert fuse(dense, lexical, 1.0)[0][0] == 2
        assert all(0.0 <= s <= 1.0 for _, s in fuse(dense, lexical, 1.0))


def test_a_duplicate_of_a_fixed_tool_is_not_offered() -> None:
    """Retrieval found `sendEmail`, standing for the template's `send_email`: offering it would
    offer the same tool twice."""
    out = narrow(
        template=["send_email"],
        retrieved=[("sendEmail", 0.9), ("get_weather", 0.5)],
        safety=[],
        cap=5,
        duplicates={"sendEmail": ["send_email"]},
    )
    assert [(t.name, t.source) for t in out] == [
        ("send_email", "template"),
        ("get_weather", "retrieved"),
    ]


class TestHybridIndex:
    async def test_nothing_asked_nothing_found(self, embedder: Embedder) -> None:
        index = await ToolIndex.abuild(Workspace(TEST_WORKSPACE).registry, embedder, None)
        assert await index.query([], 3) == Retrieval()
        found = await index.query(["?!"], 3)
        assert len(found.tools) == 3

    async def test_near_duplicates_collapse_and_are_reported(self, embedder: Embedder) -> None:
        """Same name but for case and separators, or the same metadata under two names (two
        MCP servers with one tool): one entry. Vendor variants stay apart."""
        tools = [
            *CATALOG,
            meta("sendEmail", "Deliver an email message.", params=["to"]),
            meta("gh_create_issue", "Open an issue in a repository.", params=["title"]),
            meta("gl_create_issue", "Open an issue in a repository.", params=["title"]),
            meta("send_email_gmail", "Send an email through Gmail.", params=["to", "body"]),
        ]
        capabilities = CapabilityMap(version=1, capabilities={}, core=[], requirements={})
        registry = Registry({t.name: t for t in tools}, capabilities)
        index = await ToolIndex.abuild(registry, embedder, None)

        found = await index.query(["open an issue in the repository"], 3)
        names = [n for n, _ in found.tools]
        assert len({"gh_create_issue", "gl_create_issue"} & set(names)) == 1
        best = names[0]
        assert found.duplicates[best] == [
            {"gh_create_issue", "gl_create_issue"}.difference({best}).pop()
        ]

        found = await index.query(["send an email to Ann"], 8)
        names = [n for n, _ in found.tools]
        assert "send_email_gmail" in names
        assert len({"send_email", "sendEmail"} & set(names)) == 1
        assert len(names) == len(tools) - 2

    async def test_a_minor_request_keeps_its_tool(self, embedder: Embedder) -> None:
        index = await ToolIndex.abuild(Workspace(TEST_WORKSPACE).registry, embedder, None)
        found = await index.query(["read page 2 of the manual, and then add 2 and 3"], 2)
        assert {n for n, _ in found.tools} == {"read_page", "add"}

    async def test_fit_is_lower_when_no_tool_serves(self, embedder: Embedder) -> None:
        index = await ToolIndex.abuild(Workspace(TEST_WORKSPACE).registry, embedder, None)
        serving = await index.query(["read page 2 of the manual"], 3)
        none = await index.query(["compose a sonnet about autumn leaves in Portuguese"], 3)
        assert serving.fit is not None
        assert none.fit is not None
        assert 0.0 <= none.fit < serving.fit <= 1.0


PICKY = """description: Retrieval that offers nothing when nothing fits.
planner: react
step_budget: 2
tools: [echo]
retrieve: 2
min_fit: 0.12
instructions: testing.j2
"""


class TestNoToolFits:
    @pytest.fixture
    def agent(self, tmp_path: Path) -> Agent:
        root = Path(shutil.copytree(TEST_WORKSPACE, tmp_path / "ws"))
        (root / "strategies" / "picky.yaml").write_text(PICKY)
        return Agent(
            workspace=Workspace(root),
            model=ScriptedModel([finish("done")]),
            settings=AgentSettings(trajectory_dir=tmp_path / "trajectories", cache_dir=tmp_path),
        )

    async def narrowed(self, agent: Agent, query: str) -> tuple[ToolsNarrowedEvent, str]:
        events = [e async for e in agent.run(query, strategy="picky")]
        check_stream(events)
        assert last(events).status == "ok"
        (event,) = [e for e in events if isinstance(e, ToolsNarrowedEvent)]
        assert isinstance(agent.model, ScriptedModel)
        prompt = "\n".join(str(m.content) for m in agent.model.requests[-1].messages)
        return event, prompt

    async def test_nothing_retrieved_is_offered_and_the_model_is_told(self, agent: Agent) -> None:
        event, prompt = await self.narrowed(
            agent, "compose a sonnet about autumn leaves in Portuguese"
        )
        assert event.no_fit
        assert event.fit is not None
        assert event.fit < 0.12
        assert {t.source for t in event.tools} == {"builtin", "template"}
        assert "NO TOOL FITS" in prompt

    async def test_a_request_a_tool_serves_gets_it(self, agent: Agent) -> None:
        event, prompt = await self.narrowed(agent, "Read page 2 of the manual")
        assert not event.no_fit
        assert event.fit is not None
        assert event.fit >= 0.12
        assert "read_page" in {t.name for t in event.tools if t.source == "retrieved"}
        assert "NO TOOL FITS" not in prompt


class TestCodeFirstMinFit:
    """A code-first agent's tools are all its strategy's: below `min_fit` none is offered."""

    @staticmethod
    def weather(city: str) -> str:
        """Current weather and temperature forecast for a city."""
        return f"sunny in {city}"

    @staticmethod
    def uv_index(city: str) -> float:
        """Today's UV index (sunburn risk) for a city."""
        return 3.0

    async def narrowed(self, tmp_path: Path, query: str) -> tuple[ToolsNarrowedEvent, str]:
        model = ScriptedModel([finish("done")])
        agent = Agent(
            model,
            tools=[self.weather, self.uv_index],
            min_fit=0.1,
            settings=AgentSettings(trajectory_dir=None, cache_dir=tmp_path),
        )
        events = [e async for e in agent.run(query)]
        check_stream(events)
        assert last(events).status == "ok"
        (event,) = [e for e in events if isinstance(e, ToolsNarrowedEvent)]
        prompt = "\n".join(str(m.content) for m in model.requests[-1].messages)
        return event, prompt

    async def test_an_off_topic_request_is_offered_no_tool(self, tmp_path: Path) -> None:
        event, prompt = await self.narrowed(tmp_path, "Book me a table for two tonight.")
        assert event.no_fit
        assert event.fit is not None
        assert event.fit < 0.1
        assert [t.name for t in event.tools] == ["finish"]
        assert "NO TOOL FITS" in prompt

    async def test_a_request_they_serve_is_offered_every_tool_in_order(
        self, tmp_path: Path
    ) -> None:
        event, prompt = await self.narrowed(tmp_path, "Will it rain in Lisbon tomorrow?")
        assert not event.no_fit
        assert event.fit is not None
        assert event.fit >= 0.1
        # The same list, in the same order, as without `min_fit`: retrieval only gates.
        assert [t.name for t in event.tools] == ["finish", "weather", "uv_index"]
        assert "NO TOOL FITS" not in prompt


def test_the_readme_snippet_runs_as_written(tmp_path: Path) -> None:
    """The tool retrieval section's snippet, run in a folder holding the test workspace."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Offering the right tools", 1)[1]
    found = re.search(r"^```python\n(.*?)^```$", section, re.DOTALL | re.MULTILINE)
    assert found is not None
    shutil.copytree(TEST_WORKSPACE, tmp_path / "tests" / "workspace")
    (tmp_path / "snippet.py").write_text(found.group(1), encoding="utf-8")
    done = run_python("snippet.py", cwd=tmp_path)
    printed = "fit 0.08 [('finish', 'builtin'), ('echo', 'template'), ('crash', 'retrieved'), "
    assert done.stdout.startswith(printed)
    assert printed in " ".join(section.split("\n"))
