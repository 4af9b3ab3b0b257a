"""The react planner: calls start while the model still streams; every call format works."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentrt import (
    Agent,
    AgentSettings,
    Event,
    GuardEvent,
    ModelErrorEvent,
    ModelResponseEvent,
    NativeToolCall,
    ReasoningDeltaEvent,
    RequestRejected,
    ScriptedModel,
    ScriptedTurn,
    StreamInterrupted,
    TextDeltaEvent,
    ToolCallEvent,
    ToolCallInvalidEvent,
    ToolFinishedEvent,
    ToolStartedEvent,
    Trajectory,
    TurnStartedEvent,
    Usage,
    Workspace,
)
from agentrt.models.base import TOOL_RESULTS_NUDGE, ModelChunk, ModelRequest, TextChunk
from agentrt.strategy import FirstCall
from agentrt.trajectory.replay import replay
from tests.helpers import MakeAgent, call, check_stream, finish, last


async def run(agent: Any) -> list[Event]:
    events = [e async for e in agent.run("Go", strategy="exploratory")]
    check_stream(events)
    return events


def of(events: list[Event], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


class TestIncrementalDispatch:
    async def test_tool_starts_before_the_turn_ends(self, make_agent: MakeAgent) -> None:
        """A call closed early in a slowly streamed turn starts, and even finishes, while the
        model is still writing the rest of the turn."""
        tail = " ".join(["more words after the call"] * 6)
        agent = make_agent([call("add", a=1, b=2) + " " + tail, "3"], token_delay=0.01)
        events = await run(agent)
        started = of(events, ToolStartedEvent)[0]
        finished = of(events, ToolFinishedEvent)[0]
        turn_end = of(events, ModelResponseEvent)[0]
        later_text = [e for e in of(events, TextDeltaEvent) if e.step == 1][-1]
        assert started.seq < finished.seq < later_text.seq < turn_end.seq
        assert started.t < turn_end.t

    async def test_visible_text_excludes_calls(self, make_agent: MakeAgent) -> None:
        """Text deltas carry what the user should read, never the call markup."""
        agent = make_agent(["Let me add. " + call("add", a=1, b=2) + " Done.", "3"])
        events = await run(agent)
        text = "".join(e.text for e in of(events, TextDeltaEvent) if e.step == 1)
        assert text == "Let me add.  Done."
        # The model's own record keeps the raw text, markup included (replay needs it).
        assert "<tool_call>" in of(events, ModelResponseEvent)[0].text


class TestFormats:
    async def test_tag_with_split(self, make_agent: MakeAgent) -> None:
        """`<search>a|b</search>` becomes two parallel calls of a tool that declares split."""
        agent = make_agent(["<search>capital of France|capital of Germany</search>", "ok"])
        events = await run(agent)
        calls = [(e.name, e.arguments, e.format) for e in of(events, ToolCallEvent)]
        assert calls == [
            ("search", {"query": "capital of France"}, "tag"),
            ("search", {"query": "capital of Germany"}, "tag"),
        ]
        assert [e.output for e in of(events, ToolFinishedEvent)] == [
            "results for capital of France",
            "results for capital of Germany",
        ]

    async def test_bare_and_fenced_json(self, make_agent: MakeAgent) -> None:
        """Small models write bare JSON, sometimes fenced: both are calls."""
        turn = (
            '{"name": "add", "arguments": {"a": 1, "b": 1}}\n'
            '```json\n{"tool": "add", "args": {"a": 2, "b": 2}}\n```\n'
        )
        events = await run(make_agent([turn, "ok"]))
        calls = [(e.arguments, e.format) for e in of(events, ToolCallEvent)]
        assert calls == [({"a": 1, "b": 1}, "json"), ({"a": 2, "b": 2}, "json")]
        assert "".join(e.text for e in of(events, TextDeltaEvent) if e.step == 1).strip() == ""

    async def test_native_tool_calls(self, make_agent: MakeAgent) -> None:
        """OpenAI-native tool calls run, keep the server's ids, and are answered by id."""
        turn = ScriptedTurn(
            tool_calls=[
                NativeToolCall(id="call_abc", name="add", arguments='{"a": 20, "b": 22}'),
                NativeToolCall(id="call_def", name="echo", arguments='{"text": "hi"}'),
            ]
        )
        agent = make_agent([turn, "42"])
        events = await run(agent)
        calls = [(e.call_id, e.name, e.format) for e in of(events, ToolCallEvent)]
        assert calls == [("call_abc", "add", "native"), ("call_def", "echo", "native")]
        second = agent.model.requests[1]
        assistant = second.messages[-3]
        assert [c.id for c in assistant.tool_calls] == ["call_abc", "call_def"]
        assert [(m.tool_call_id, m.content) for m in second.messages[-2:]] == [
            ("call_abc", "42"),
            ("call_def", "hi"),
        ]
        assert last(events).answer == "42"

    async def test_empty_reply_is_nudged(self, make_agent: MakeAgent) -> None:
        """An empty turn is not taken as an answer: the model is asked again."""
        agent = make_agent(["", "Here it is."])
        events = await run(agent)
        assert (last(events).answer, last(events).steps) == ("Here it is.", 2)
        assert agent.model.requests[1].messages[-1].content.startswith("Your last reply was empty.")


class TestReasoning:
    async def test_call_drafted_while_thinking_is_never_run(self, make_agent: MakeAgent) -> None:
        """A `<tool_call>` inside `<think>` is reasoning: no call, the answer is what follows
        the block, the thought streams as reasoning_delta events and is in the trajectory."""
        thought = "I could call " + call("add", a=2, b=2)
        agent = make_agent([f"<think>{thought}</think>The answer is 4."])
        result = await agent.run("Go", strategy="exploratory")
        assert result.path is not None
        trajectory = Trajectory.read(result.path)
        events = trajectory.events
        assert not of(events, ToolCallEvent)
        assert result.answer == "The answer is 4."
        assert "".join(e.text for e in of(events, ReasoningDeltaEvent)) == thought
        assert {e.step for e in of(events, ReasoningDeltaEvent)} == {1}
        assert "".join(e.text for e in of(events, TextDeltaEvent)) == "The answer is 4."
        # The record keeps the raw text, reasoning included: replay feeds it back whole.
        assert of(events, ModelResponseEvent)[0].text == f"<think>{thought}</think>The answer is 4."
        assert "> *Reasoning*\n>\n> I could call <tool_call>" in trajectory.to_markdown()

    async def test_reasoning_is_left_out_of_the_conversation(self, make_agent: MakeAgent) -> None:
        """The next turn reads the assistant's content and calls, not its reasoning (as
        reasoning models' chat templates do); a call after the block runs as usual."""
        first = "<think>Add them.</think>\n" + call("add", a=2, b=3)
        agent = make_agent([first, "<think>It is 5.</think>5"], token_delay=0.001)
        events = await run(agent)
        assert [e.name for e in of(events, ToolCallEvent)] == ["add"]
        assistant = agent.model.requests[1].messages[-2]
        assert assistant.role == "assistant"
        assert assistant.content == "\n" + call("add", a=2, b=3)
        assert last(events).answer == "5"
        thoughts = {e.step: "" for e in of(events, ReasoningDeltaEvent)}
        for e in of(events, ReasoningDeltaEvent):
            thoughts[e.step] += e.text
        assert thoughts == {1: "Add them.", 2: "It is 5."}

    async def test_unclosed_thought_is_not_an_answer(self, make_agent: MakeAgent) -> None:
        """A turn that stops mid-thought has no answer: the model is asked again."""
        agent = make_agent(["<think>Let me see", "4"])
        events = await run(agent)
        assert "".join(e.text for e in of(events, ReasoningDeltaEvent)) == "Let me see"
        assert (last(events).answer, last(events).steps) == ("4", 2)

    async def test_harmony_analysis_channel(self, make_agent: MakeAgent) -> None:
        """gpt-oss: the analysis channel is reasoning, the final channel the answer."""
        turn = (
            "<|channel|>analysis<|message|>Simple sum.<|end|>"
            "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4<|return|>"
        )
        events = await run(make_agent([turn]))
        assert "".join(e.text for e in of(events, ReasoningDeltaEvent)) == "Simple sum."
        assert last(events).answer == "2 + 2 = 4"


class TestNoToolFits:
    async def test_a_model_sure_of_no_tool_answers_without_them(
        self, make_agent: MakeAgent
    ) -> None:
        """A model that finds no offered tool likely (`ToolConfidenceChunk`, the embedded
        model's) writes nothing; the turn is asked again, in the same step, with only the tools
        that answer shown and a note that no tool fits. The record keeps both model calls, so
        a replay makes the same run."""
        unsure = ScriptedTurn(tool_confidence=0.02, tools_withheld=True)
        agent = make_agent([unsure, "Canberra."])
        result = await agent.run("What is the capital of Australia?", strategy="exploratory")
        assert result.answer == "Canberra."
        first, again = agent.model.requests
        assert "add" in {t.name for t in first.tools}
        assert (first.weigh_tools, first.answer_tools) == (True, ["finish"])
        assert {t.name for t in again.tools} == {"finish"}
        assert not again.weigh_tools  # withheld once, for the rest of the run
        notes = [m.content for m in again.messages if m.role == "system"]
        assert any(n.startswith("NO TOOL FITS") for n in notes)
        assert again.messages[-1].content == "What is the capital of Australia?"
        assert result.path is not None
        events = Trajectory.read(result.path).events
        check_stream(events)
        responses = of(events, ModelResponseEvent)
        assert [(r.step, r.tool_confidence, r.tools_withheld, r.text) for r in responses] == [
            (1, 0.02, True, ""),
            (1, None, False, "Canberra."),
        ]
        assert [e.step for e in of(events, TurnStartedEvent)] == [1]
        _, difference = await replay(Trajectory.read(result.path))
        assert difference is None

    async def test_a_model_that_must_rest_its_answer_on_a_tool_keeps_them(
        self, make_agent: MakeAgent
    ) -> None:
        """A strategy whose answers need a tool's result (`answer_needs`, the `sequenced`
        strategy's `add`) never asks the model to weigh its tools: withholding them would
        leave it nothing to rest an answer on."""
        agent = make_agent([call("echo", text="2"), call("add", a=1, b=2), "3"])
        result = await agent.run("Go", strategy="sequenced")
        assert result.answer == "3"
        assert not any(r.weigh_tools for r in agent.model.requests)

    async def test_a_sure_model_keeps_its_tools(self, make_agent: MakeAgent) -> None:
        """Sure of a tool, the model writes its turn as ever, its confidence on the record."""
        sure = ScriptedTurn(text=call("add", a=2, b=3), tool_confidence=0.9)
        events = await run(make_agent([sure, "5"]))
        assert [e.name for e in of(events, ToolCallEvent)] == ["add"]
        assert of(events, ModelResponseEvent)[0].tool_confidence == 0.9
        assert last(events).answer == "5"


class TestEarlyFinish:
    async def test_finish_beside_other_calls_is_refused(self, make_agent: MakeAgent) -> None:
        """A finish written in the same turn as other calls comes before their results: it is
        refused with a guard event, and the model answers from the results next turn."""
        agent = make_agent([call("add", a=20, b=22) + finish("41, I guess"), finish("42")])
        events = await run(agent)
        (guard,) = of(events, GuardEvent)
        assert (guard.kind, guard.call_id) == ("early_finish", "call_1_2")
        assert guard.detail == "finish came in the same turn as add, before their results"
        observed = [m.content for m in agent.model.requests[1].messages if m.role == "tool"]
        assert observed[0] == "42"
        assert observed[1].startswith("Not finished: you called finish in the same reply")
        assert (last(events).answer, last(events).steps) == ("42", 2)

    async def test_calls_after_the_finish_are_not_read(self, make_agent: MakeAgent) -> None:
        """The answer ends the turn: what the model writes after its finish never runs."""
        agent = make_agent([finish("42") + call("add", a=1, b=2) + " and more text"])
        events = await run(agent)
        assert [e.name for e in of(events, ToolCallEvent)] == ["finish"]
        assert not of(events, GuardEvent)
        assert (last(events).answer, last(events).steps) == ("42", 1)


class TestRepetition:
    async def test_a_call_repeated_in_one_turn_cuts_the_answer(self, make_agent: MakeAgent) -> None:
        """A model that writes the same call twice in one turn is looping: the repeat is not
        run, a guard event says so, and the rest of its answer is not read."""
        looping = call("add", a=1, b=2) + call("echo", text="x") + call("add", a=1, b=2) * 5
        agent = make_agent([looping, "3"], token_delay=0.001)
        events = await run(agent)
        (guard,) = of(events, GuardEvent)
        assert (guard.kind, guard.call_id) == ("repetition", "call_1_3")
        assert [e.name for e in of(events, ToolCallEvent)] == ["add", "echo"]
        # The recorded answer stops with the chunk where it was cut: replay sees the same.
        (first,) = [e for e in of(events, ModelResponseEvent) if e.step == 1]
        assert first.text.count("</tool_call>") == 3
        assert last(events).answer == "3"


class TestModelFailures:
    async def test_broken_stream_retries_the_turn_once(self, make_agent: MakeAgent) -> None:
        """A stream that breaks mid-answer ends the attempt with a model_error event; the turn
        is asked again; the half-written call is never run, the finished one is not re-run."""
        broken = ScriptedTurn(
            text=call("add", a=1, b=2) + ' <tool_call>{"name": "echo", "argu',
            error=StreamInterrupted("connection closed mid-answer"),
        )
        retry = call("add", a=1, b=2) + call("echo", text="hi")
        # Streamed slowly, so that the first attempt's add finishes before the break.
        agent = make_agent([broken, retry, "3"], token_delay=0.01)
        events = await run(agent)
        (err,) = of(events, ModelErrorEvent)
        assert (err.step, err.retrying) == (1, True)
        assert err.error == "StreamInterrupted: connection closed mid-answer"
        assert [e.step for e in of(events, TurnStartedEvent)] == [1, 1, 2]
        # The first attempt's complete call ran; the retry's identical call is served from the
        # cache; the half-written echo call of the broken attempt never ran.
        finished = [(e.name, e.cached) for e in of(events, ToolFinishedEvent)]
        assert sorted(finished) == [("add", False), ("add", True), ("echo", False)]
        assert (last(events).status, last(events).answer) == ("ok", "3")

    async def test_a_second_break_ends_the_run(self, make_agent: MakeAgent) -> None:
        """The retry is bounded: a second break ends the run with status error."""
        broken = ScriptedTurn(text="Working", error=StreamInterrupted("reset"))
        events = await run(make_agent([broken, broken]))
        assert [e.retrying for e in of(events, ModelErrorEvent)] == [True, False]
        assert (last(events).status, last(events).error) == ("error", "StreamInterrupted: reset")

    async def test_a_rejected_request_is_not_retried(self, make_agent: MakeAgent) -> None:
        """A refusal (a 4xx) is final at once."""
        rejected = ScriptedTurn(error=RequestRejected("400: context length exceeded"))
        events = await run(make_agent([rejected]))
        assert [e.retrying for e in of(events, ModelErrorEvent)] == [False]
        assert last(events).error == "RequestRejected: 400: context length exceeded"

    async def test_token_budget(self, make_agent: MakeAgent) -> None:
        """A run past its token budget ends budget_exhausted after the turn that crossed it."""
        heavy = ScriptedTurn(
            text=call("add", a=1, b=1), usage=Usage(prompt_tokens=900, completion_tokens=200)
        )
        events = await run(make_agent([heavy, heavy, "2"], token_budget=1000))
        end = last(events)
        assert (end.status, end.steps, end.usage.total_tokens) == ("budget_exhausted", 1, 1100)


class BreaksAfterCall:
    """A model whose answers call `counter` and break off once that call has run (the run's
    state says so: no timing), `breaks` times; then it answers `after`."""

    __test__ = False
    name = "breaks-after-call"
    native_tools = False

    def __init__(self, seen: Any, breaks: int, after: list[str]) -> None:
        self.seen, self.breaks, self.after = seen, breaks, after
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        self.requests.append(request)
        if len(self.requests) > self.breaks:
            yield TextChunk(text=self.after[len(self.requests) - self.breaks - 1])
            return
        yield TextChunk(text=call("counter"))
        # Until the first attempt's call has run (bounded: a test never hangs on it), then a
        # few loop passes so that the executor takes its result before the break.
        for _ in range(10_000):
            if self.seen.counter >= 1:
                break
            await asyncio.sleep(0)
        for _ in range(5):
            await asyncio.sleep(0)
        raise StreamInterrupted("connection reset mid-answer")


class TestSideEffectsOnce:
    """A `cache=False` call that ran before its turn broke off is not run again by the retry."""

    @pytest.mark.parametrize("breaks", [1, 2])
    async def test_retry_reuses_the_call(
        self, workspace: Workspace, tmp_path: Path, seen: Any, breaks: int
    ) -> None:
        """The retried turn's identical call is answered from the first one's outcome, the
        model is told so, and the trajectory shows it (`guard` duplicate, `cached`)."""
        model = BreaksAfterCall(seen, breaks, [call("counter"), "done"])
        settings = AgentSettings(trajectory_dir=tmp_path, turn_retries=breaks)
        events = await run(Agent(workspace=workspace, model=model, settings=settings))
        assert seen.counter == 1
        assert (last(events).status, last(events).answer) == ("ok", "done")
        finished = [(e.call_id, e.cached) for e in of(events, ToolFinishedEvent)]
        assert finished == [("call_1_1", False), *[("call_1_1", True)] * breaks]
        guards = [(g.kind, g.original_call_id) for g in of(events, GuardEvent)]
        assert guards == [("duplicate", "call_1_1")] * breaks
        (observation,) = [m for m in model.requests[-1].messages if "broke off" in m.content]
        assert "was not run again" in observation.content

    async def test_a_later_turn_runs_it_again(self, make_agent: MakeAgent, seen: Any) -> None:
        """Outside a retry, an uncached tool runs each time it is called."""
        events = await run(make_agent([call("counter"), call("counter"), "done"]))
        assert seen.counter == 2
        assert [e.cached for e in of(events, ToolFinishedEvent)] == [False, False]


class TestNeedsResult:
    """A strategy's `after` and `answer_needs` (the test workspace's `sequenced` strategy: `add`
    needs `echo`'s result, and an answer needs an `add`)."""

    async def test_a_call_others_need_ends_its_turn(self, make_agent: MakeAgent) -> None:
        """What the model writes after it (an `add` guessing at the echo) is never read."""
        agent = make_agent(
            [
                call("echo", text="2") + "\n" + call("add", a=1, b=1) + "\nThe sum is 2.",
                call("add", a=1, b=2),
                "3",
            ]
        )
        events = [e async for e in agent.run("Go", strategy="sequenced")]
        check_stream(events)
        (guard,) = [e for e in events if isinstance(e, GuardEvent)]
        assert (guard.kind, guard.call_id) == ("awaits_result", "call_1_1")
        ran = [(e.name, e.step) for e in events if isinstance(e, ToolFinishedEvent)]
        assert ran == [("echo", 1), ("add", 2)]  # the first add was never read
        history = agent.model.requests[1].messages  # type: ignore[attr-defined]
        (reply,) = [m for m in history if m.role == "assistant"]
        assert reply.content.endswith("</tool_call>")
        assert '"add"' not in reply.content
        assert last(events).answer == "3"

    async def test_a_call_after_an_invalid_one_it_needs_is_not_run(
        self, make_agent: MakeAgent
    ) -> None:
        """An echo written wrongly gives no result either: the add after it waits a turn."""
        broken = '<tool_call>\n{"name": "echo", "arguments": [2]}\n</tool_call>'
        agent = make_agent([broken + "\n" + call("add", a=1, b=1), call("add", a=1, b=2), "3"])
        events = [e async for e in agent.run("Go", strategy="sequenced")]
        check_stream(events)
        (guard,) = [e for e in events if isinstance(e, GuardEvent)]
        assert (guard.kind, guard.call_id) == ("needs_result", "call_1_2")
        told = agent.model.requests[1].messages[-1].content  # type: ignore[attr-defined]
        assert "Not run: you called add in the same reply as echo" in told
        assert last(events).answer == "3"

    async def test_in_the_other_order_both_run(self, make_agent: MakeAgent) -> None:
        agent = make_agent([call("add", a=1, b=1) + "\n" + call("echo", text="2"), "done"])
        events = [e async for e in agent.run("Go", strategy="sequenced")]
        kinds = [e.kind for e in events if isinstance(e, GuardEvent)]
        assert kinds == ["awaits_result"]  # the echo ends the turn; nothing came after it
        assert sorted(e.name for e in events if isinstance(e, ToolFinishedEvent)) == ["add", "echo"]

    @pytest.mark.parametrize("ending", ["The sum is 2.", call("finish", answer="The sum is 2.")])
    async def test_an_answer_before_a_needed_call_succeeded_is_sent_back(
        self, make_agent: MakeAgent, ending: str
    ) -> None:
        """In text or by `finish`, the model is told to call `add` first, and does."""
        agent = make_agent([ending, call("add", a=1, b=1), "The sum is 2."])
        events = [e async for e in agent.run("1 + 1?", strategy="sequenced")]
        check_stream(events)
        (guard,) = [e for e in events if isinstance(e, GuardEvent)]
        assert guard.kind == "unfounded_answer"
        requests = agent.model.requests  # type: ignore[attr-defined]
        assert "Not answered yet: an answer must rest on the result of add" in (
            requests[1].messages[-1].content
        )
        if not ending.startswith("<tool_call>"):  # an answer sent back is not read again
            assert "The sum is 2." not in [m.content for m in requests[1].messages]
        # Until an add succeeds, a turn must call one (a grammar holds the embedded model to
        # it); a scripted model may still answer.
        assert [r.must_call for r in requests] == [["add"], ["add"], []]
        end = last(events)
        assert (end.status, end.answer, end.doubt) == ("ok", "The sum is 2.", None)

    async def test_forced_turns_last_until_a_needed_call_succeeds_and_are_sampled(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        """After a pushback the 1.5B made the needed call once, it failed, and free again it
        answered in text: the forced turns go on (sampled once a needed call failed) until
        one succeeds."""
        needs = workspace.strategies["sequenced"].model_copy(
            update={"answer_needs": ["fail", "echo"], "after": {}}
        )
        strict = copy.copy(workspace)
        strict.strategies = {**workspace.strategies, "strict": needs}
        model = ScriptedModel(
            ["It is x.", call("fail", message="not yet"), call("echo", text="x"), "It is x."]
        )
        agent = Agent(
            workspace=strict, model=model, settings=AgentSettings(trajectory_dir=tmp_path)
        )
        events = [e async for e in agent.run("Echo x", strategy="strict")]
        check_stream(events)
        assert [(r.must_call, r.retry) for r in model.requests] == [
            (["fail", "echo"], 0),
            (["fail", "echo"], 0),
            (["fail", "echo"], 1),  # a needed call failed: sampled
            ([], 0),
        ]
        end = last(events)
        assert (end.status, end.answer, end.doubt) == ("ok", "It is x.", None)

    async def test_the_strategys_nudge_lasts_until_a_needed_call_succeeds(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        """Then the default one asks for the answer: told to call until it had the rows, the
        1.5B copilot ran its right query four times over."""
        nudged = workspace.strategies["sequenced"].model_copy(
            update={"results_nudge": "Call add.", "after": {}}
        )
        strict = copy.copy(workspace)
        strict.strategies = {**workspace.strategies, "nudged": nudged}
        turns = [call("echo", text="1"), call("add", a=1, b=1), "2"]
        model = ScriptedModel(turns)
        agent = Agent(
            workspace=strict, model=model, settings=AgentSettings(trajectory_dir=tmp_path)
        )
        events = [e async for e in agent.run("1 + 1?", strategy="nudged")]
        check_stream(events)
        nudges = [r.results_nudge for r in model.requests]
        assert nudges == ["Call add.", "Call add.", TOOL_RESULTS_NUDGE]
        assert last(events).answer == "2"

    async def test_twice_sent_back_the_answer_is_taken_with_its_doubt(
        self, make_agent: MakeAgent
    ) -> None:
        agent = make_agent(["It is 2.", "Still 2.", "2, really."])
        events = [e async for e in agent.run("1 + 1?", strategy="sequenced")]
        kinds = [e.kind for e in events if isinstance(e, GuardEvent)]
        assert kinds == ["unfounded_answer", "unfounded_answer"]
        end = last(events)
        assert (end.status, end.answer, end.doubt) == ("ok", "2, really.", "tools_failed")

    async def test_no_answer_is_sent_back_on_the_last_step(self, make_agent: MakeAgent) -> None:
        """With no step left to act on it, the answer is taken (and doubted), not lost."""
        agent = make_agent([call("echo", text="a")] * 3 + ["It is 2."])
        events = [e async for e in agent.run("1 + 1?", strategy="sequenced")]
        assert "unfounded_answer" not in [e.kind for e in events if isinstance(e, GuardEvent)]
        end = last(events)
        assert (end.status, end.answer, end.doubt) == ("ok", "It is 2.", "tools_failed")


def first_calls_agent(
    workspace: Workspace, tmp_path: Path, turns: list[str], *calls: FirstCall
) -> Agent:
    """An agent whose `sequenced` strategy (an add needs an echo's result; an answer, an add)
    makes `calls` before the model's first turn."""
    strategy = workspace.strategies["sequenced"].model_copy(update={"first_calls": list(calls)})
    grounded = copy.copy(workspace)
    grounded.strategies = {**workspace.strategies, "sequenced": strategy}
    settings = AgentSettings(trajectory_dir=tmp_path)
    return Agent(workspace=grounded, model=ScriptedModel(turns), settings=settings)


class TestFirstCalls:
    """A strategy's `first_calls`: made by the run before the model's first turn (the database
    copilot's `ground_schema`, which the 1.5B skipped to guess at table names)."""

    async def test_they_run_first_and_the_model_reads_them_as_its_own(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        echo = FirstCall(tool="echo", arguments={"text": "about {query}"})
        agent = first_calls_agent(workspace, tmp_path, [call("add", a=1, b=1), "2"], echo)
        events = [e async for e in agent.run("1 + 1?", strategy="sequenced")]
        check_stream(events)
        made = of(events, ToolCallEvent)
        assert [(e.name, e.step, e.format, e.arguments) for e in made] == [
            ("echo", 1, "plan", {"text": "about 1 + 1?"}),
            ("add", 2, "hermes", {"a": 1, "b": 1}),
        ]
        assert [e.step for e in of(events, TurnStartedEvent)] == [2, 3]
        # The add ran: the echo's result came a step before it (`after`), and it founded the
        # answer (`answer_needs`).
        assert [e.status for e in of(events, ToolFinishedEvent)] == ["ok", "ok"]
        first = agent.model.requests[0].messages  # type: ignore[attr-defined]
        assert [m.role for m in first[-3:]] == ["user", "assistant", "tool"]
        (written,) = first[-2].tool_calls
        assert (written.id, written.name) == (first[-1].tool_call_id, "echo")
        assert json.loads(written.arguments) == {"text": "about 1 + 1?"}
        assert "about 1 + 1?" in first[-1].content
        end = last(events)
        assert (end.status, end.answer, end.doubt, end.steps) == ("ok", "2", None, 3)

    async def test_a_needed_one_founds_the_answer(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        add = FirstCall(tool="add", arguments={"a": 2, "b": 2})
        agent = first_calls_agent(workspace, tmp_path, ["4"], add)
        events = [e async for e in agent.run("2 + 2?", strategy="sequenced")]
        check_stream(events)
        assert not of(events, GuardEvent)  # no `unfounded_answer`: the add ran
        assert (last(events).answer, last(events).doubt) == ("4", None)

    async def test_a_bad_one_is_refused_and_the_model_goes_on(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        """Arguments the tool's schema refuses are the model's to mend, like its own call's."""
        add = FirstCall(tool="add", arguments={"a": "{query}", "b": 1})
        agent = first_calls_agent(
            workspace, tmp_path, [call("echo", text="x"), call("add", a=1, b=1), "2"], add
        )
        events = [e async for e in agent.run("one", strategy="sequenced")]
        check_stream(events)
        (refused,) = of(events, ToolCallInvalidEvent)
        assert (refused.name, refused.step, refused.call_id) == ("add", 1, "call_1_1")
        ran = [(e.name, e.step, e.status) for e in of(events, ToolFinishedEvent)]
        assert ran == [("echo", 2, "ok"), ("add", 3, "ok")]
        told = agent.model.requests[0].messages[-1]  # type: ignore[attr-defined]
        assert (told.role, told.name) == ("tool", "add")
        assert told.content.startswith("Error: Invalid arguments for add: a: Input should be")
        assert (last(events).status, last(events).answer) == ("ok", "2")


def calls_only_agent(workspace: Workspace, tmp_path: Path, turns: list[str]) -> Agent:
    """An agent whose `exploratory` strategy (4 steps, every tool) says `calls_only`."""
    strategy = workspace.strategies["exploratory"].model_copy(update={"calls_only": True})
    strict = copy.copy(workspace)
    strict.strategies = {**workspace.strategies, "exploratory": strategy}
    settings = AgentSettings(trajectory_dir=tmp_path)
    return Agent(workspace=strict, model=ScriptedModel(turns), settings=settings)


class TestCallsOnly:
    """A strategy's `calls_only`: every turn must call, the last only a tool that ends the run
    (the knowledge strategies: the 1.5B answered with a plan of searches in prose)."""

    async def test_every_turn_must_call_and_the_last_must_answer(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        turns = [call("echo", text=str(i)) for i in range(3)] + [call("finish", answer="2")]
        agent = calls_only_agent(workspace, tmp_path, turns)
        events = await run(agent)
        requests = agent.model.requests  # type: ignore[attr-defined]
        offered = [[t.name for t in r.tools] for r in requests]
        assert [r.must_call for r in requests[:3]] == offered[:3]
        assert {"echo", "finish"} <= set(offered[0])
        assert (offered[3], requests[3].must_call) == (["finish"], ["finish"])
        assert not any(r.weigh_tools for r in requests)  # withholding would leave no search
        assert (last(events).status, last(events).answer) == ("ok", "2")

    async def test_a_repeated_call_is_answered_by_calling_the_answer_tool(
        self, workspace: Workspace, tmp_path: Path
    ) -> None:
        """The repeated-call breaker asks for the answer through `finish`, not in text, and
        the `finish` in that turn runs (elsewhere a call in it is refused)."""
        turns = [call("echo", text="a")] * 3 + [call("finish", answer="a")]
        agent = calls_only_agent(workspace, tmp_path, turns)
        events = await run(agent)
        asked = agent.model.requests[3]  # type: ignore[attr-defined]
        assert ([t.name for t in asked.tools], asked.must_call) == (["finish"], ["finish"])
        assert not asked.answer_only  # its answer is a call
        assert "Answer the question now, by calling finish" in asked.results_nudge
        assert "repetition" not in [e.kind for e in of(events, GuardEvent)]
        assert (last(events).status, last(events).answer) == ("ok", "a")


class TestRepeatedCalls:
    async def test_a_call_made_three_times_asks_for_an_answer(self, make_agent: MakeAgent) -> None:
        same = call("echo", text="x")
        agent = make_agent([same, same, same, "x it is"])
        events = [e async for e in agent.run("Go", strategy="exploratory")]
        check_stream(events)
        requests = agent.model.requests  # type: ignore[attr-defined]
        assert [len(r.tools) > 0 for r in requests] == [True, True, True, False]
        assert [r.answer_only for r in requests] == [False, False, False, True]
        assert requests[3].results_nudge.startswith(
            'You have made the same call (echo({"text": "x"})) 3 times'
        )
        assert last(events).answer == "x it is"

    async def test_a_call_in_the_turn_for_the_answer_is_not_run(
        self, make_agent: MakeAgent
    ) -> None:
        """Offered no tools, the 1.5B wrote the call a fourth time, and it ran (then a fifth
        and a sixth): in the turn for the answer a call is not run."""
        same = call("echo", text="x")
        agent = make_agent([same] * 4)
        events = [e async for e in agent.run("Go", strategy="exploratory")]
        check_stream(events)
        assert [e.step for e in events if isinstance(e, ToolFinishedEvent)] == [1, 2, 3]
        guards = [(g.kind, g.step) for g in of(events, GuardEvent)]
        assert guards == [("duplicate", 2), ("duplicate", 3), ("repetition", 4)]
        assert last(events).status == "budget_exhausted"  # the test strategy's 4 steps

    async def test_a_failed_call_made_again_is_sampled_next(self, make_agent: MakeAgent) -> None:
        """Greedy after a first failure (the error may be enough); sampled, with a new seed
        each time, once the model has made the same failing call again."""
        failing = call("fail", message="no table sales")
        agent = make_agent([failing, failing, call("echo", text="y"), "done"])
        await agent.run("Go", strategy="exploratory")
        requests = agent.model.requests  # type: ignore[attr-defined]
        assert [r.retry for r in requests] == [0, 0, 1, 0]

    async def test_a_call_that_failed_three_times_asks_for_another_call(
        self, make_agent: MakeAgent
    ) -> None:
        """There are no results to answer from: the tools stay on offer and the model is
        told to change the call (asked for the answer, the 1.5B made one up)."""
        failing = call("fail", message="no table reports_to")
        agent = make_agent([failing, failing, failing, "y"])
        events = [e async for e in agent.run("Go", strategy="exploratory")]
        check_stream(events)
        requests = agent.model.requests  # type: ignore[attr-defined]
        assert all(r.tools for r in requests)
        assert not any(r.answer_only for r in requests)
        assert requests[3].results_nudge == (
            "You have made the same fail call 3 times and it failed each time; sent again as "
            "it is, it will fail again. Read its error and call fail with different arguments."
        )
        assert last(events).answer == "y"

    async def test_twice_is_no_loop(self, make_agent: MakeAgent) -> None:
        same = call("echo", text="x")
        agent = make_agent([same, same, call("echo", text="y"), "done"])
        await agent.run("Go", strategy="exploratory")
        requests = agent.model.requests  # type: ignore[attr-defined]
        assert all(r.tools for r in requests)
        assert not any(r.results_nudge.startswith("You have made") for r in requests)
