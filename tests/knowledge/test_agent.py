"""The retrieval tool pack driven through an `Agent` by a scripted model, over the sample
workspace ingested for real (SQLite + FTS5, FAISS, all-MiniLM-L6-v2)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agentrt import (
    Agent,
    AgentSettings,
    Event,
    LocalModel,
    Message,
    ModelRequest,
    ScriptedModel,
    TextChunk,
    ToolCallEvent,
    ToolCallInvalidEvent,
    ToolFinishedEvent,
    ToolsNarrowedEvent,
    Workspace,
)
from agentrt.knowledge.answer import RetrievalResult
from agentrt.knowledge.search import KnowledgeBase
from agentrt.models.base import TOOL_RESULTS_NUDGE
from agentrt.models.scripted import ScriptItem
from tests.helpers import call, check_stream, last
from tests.knowledge.support import ingested_sample, tool_results


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, KnowledgeBase]:
    kb, _ = ingested_sample(tmp_path_factory.mktemp("knowledge"))
    return Workspace(kb.config.root), kb


@pytest.fixture
def workspace(sample: tuple[Workspace, KnowledgeBase]) -> Workspace:
    return sample[0]


def make_agent(workspace: Workspace, tmp_path: Path, turns: list[ScriptItem]) -> Agent:
    return Agent(
        workspace=workspace,
        model=ScriptedModel(turns),
        settings=AgentSettings(trajectory_dir=tmp_path / "trajectories"),
    )


def finished(events: Sequence[Event]) -> list[ToolFinishedEvent]:
    """The tool results in call order (they finish in any order)."""
    order = [e.call_id for e in events if isinstance(e, ToolCallEvent)]
    done = [e for e in events if isinstance(e, ToolFinishedEvent)]
    return sorted(done, key=lambda e: order.index(e.call_id))


def out(event: ToolFinishedEvent) -> Any:
    """A tool's JSON output, for reading in a test."""
    return event.output


def cite_first(request: ModelRequest) -> str:
    """Finish citing the first chunk of the first result of the last turn."""
    (result, *_) = tool_results(request)
    chunk = result["results"][0]["chunk"]
    return call("finish_retrieval", answer="Re-pair the station.", sources=[chunk])


class TestSearchAndCite:
    async def test_chunks_with_item_context_score_and_a_cited_answer(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        agent = make_agent(
            workspace,
            tmp_path,
            [
                call(
                    "search_content",
                    query="E42 clock drift",
                    knowledge_base="support",
                    searchMethod="keyword",
                    limit=3,
                ),
                cite_first,
            ],
        )
        run = await agent.run("What does E42 mean?", strategy="targeted")
        check_stream(list(run.trajectory.events))
        result = RetrievalResult.from_events(run.trajectory.events)
        assert result.status == "ok"
        best = result.chunks[0]
        assert (best.context, best.item, best.item_name) == (
            "support",
            "error-codes.html",
            "Console error codes",
        )
        assert best.heading == "Console error codes › E42 – clock drift"
        assert best.score > 0
        assert "two seconds" in best.text
        assert result.citations == [best]
        assert result.answer is not None
        assert result.answer.startswith("Re-pair the station.\n\nSources:\n")
        assert f"[{best.chunk}] Console error codes › Console error codes › E42" in result.answer

    @pytest.mark.parametrize(
        ("finish", "error"),
        [
            ({"answer": "Two years [c99999].", "sources": []}, "cites c99999, which no search"),
            ({"answer": "Two years.", "sources": ["c99999"]}, "cites c99999, which no search"),
            ({"answer": "Two years.", "sources": ["12"]}, "should match pattern"),
            ({"answer": "Two years.", "sources": [f"c{i}" for i in range(6)]}, "at most 5"),
            ({"answer": "Two years."}, "sources"),
        ],
        ids=["in the text", "in sources", "not an id", "six", "no sources"],
    )
    async def test_a_citation_never_found_or_malformed_is_refused(
        self, workspace: Workspace, tmp_path: Path, finish: dict[str, Any], error: str
    ) -> None:
        """A source no search returned is the tool's error; one that is no id, or a list
        past 5, is refused before it runs. The model reads why; the run goes on."""
        agent = make_agent(
            workspace,
            tmp_path,
            [
                call("search_content", query="warranty", knowledge_base="support"),
                call("finish_retrieval", **finish),
                cite_first_of_search,
            ],
        )
        run = await agent.run("How long is the warranty?", strategy="targeted")
        events = list(run.trajectory.events)
        refusals = [
            e.reason
            for e in events
            if isinstance(e, ToolCallInvalidEvent) and e.name == "finish_retrieval"
        ] + [
            str(e.error)
            for e in finished(events)
            if e.name == "finish_retrieval" and e.status == "error"
        ]
        assert len(refusals) == 1
        assert error in refusals[0]
        assert last(events).status == "ok"

    async def test_without_content_and_by_item_name(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        agent = make_agent(
            workspace,
            tmp_path,
            [
                call(
                    "search_content",
                    query="battery",
                    knowledge_base="guides",
                    includeContent=False,
                    item_names=["maintenance"],
                )
                + call("search_items_by_name", query="calibrating sensors"),
                call(
                    "search_content",
                    query="battery",
                    knowledge_base="guides",
                    item_names=["no such manual"],
                ),
                call("finish_retrieval", answer="Listed.", sources=[]),
            ],
        )
        run = await agent.run("Which guides talk of batteries?", strategy="list")
        search, by_name, bad = finished(run.trajectory.events)[:3]
        records = out(search)["results"]
        assert records
        assert {r["item"] for r in records} == {"maintenance.md"}
        assert all("text" not in r for r in records)
        assert out(by_name)["items"][0]["item"] == "calibration.md"
        assert "get_more_content_from_calibration" in out(by_name)["new_tools"]
        assert bad.status == "error"
        assert "no item of guides has a name containing 'no such manual'" in str(bad.error)


def cite_first_of_search(request: ModelRequest) -> str:
    """Finish citing the first chunk the first search of the run returned."""
    for message in request.messages:
        if message.role == "tool" and message.name == "search_content":
            chunk = json.loads(message.content)["results"][0]["chunk"]
            return call("finish_retrieval", answer=f"Two years [{chunk}].", sources=[])
    raise AssertionError("no search result to cite")


class TestDynamicTools:
    async def test_a_later_run_reads_adjacent_pages_without_searching(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        """The search finds the pairing section (page 4 of the installation guide) and offers
        page tools around it; the session's next run reads page 5 with one of them."""
        agent = make_agent(
            workspace,
            tmp_path,
            [
                call(
                    "search_content",
                    query="PAIR button radio icon",
                    knowledge_base="guides",
                    limit=1,
                ),
                cite_first,
                call("get_installation_page_5_content")
                + call("get_more_content_from_installation", page=2, pages=1),
                call("finish_retrieval", answer="Every 16 seconds.", sources=[]),
            ],
        )
        first = await agent.run("How do I pair?", session_id="s", strategy="targeted")
        (search, _) = finished(first.trajectory.events)
        assert out(search)["new_tools"] == [
            "get_more_content_from_installation",
            "get_installation_page_4_content",
            "get_installation_page_3_content",
            "get_installation_page_5_content",
        ]
        narrowed = [e for e in first.trajectory.events if isinstance(e, ToolsNarrowedEvent)]
        assert {t.name for t in narrowed[-1].tools if t.source == "session"} == set(
            out(search)["new_tools"]
        )

        second = await agent.run(
            "And how often does it send readings?", session_id="s", strategy="targeted"
        )
        events = list(second.trajectory.events)
        page, more = finished(events)[:2]
        assert [e.name for e in finished(events)] == [
            "get_installation_page_5_content",
            "get_more_content_from_installation",
            "finish_retrieval",
        ]
        assert out(page)["pages_read"] == [5, 5]
        (chunk,) = out(page)["results"]
        assert chunk["heading"] == "Installing the Heliograph HX-2 › First start"
        assert "every 16 seconds" in chunk["text"]
        assert out(more)["results"][0]["heading"].endswith("Choosing a site")
        assert out(more)["next_page"] == 3
        assert last(events).status == "ok"

    async def test_another_session_does_not_have_them(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        agent = make_agent(
            workspace,
            tmp_path,
            [
                call("search_content", query="PAIR button", knowledge_base="guides", limit=1),
                cite_first,
                call("get_installation_page_5_content"),
                "no",
            ],
        )
        await agent.run("Pair?", session_id="a", strategy="targeted")
        other = await agent.run("Page 5?", session_id="b", strategy="targeted")
        assert finished(other.trajectory.events) == []


class TestOtherTools:
    async def test_vector_search_finds_other_wording_across_contexts(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        agent = make_agent(
            workspace,
            tmp_path,
            [
                call("vector_search", query="how long are defects covered after buying", limit=3),
                call("finish_retrieval", answer="Done.", sources=[]),
            ],
        )
        run = await agent.run("Warranty length?", strategy="exploratory")
        (found, _) = finished(run.trajectory.events)
        best = out(found)["results"][0]
        assert (best["context"], best["item"]) == ("support", "warranty.txt")
        assert "two years" in best["text"]

    async def test_save_search_results_then_grep_and_ls(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        def grep_saved(request: ModelRequest) -> str:
            (saved,) = tool_results(request)
            return call(
                "grep",
                pattern="lithium|alkaline",
                path=saved["file"],
                ignore_case=True,
                line_numbers=True,
            ) + call("ls", path="/results")

        agent = make_agent(
            workspace,
            tmp_path,
            [
                call("save_search_results", query="batteries cold", knowledge_base="guides"),
                grep_saved,
                call("finish_retrieval", answer="Lithium cells.", sources=[]),
            ],
        )
        run = await agent.run("Which batteries?", strategy="exploratory")
        saved, grep, ls = finished(run.trajectory.events)[:3]
        assert out(saved)["file"] == "/results/guides/search_1.md"
        assert out(saved)["saved"] > 0
        assert all("text" not in r for r in out(saved)["results"])
        lines = str(grep.output).splitlines()
        assert lines
        assert all("lithium" in line.lower() or "alkaline" in line.lower() for line in lines)
        assert lines[0].split(":")[0].isdigit()
        assert ls.output == "guides/"

    async def test_count_several_contexts_at_once(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        agent = make_agent(
            workspace,
            tmp_path,
            [
                call("count_items_or_chunks")
                + call(
                    "count_items_or_chunks", knowledge_bases=["guides"], content_query="lithium"
                ),
                call("finish_retrieval", answer="Five documents.", sources=[]),
            ],
        )
        run = await agent.run("How many documents?", strategy="aggregate")
        every, filtered = finished(run.trajectory.events)[:2]
        # Several counted: their total too (the 1.5B answered "3 and 2 altogether").
        assert {c: v["items"] for c, v in out(every).items()} == {
            "guides": 3,
            "support": 2,
            "total": 5,
        }
        counts = out(every)
        assert counts["total"]["chunks"] == counts["guides"]["chunks"] + counts["support"]["chunks"]
        assert filtered.output == {"guides": {"items": 1, "chunks": 1}}

    async def test_wiki_search_runs_split_queries_in_parallel(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        agent = make_agent(
            workspace,
            tmp_path,
            [
                "<wiki_search>PAIR button|warranty serial number</wiki_search>",
                call("finish_retrieval", answer="Done.", sources=[]),
            ],
        )
        run = await agent.run("Pairing and warranty?", strategy="exploratory")
        pair, warranty = finished(run.trajectory.events)[:2]
        assert pair.call_id != warranty.call_id
        assert pair.name == warranty.name == "wiki_search"
        assert out(pair)["results"][0]["item"] == "installation.md"
        assert out(warranty)["results"][0]["item"] == "warranty.txt"

    async def test_knowledge_graph_and_a_context_switched_off_for_it(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        agent = make_agent(
            workspace,
            tmp_path,
            [
                call("retrieve_knowledge_graph", query="PAIR console")
                + call("retrieve_knowledge_graph", query="E42", knowledge_bases=["support"]),
                call("finish_retrieval", answer="Done.", sources=[]),
            ],
        )
        run = await agent.run("How do PAIR and the console relate?", strategy="exploratory")
        graph, refused = finished(run.trajectory.events)[:2]
        output: Any = graph.output
        names = {e["name"] for e in output["entities"]}
        assert "PAIR" in names
        assert output["relations"]
        assert all(r["chunks"] and r["chunks"][0].startswith("c") for r in output["relations"])
        assert refused.status == "error"
        assert "cannot read context 'support': retrieve_knowledge_graph is not enabled for it" in (
            str(refused.error)
        )

    async def test_a_scope_restricts_every_tool(self, workspace: Workspace, tmp_path: Path) -> None:
        agent = make_agent(
            workspace,
            tmp_path,
            [
                call("search_content", query="offset", knowledge_base="guides")
                + call("search_content", query="warranty", knowledge_base="support")
                + call("search_items_by_name", query="installing calibrating"),
                call("finish_retrieval", answer="Done.", sources=[]),
            ],
        )
        run = await agent.run("Offsets?", strategy="targeted", scope=["guides/calibration.md"])
        inside, outside, other_item = finished(run.trajectory.events)[:3]
        assert {r["item"] for r in out(inside)["results"]} == {"calibration.md"}
        assert "cannot read context 'support': it is outside this run's scope" in str(outside.error)
        assert [i["item"] for i in out(other_item)["items"]] == ["calibration.md"]
        request: ModelRequest = agent.model.requests[0]  # type: ignore[attr-defined]
        assert "guides (items: calibration.md)" in request.messages[1].content


class TestScopedSessionTools:
    async def test_a_page_tool_from_an_earlier_run_obeys_the_new_scope(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        """A page tool made by an unscoped run is still offered to a later run of the session,
        but reads nothing outside that run's scope."""
        agent = make_agent(
            workspace,
            tmp_path,
            [
                call("search_content", query="PAIR button", knowledge_base="guides", limit=1),
                cite_first,
                call("get_installation_page_5_content"),
                call("finish_retrieval", answer="Nothing in scope.", sources=[]),
            ],
        )
        await agent.run("Pair?", session_id="s", strategy="targeted")
        scoped = await agent.run(
            "Page 5?", session_id="s", strategy="targeted", scope=["guides/calibration.md"]
        )
        (refused, _) = finished(scoped.trajectory.events)
        assert refused.status == "error"
        assert "item 'installation.md' of 'guides' is outside this run's scope" in str(
            refused.error
        )


class TestClassification:
    async def test_suggested_contexts_are_a_hint_not_a_filter(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        """The classifier chooses among the contexts; its suggestion reaches the model as a
        priority note, and a search of another context still works."""
        agent = make_agent(
            workspace,
            tmp_path,
            [
                json.dumps(
                    {"query_type": "targeted", "language": "eng", "suggested_contexts": ["support"]}
                ),
                call("search_content", query="PAIR button", knowledge_base="guides", limit=1),
                cite_first,
            ],
        )
        run = await agent.run("How do I pair the console?")
        classify, planner = agent.model.requests[:2]  # type: ignore[attr-defined]
        schema = classify.json_schema["properties"]["suggested_contexts"]
        assert schema["items"]["enum"] == ["guides", "support"]
        assert "- support: Support articles." in classify.messages[0].content
        note = planner.messages[1].content
        assert note.startswith("SUGGESTED CONTEXTS: search support first. This is a priority")
        (search, _) = finished(run.trajectory.events)
        assert search.status == "ok"
        assert last(list(run.trajectory.events)).status == "ok"


class TestEndingWithFinishRetrieval:
    """The strategies end with finish_retrieval, and a text-mode model is told so."""

    @pytest.mark.parametrize(
        ("strategy", "tool", "arguments"),
        [
            ("aggregate", "count_items_or_chunks", {}),
            ("list", "search_items_by_name", {"query": "pairing", "knowledge_bases": ["guides"]}),
            ("targeted", "search_content", {"query": "E42", "knowledge_base": "support"}),
            ("exploratory", "search_content", {"query": "battery", "knowledge_base": "guides"}),
        ],
    )
    async def test_no_finish_and_the_strategys_nudge_after_results(
        self,
        workspace: Workspace,
        tmp_path: Path,
        strategy: str,
        tool: str,
        arguments: dict[str, Any],
    ) -> None:
        """`finish` is not offered beside finish_retrieval; the results reach the model (the
        embedded one too) ending with the strategy's nudge, not "answer in plain text"."""
        agent = make_agent(
            workspace,
            tmp_path,
            [call(tool, **arguments), call("finish_retrieval", answer="Found it.", sources=[])],
        )
        run = await agent.run("A question", strategy=strategy)
        events = list(run.trajectory.events)
        check_stream(events)
        # A search may offer page tools too, announced by a later `tools_narrowed`.
        narrowings = [e for e in events if isinstance(e, ToolsNarrowedEvent)]
        assert narrowings
        for narrowed in narrowings:
            offered = [t.name for t in narrowed.tools]
            assert "finish" not in offered
            assert "finish_retrieval" in offered
        assert [(e.name, e.status) for e in finished(events)] == [
            (tool, "ok"),
            ("finish_retrieval", "ok"),
        ]
        assert last(events).status == "ok"

        nudge = workspace.strategies[strategy].results_nudge
        assert "finish_retrieval" in nudge
        first, after_results = agent.model.requests  # type: ignore[attr-defined]
        # Nor do the instructions tell the model how to use a `finish` it is not given.
        assert "`finish`" not in first.messages[0].content
        assert after_results.results_nudge == nudge
        gguf = tmp_path / "never-loaded.gguf"
        gguf.touch()
        messages = LocalModel(gguf).completion_arguments(after_results)["messages"]
        assert messages[-1]["role"] == "user"
        assert messages[-1]["content"].startswith("Results of your tool calls:\n")
        assert messages[-1]["content"].endswith("\n\n" + nudge)
        assert TOOL_RESULTS_NUDGE not in messages[-1]["content"]


async def test_the_embedded_model_lists_at_most_five_chunk_ids(
    workspace: Workspace, small_model_path: Path
) -> None:
    """finish_retrieval's `sources` is the embedded model's grammar: told to cite twenty chunks,
    the real 0.5B writes a list of ids that it cannot run on past five (the 1.5B, citing in its
    text, once ran one to its token cap)."""
    finish = workspace.tools["finish_retrieval"].definition
    told = (
        "Call finish_retrieval with the answer 'Two years' and, as sources, every one of "
        + ", ".join(f"c{i}" for i in range(1, 21))
    )
    request = ModelRequest(
        messages=[Message(role="user", content=told)], tools=[finish], must_call=[finish.name]
    )
    model = LocalModel(small_model_path, max_tokens=256)
    held = "".join([c.text async for c in model.stream(request) if isinstance(c, TextChunk)])
    made = json.loads(held.strip().removeprefix("<tool_call>").removesuffix("</tool_call>"))
    assert made["name"] == "finish_retrieval"
    sources = made["arguments"]["sources"]
    assert 1 <= len(sources) <= 5
    assert all(re.fullmatch(r"c[0-9]+", s) for s in sources)
