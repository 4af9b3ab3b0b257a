"""`run_finished.doubt`: a run that ends `ok` with an answer that is none — a raw tool call, a
failed call's error repeated, figures after every call failed — says so, and one that answered
from a result does not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentrt import Agent, AgentSettings, RunFinishedEvent, ScriptedModel, ToolError
from agentrt.doubt import CallTally, holds_tool_call
from agentrt.eval.metrics import score, summarize
from agentrt.eval.questions import EvalQuestion
from agentrt.events import ToolCallInvalidEvent, ToolFinishedEvent
from agentrt.parsing import CallPiece, InvalidPiece, ToolCallParser
from tests.helpers import MakeAgent, call, finish


def orders(region: str) -> int:
    """Count the orders of a region.

    Args:
        region: The region's name.
    """
    if region != "East":
        msg = f"no region named {region!r}; the regions are East and West"
        raise ToolError(msg)
    return 42


async def run(tmp_path: Path, *turns: str, tools: list = [orders]) -> RunFinishedEvent:  # noqa: B006
    agent = Agent(
        ScriptedModel(list(turns)), tools=tools, settings=AgentSettings(trajectory_dir=tmp_path)
    )
    result = await agent.run("How many orders did the north have?")
    end = result.trajectory.events[-1]
    assert isinstance(end, RunFinishedEvent)
    assert (end.status, result.status) == ("ok", "ok")
    assert result.doubt == end.doubt  # the result says what the event says
    return end


class TestRuns:
    async def test_an_answer_from_a_result_is_not_doubted(self, tmp_path: Path) -> None:
        end = await run(tmp_path, call("orders", region="East"), "The east had 42 orders.")
        assert end.doubt is None

    async def test_an_answer_after_a_failure_then_a_result_is_not_doubted(
        self, tmp_path: Path
    ) -> None:
        end = await run(
            tmp_path,
            call("orders", region="North"),
            call("orders", region="East"),
            "There is no north region (the regions are East and West); the east had 42 orders.",
        )
        assert end.doubt is None

    async def test_an_error_repeated_as_the_answer(self, tmp_path: Path) -> None:
        end = await run(
            tmp_path,
            call("orders", region="North"),
            "Sorry: No region named 'North'; the regions are East and West.",
        )
        assert end.doubt == "tool_error"

    async def test_figures_after_every_call_failed(self, tmp_path: Path) -> None:
        end = await run(tmp_path, call("orders", region="North"), "The north had 17 orders.")
        assert end.doubt == "tools_failed"

    async def test_a_call_to_an_unknown_tool_counts_as_failed(self, tmp_path: Path) -> None:
        end = await run(tmp_path, call("sales", region="North"), "The north sold 17 units.")
        assert end.doubt == "tools_failed"

    async def test_a_run_ending_tool_is_not_a_result(self, tmp_path: Path) -> None:
        """`finish` succeeding gives the answer; it is no result for the answer to rest on."""
        agent = Agent(
            ScriptedModel([call("orders", region="North"), finish("The north had 17 orders.")]),
            tools=[orders],
            settings=AgentSettings(trajectory_dir=tmp_path),
            instructions="Answer by calling finish.",
        )
        result = await agent.run("How many orders did the north have?")
        assert any(
            isinstance(e, ToolFinishedEvent) and e.name == "finish" and e.status == "ok"
            for e in result.trajectory.events
        ), "the scripted finish call must have run for this test to mean anything"
        assert (result.status, result.doubt) == ("ok", "tools_failed")

    async def test_a_raw_call_as_the_answer(self, tmp_path: Path) -> None:
        # In mid-line and naming no tool on offer, the parser leaves it as text.
        raw = 'I will call {"name": "weather", "arguments": {"city": "Oslo"}} now.'
        end = await run(tmp_path, raw)
        assert (end.answer, end.doubt) == (raw, "raw_tool_call")

    async def test_a_run_without_calls_is_not_doubted(self, tmp_path: Path) -> None:
        end = await run(tmp_path, "Hello! Ask me about orders by region.")
        assert end.doubt is None


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "weather", "arguments": {"city": "Oslo"}}',
        'Here: {"name": "weather", "parameters": {"city": "Oslo"}}',
        '{"arguments": {"city": "Oslo"}, "name": "weather"}',
        "<tool_call>\n{'name': 'weather'}\n</tool_call>",
        '[TOOL_CALLS][{"name": "weather", "arguments": {}}]',
        "<|python_tag|>weather.call(city='Oslo')",
        "<tool_call><function=weather><parameter=city>Oslo</parameter></function></tool_call>",
    ],
)
def test_calls_are_seen_in_every_shape(text: str) -> None:
    assert holds_tool_call(text)


@pytest.mark.parametrize(
    "text",
    [
        "The east had 42 orders.",
        'Set {"city": "Oslo"} in the config, and name it "weather".',
        "| region | orders |\n|---|---|\n| East | 42 |",
        "Call me back {name} when you have the arguments.",
    ],
)
def test_answers_are_not_taken_for_calls(text: str) -> None:
    assert not holds_tool_call(text)


def finished(name: str, status: str = "ok", error: str | None = None) -> ToolFinishedEvent:
    return ToolFinishedEvent.model_validate(
        {
            "run_id": "r",
            "seq": 0,
            "t": 0.0,
            "step": 1,
            "call_id": "c",
            "name": name,
            "status": status,
            "error": error,
            "duration": 0.0,
        }
    )


class TestTally:
    def test_the_exception_name_need_not_be_repeated(self) -> None:
        tally = CallTally()
        tally.see(finished("run_sql", "error", "OperationalError: no such table: orders_2024"))
        assert tally.doubt("Error: no such table: orders_2024") == "tool_error"

    def test_a_short_error_is_words_an_answer_may_use(self) -> None:
        tally = CallTally()
        tally.see(finished("lookup", "error", "not found"))
        tally.see(finished("lookup"))
        answer = "The item was not found in the first catalog, but in the second."
        assert tally.doubt(answer) is None

    def test_a_cancelled_call_is_no_failure(self) -> None:
        tally = CallTally()
        tally.see(finished("lookup", "cancelled", "the run was cancelled while this call ran"))
        assert tally.doubt("Done.") is None

    def test_an_invalid_call_is_a_failure_with_its_reason(self) -> None:
        tally = CallTally()
        reason = "There is no tool named 'sales' here. The tools you may call are: orders."
        tally.see(
            ToolCallInvalidEvent.model_validate(
                {
                    "run_id": "r",
                    "seq": 0,
                    "t": 0.0,
                    "step": 1,
                    "call_id": "c",
                    "name": "sales",
                    "raw": json.dumps({"name": "sales"}),
                    "reason": reason,
                }
            )
        )
        assert tally.doubt(reason) == "tool_error"
        assert tally.doubt("17 units.") == "tools_failed"

    def test_an_answer_needs_what_the_strategy_says(self) -> None:
        """A copilot's schema read and chart succeeded, its query never did: made up."""
        tally = CallTally()
        tally.see(finished("ground_schema"))
        tally.see(finished("run_sql", "error", "no such table: rental_rates"))
        tally.see(finished("plot_bar"))
        assert tally.doubt("The rate is $1.50.") is None
        assert tally.doubt("The rate is $1.50.", needed=["run_sql"]) == "tools_failed"
        tally.see(finished("run_sql"))
        assert tally.doubt("The rate is $0.99.", needed=["run_sql"]) is None

    def test_a_typed_output_is_judged_by_its_calls_alone(self) -> None:
        tally = CallTally()
        tally.see(finished("lookup", "timeout", "lookup did not finish within 30 s"))
        assert tally.doubt(None) == "tools_failed"
        tally.see(finished("lookup"))
        assert tally.doubt(None) is None


async def test_evaluation_counts_an_answer_in_doubt_as_failed(tmp_path: Path) -> None:
    """The figure is the expected one, but no call succeeded: it is no answer."""
    agent = Agent(
        ScriptedModel([call("orders", region="North"), "17", call("orders", region="East"), "42"]),
        tools=[orders],
        settings=AgentSettings(trajectory_dir=tmp_path),
    )
    question = EvalQuestion(id="north", question="Orders of the north?", expected_answer="17")
    invented = await agent.run(question.question)
    answered = await agent.run("Orders of the east?")
    results = [
        score(question, invented.trajectory.events, None),
        score(
            question.model_copy(update={"expected_answer": "42"}), answered.trajectory.events, None
        ),
    ]
    assert [(r.status, r.doubt, r.exact_match) for r in results] == [
        ("ok", "tools_failed", False),
        ("ok", None, True),
    ]
    summary = summarize(results)
    assert (summary.ok, summary.doubtful, summary.exact_match_rate) == (1, 1, 0.5)


async def test_a_strategys_answer_needs_reach_the_run(make_agent: MakeAgent) -> None:
    """The test workspace's `sequenced` strategy needs an `add` behind its answers."""
    # Sent back twice (`unfounded_answer`), then taken with its doubt.
    echoed = [call("echo", text="2"), *["The sum is 2."] * 3]
    added = [call("add", a=1, b=1), "The sum is 2."]
    for turns, strategy, doubt in (
        (echoed, "sequenced", "tools_failed"),
        (added, "sequenced", None),
        (echoed, "exploratory", None),  # a strategy that names no tool needs none
    ):
        result = await make_agent(turns).run("1 + 1?", strategy=strategy)
        assert (result.status, result.doubt) == ("ok", doubt), strategy


@pytest.mark.parametrize(
    "text",
    [
        "get_weather(city='Paris')",
        "TOOL_CALLS weather city=Oslo",
        "name=weather arguments=(city: Oslo)",
        "functions.weather:0 city=Oslo",
        '```json\n"weather"\n```',
    ],
)
def test_text_without_an_opener_holds_no_call(text: str) -> None:
    """Without a "<", "{" or "[" `holds_tool_call` answers before the parser runs: the parser,
    run anyway, agrees."""
    parser = ToolCallParser()
    pieces = [*parser.feed(text), *parser.close()]
    assert not any(isinstance(p, CallPiece | InvalidPiece) for p in pieces)
    assert not holds_tool_call(text)
