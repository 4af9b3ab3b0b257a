"""Session tools: made by a tool during a run, offered for the rest of the session only."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentrt import (
    Agent,
    AgentSettings,
    Event,
    ModelChunk,
    ModelRequest,
    NarrowedTool,
    ScriptedModel,
    Session,
    SessionTool,
    TextChunk,
    ToolCallInvalidEvent,
    ToolContext,
    ToolError,
    ToolFinishedEvent,
    ToolsNarrowedEvent,
    Turn,
    Usage,
    UsageChunk,
    UserError,
    Workspace,
    tool,
)
from agentrt.catalog.toolbox import Toolbox
from agentrt.run import RunContext
from tests.helpers import MakeAgent, call, check_stream, header, last


class BySession:
    """A model that answers from the request alone, so that concurrent runs of one agent can
    share it: open the item named by the question, read one's own and the other's, finish."""

    native_tools = False
    name = "by-session"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        own = next(m.content for m in request.messages if m.role == "user")
        other = "beta" if own == "alpha" else "alpha"
        turn = sum(1 for m in request.messages if m.role == "assistant")
        text = [
            call("open_item", item=own),
            call(f"read_{own}") + call(f"read_{other}"),
            "ok",
        ][turn]
        for word in text.split(" "):
            await asyncio.sleep(0.001)  # interleave the two runs
            yield TextChunk(text=word + " ")
        yield UsageChunk(usage=Usage())


def of(events: list[Event], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def offered(event: ToolsNarrowedEvent) -> dict[str, str]:
    return {t.name: t.source for t in event.tools}


class TestWithinARun:
    async def test_a_tool_made_in_one_turn_is_called_in_the_next(
        self, make_agent: MakeAgent
    ) -> None:
        """open_item makes read_report; the next turn offers it (a second tools_narrowed event
        says so), and calling it runs read_page with the bound item."""
        agent = make_agent([call("open_item", item="report"), call("read_report", page=2), "ok"])
        events = [e async for e in agent.run("Open the report", strategy="exploratory")]
        check_stream(events)
        before, after = of(events, ToolsNarrowedEvent)
        assert "read_report" not in offered(before)
        assert offered(after)["read_report"] == "session"
        outputs = [e.output for e in of(events, ToolFinishedEvent)]
        assert outputs == ["opened report in session None", "report, page 2"]
        second = agent.model.requests[1]  # type: ignore[attr-defined]
        assert "read_report" in [t.name for t in second.tools]
        schema = next(t for t in second.tools if t.name == "read_report").parameters
        assert set(schema["properties"]) == {"page"}  # the bound `item` is not the model's

    async def test_without_a_session_it_lasts_one_run(self, make_agent: MakeAgent) -> None:
        agent = make_agent([call("open_item", item="report"), "ok", call("read_report"), "no"])
        await agent.run("Open the report", strategy="exploratory")
        events = [e async for e in agent.run("Read it", strategy="exploratory")]
        (refused,) = of(events, ToolCallInvalidEvent)
        assert refused.name == "read_report"


class TestAcrossRuns:
    async def test_a_later_run_of_the_session_is_offered_it(self, make_agent: MakeAgent) -> None:
        agent = make_agent(
            [call("open_item", item="report"), "ok", call("read_report", page=3), "done"]
        )
        await agent.run("Open the report", session_id="s", strategy="exploratory")
        events = [e async for e in agent.run("Page 3?", session_id="s", strategy="exploratory")]
        (narrowed,) = of(events, ToolsNarrowedEvent)
        assert offered(narrowed)["read_report"] == "session"
        assert [e.output for e in of(events, ToolFinishedEvent)] == ["report, page 3"]

    async def test_two_concurrent_sessions_never_see_each_other_s(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        """One agent, two sessions at once, interleaved: each makes its own tool, then calls
        its own and the other's; the other's is refused, naming only its own session's."""
        agent = Agent(
            workspace=workspace,
            model=BySession(),
            settings=AgentSettings(trajectory_dir=tmp_path),
        )
        runs = await asyncio.gather(
            agent.run("alpha", session_id="A", strategy="exploratory"),
            agent.run("beta", session_id="B", strategy="exploratory"),
        )
        for result, own, other in ((runs[0], "alpha", "beta"), (runs[1], "beta", "alpha")):
            events = result.trajectory.events
            (refused,) = of(events, ToolCallInvalidEvent)
            assert refused.name == f"read_{other}"
            assert f"read_{own}" in refused.reason
            assert f"read_{other}" not in refused.reason.partition("may call are:")[2]
            assert [e.output for e in of(events, ToolFinishedEvent)][-1] == f"{own}, page 1"
        assert set((await agent.sessions.load("A")).tools) == {"read_alpha"}
        assert set((await agent.sessions.load("B")).tools) == {"read_beta"}

    async def test_the_session_keeps_them_as_data(self, make_agent: MakeAgent) -> None:
        """A session's tools are specs (base tool, bound arguments), so a session saved as JSON
        and appended as a turn to another agent's store offers them again."""
        first = make_agent([call("open_item", item="report"), "ok"])
        await first.run("Open it", session_id="s", strategy="exploratory")
        saved = Session.model_validate_json((await first.sessions.load("s")).model_dump_json())

        second = make_agent([call("read_report", page=4), "done"])
        turn = Turn(run_id="saved", messages=saved.messages, tools=saved.tools)
        await second.sessions.append("s", turn, 0)
        result = await second.run("Page 4?", session_id="s", strategy="exploratory")
        outputs = [e.output for e in of(result.trajectory.events, ToolFinishedEvent)]
        assert outputs == ["report, page 4"]


class TestFromASyncTool:
    """A sync tool runs in a worker thread, but what it asks of the run happens on the loop's:
    from the worker, an event emitted while the loop wrote the trajectory was counted as
    written and lost (a knowledge search offering page tools, in CI)."""

    @staticmethod
    def agent(tmp_path: Path, base: str, turns: list[Any]) -> tuple[Agent, list[int]]:
        """An agent whose sync `open_item` adds `read_<item>` over `base`; the list gets the
        thread each tool call ran in."""
        ran_in: list[int] = []

        @tool
        def read_page(item: str, page: int = 1) -> str:
            """Read a page of an item."""
            return f"{item}, page {page}"

        @tool
        def open_item(ctx: ToolContext, item: str) -> str:
            """Open an item."""
            ran_in.append(threading.get_ident())
            spec = SessionTool(name=f"read_{item}", description="Read it.", base=base)
            ctx.add_session_tool(spec.model_copy(update={"bind": {"item": item}}))
            return "opened"

        settings = AgentSettings(trajectory_dir=tmp_path / "trajectories")
        model = ScriptedModel(turns)
        return Agent(model, tools=[read_page, open_item], settings=settings), ran_in

    async def test_its_session_tool_is_added_on_the_loop(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        stamped_in: list[int] = []
        emit = RunContext.emit

        def recording(self: RunContext, cls: Any, /, **fields: Any) -> Any:
            stamped_in.append(threading.get_ident())
            return emit(self, cls, **fields)

        monkeypatch.setattr(RunContext, "emit", recording)
        turns = [call("open_item", item="report"), call("read_report", page=2), "ok"]
        agent, ran_in = self.agent(tmp_path, "read_page", turns)
        result = await agent.run("Open the report")
        loop = threading.get_ident()
        (worker,) = ran_in
        assert worker != loop  # the tool did run in a worker thread
        assert set(stamped_in) == {loop}
        narrowed = of(result.trajectory.events, ToolsNarrowedEvent)
        assert "read_report" in offered(narrowed[-1])
        outputs = [e.output for e in of(result.trajectory.events, ToolFinishedEvent)]
        assert outputs == ["opened", "report, page 2"]

    async def test_its_refusal_is_the_tool_s_error(self, tmp_path: Path) -> None:
        agent, _ = self.agent(tmp_path, "nope", [call("open_item", item="report"), "ok"])
        result = await agent.run("Open the report")
        (done,) = of(result.trajectory.events, ToolFinishedEvent)
        assert done.status == "error"
        assert "there is no tool 'nope'" in str(done.error)
        assert result.status == "ok"


class TestBadSessionTools:
    async def test_a_bad_spec_is_the_calling_tool_s_error(self, make_agent: MakeAgent) -> None:
        """A session tool that cannot be made (here: a name a model cannot write) fails the
        call that asked for it, with the reason; the run goes on."""
        agent = make_agent([call("open_item", item="x y"), "ok"])
        events = [e async for e in agent.run("Open it", strategy="exploratory")]
        (done,) = of(events, ToolFinishedEvent)
        assert done.status == "error"
        assert "String should match pattern" in str(done.error)
        assert last(events).status == "ok"

    def test_an_unknown_base_is_refused(self, workspace: Workspace) -> None:
        ctx = RunContext("run", ScriptedModel([]), header(), None)
        toolbox = Toolbox(ctx, workspace.tools, [], None)
        spec = SessionTool(name="read_x", description="d", base="nope")
        with pytest.raises(
            ToolError, match=r"cannot add session tool 'read_x': there is no tool 'nope'"
        ):
            toolbox.add_session_tool(spec)
        unknown_argument = SessionTool(
            name="read_x", description="d", base="read_page", bind={"book": 1}
        )
        with pytest.raises(ToolError, match=r"tool 'read_page' takes no argument 'book'"):
            toolbox.add_session_tool(unknown_argument)

    def test_the_same_tool_twice_is_offered_once(self, workspace: Workspace) -> None:
        """Two parallel searches may offer one page: the second offer changes nothing, a
        changed one replaces it, and a workspace tool's name stays refused."""
        ctx = RunContext("run", ScriptedModel([]), header(), None)
        toolbox = Toolbox(
            ctx, workspace.tools, [NarrowedTool(name="read_page", source="template")], None
        )
        spec = SessionTool(name="read_x", description="d", base="read_page", bind={"item": "x"})
        toolbox.add_session_tool(spec)
        toolbox.add_session_tool(spec.model_copy())
        assert (toolbox.version, list(toolbox)) == (1, ["read_page", "read_x"])
        toolbox.add_session_tool(spec.model_copy(update={"bind": {"item": "y"}}))
        assert (toolbox.version, list(toolbox)) == (2, ["read_page", "read_x"])
        with pytest.raises(ToolError, match=r"'read_page': a tool of that name exists"):
            toolbox.add_session_tool(spec.model_copy(update={"name": "read_page"}))


class TestScope:
    async def test_tools_receive_it_and_the_model_is_told(
        self, make_agent: MakeAgent, seen: Any
    ) -> None:
        agent = make_agent([call("open_item", item="report"), "ok"])
        await agent.run(
            "Open it", strategy="exploratory", scope=["manuals", "wiki/page_1", "wiki/page_2"]
        )
        (scope,) = seen.scopes
        assert scope.contexts == {"manuals": None, "wiki": ["page_1", "page_2"]}
        assert scope.allows("manuals", "any")
        assert scope.allows("wiki", "page_2")
        assert not scope.allows("wiki", "page_3")
        assert not scope.allows("blog")
        request: ModelRequest = agent.model.requests[0]  # type: ignore[attr-defined]
        note = request.messages[1]
        assert note.role == "system"
        assert note.content.startswith("SCOPE: this run may only read\nmanuals (the whole context)")
        assert "wiki (items: page_1, page_2)" in note.content

    async def test_a_malformed_scope_is_refused_at_the_call(self, make_agent: MakeAgent) -> None:
        with pytest.raises(UserError, match=r"scope id '/page' has no context"):
            make_agent([]).run("Hi", scope=["/page"])


class TestArtifacts:
    async def test_kept_across_a_session_s_runs_and_files_beside_the_trajectory(
        self, make_agent: MakeAgent
    ) -> None:
        agent = make_agent(
            [
                call("remember", key="k", value="42"),
                "ok",
                call("recall", key="k"),
                "ok",
                call("recall", key="k"),
                "ok",
            ]
        )
        first = await agent.run("Keep", session_id="s", strategy="exploratory")
        second = await agent.run("Recall", session_id="s", strategy="exploratory")
        other = await agent.run("Recall", session_id="t", strategy="exploratory")
        (kept,) = of(first.trajectory.events, ToolFinishedEvent)
        assert first.path is not None
        assert kept.output == str(first.path.with_suffix(""))
        assert (first.path.with_suffix("") / "k.txt").read_text() == "42"
        assert [e.output for e in of(second.trajectory.events, ToolFinishedEvent)] == ["42"]
        (missing,) = of(other.trajectory.events, ToolFinishedEvent)
        assert missing.error == "nothing kept as 'k'"
