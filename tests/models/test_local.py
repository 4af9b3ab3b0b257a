"""The embedded model for real: Qwen2.5-Coder-0.5B run in this process, bounded by tokens.

These tests assert what the runtime guarantees, not what a 0.5B model knows.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import BaseModel, JsonValue

from agentrt import (
    Agent,
    AgentSettings,
    ClassifiedEvent,
    LocalModel,
    Message,
    ModelError,
    ModelRequest,
    ModelResponseEvent,
    OutputDeltaEvent,
    TextChunk,
    ToolCallEvent,
    ToolCallInvalidEvent,
    Trajectory,
    TurnStartedEvent,
    UsageChunk,
    UserError,
)
from agentrt.classify import Classification, classification_schema
from agentrt.models.more_calls import written_calls
from agentrt.trajectory.replay import replay
from tests.helpers import REAL_MODEL_WORKSPACE, check_stream


@pytest.fixture(scope="module")
def local(small_model_path: Path) -> LocalModel:
    return LocalModel(small_model_path, max_tokens=48)


async def test_tokens_stream_while_the_loop_runs(local: LocalModel) -> None:
    """Generation happens in a worker thread: another coroutine keeps running between tokens,
    and usage is counted locally."""
    ticks: list[float] = []

    async def tick() -> None:
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.01)

    ticker = asyncio.create_task(tick())
    request = ModelRequest(
        messages=[Message(role="user", content="Count from one to twenty, in words.")],
        max_tokens=40,
    )
    token_times: list[float] = []
    usage = None
    async for chunk in local.stream(request):
        if isinstance(chunk, TextChunk):
            token_times.append(time.perf_counter())
        elif isinstance(chunk, UsageChunk):
            usage = chunk.usage
    ticker.cancel()
    assert len(token_times) >= 10
    between = [t for t in ticks if token_times[0] < t < token_times[-1]]
    assert len(between) >= 5, "the event loop was blocked while the model generated"
    assert usage is not None
    assert usage.completion_tokens == len(token_times)
    assert usage.prompt_tokens > 5


async def test_json_steps_always_parse(local: LocalModel, workspace: object) -> None:
    """An answer under a JSON schema is constrained by a grammar: it parses and fits."""
    from agentrt import Workspace

    assert isinstance(workspace, Workspace)
    schema = classification_schema(workspace.strategies)
    request = ModelRequest(
        messages=[Message(role="user", content="Hello! What kind of question is this?")],
        json_schema=schema,
        max_tokens=60,
    )
    text = "".join([c.text async for c in local.stream(request) if isinstance(c, TextChunk)])
    answer = Classification.model_validate(json.loads(text))
    assert answer.query_type in workspace.strategies
    assert answer.suggested_contexts == []


async def test_a_field_of_any_json_value_can_hold_a_string(local: LocalModel) -> None:
    """pydantic writes `JsonValue` as an empty schema, which llama.cpp's grammar reads as "an
    object": spelled out, the grammar lets a string through where the prompt asks for one."""

    class Step(BaseModel):
        params: dict[str, JsonValue]

    request = ModelRequest(
        messages=[
            Message(
                role="user",
                content='Answer {"params": {"name": "totals"}} exactly, as JSON, nothing else.',
            )
        ],
        json_schema=Step.model_json_schema(),
        max_tokens=30,
    )
    text = "".join([c.text async for c in local.stream(request) if isinstance(c, TextChunk)])
    assert Step.model_validate_json(text).params == {"name": "totals"}


async def test_a_short_real_run(local: LocalModel, tmp_path: Path) -> None:
    """A whole run on the real model: classified by the model (never a fallback: the answer is
    grammar-bound), streamed, recorded, and replayed from its trajectory to the same events."""
    agent = Agent(
        workspace=REAL_MODEL_WORKSPACE,
        model=local,
        settings=AgentSettings(trajectory_dir=tmp_path, default_strategy="arithmetic"),
    )
    result = await agent.run("What is 2 + 3? Use the add tool.")
    events = result.trajectory.events
    check_stream(events)
    (classified,) = [e for e in events if isinstance(e, ClassifiedEvent)]
    assert classified.method == "model"
    turns = [e for e in events if isinstance(e, ModelResponseEvent) and e.purpose == "turn"]
    assert turns
    assert all(t.usage.completion_tokens <= 48 for t in turns)
    assert result.status in ("ok", "budget_exhausted")
    assert result.path is not None
    _, difference = await replay(Trajectory.read(result.path))
    assert difference is None


class Capital(BaseModel):
    city: str
    country: str


async def test_a_typed_output_is_valid_by_construction(local: LocalModel) -> None:
    """A code-first agent with a typed output on the 0.5B: whatever its prose says, the final
    step is grammar-bound to the schema, so the output validates; it streams as deltas."""
    agent = Agent(local, output_type=Capital, output_retries=0)
    result = await agent.run("What is the capital of France?")
    assert result.status == "ok", result.error
    assert isinstance(result.output, Capital)
    assert result.output.city.strip()
    deltas = [e for e in result.trajectory.events if isinstance(e, OutputDeltaEvent)]
    assert deltas
    assert Capital.model_validate(deltas[-1].output) == result.output
    # It writes calls as text: the schema-bound step, not a final-result tool it could botch.
    assert "final_result" not in result.trajectory.header.tools


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"no model '.*nope\.gguf': give a \.gguf file or one of"):
        LocalModel(tmp_path / "nope.gguf")


QUIET = """
import asyncio, io, logging, sys
from agentrt import LocalModel, Message, ModelRequest, TextChunk

buffer = io.StringIO()
logging.basicConfig(stream=buffer, level=logging.DEBUG, format="%(name)s|%(message)s")
model = LocalModel(sys.argv[1], max_tokens=4)
request = ModelRequest(messages=[Message(role="user", content="Say hi.")])

async def answer() -> str:
    return "".join([c.text async for c in model.stream(request) if isinstance(c, TextChunk)])

assert asyncio.run(answer())
with open(sys.argv[2], "w") as out:
    out.write(buffer.getvalue())
"""


def test_llama_cpp_logs_go_to_logging(small_model_path: Path, tmp_path: Path) -> None:
    """A program that loads the embedded model and generates prints nothing on stdout or
    stderr; llama.cpp's own log lines reach its `logging` set-up, at debug, under
    `agentrt.models.llama_cpp`."""
    logged = tmp_path / "log.txt"
    done = subprocess.run(
        [sys.executable, "-c", QUIET, str(small_model_path), str(logged)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("", "")
    lines = logged.read_text().splitlines()
    native = [line for line in lines if line.startswith("agentrt.models.llama_cpp|")]
    assert any("llama_model_loader" in line or "llama_context" in line for line in native)


def add_numbers(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def _first_turn(agent: Agent, question: str) -> list[object]:
    """The events of a run of `question` up to its second turn."""
    first: list[object] = []
    async with agent.run(question) as run:
        async for event in run:
            if isinstance(event, TurnStartedEvent) and event.step > 1:
                break
            first.append(event)
    return first


@pytest.mark.parametrize(
    ("question", "calls"), [("What is 2 + 3? Use the tool.", 1), ("Say hello in French.", 0)]
)
async def test_a_constrained_turn_answers_or_calls_validly(
    local: LocalModel, question: str, calls: int
) -> None:
    """The grammar leaves two ways: an answer (or `finish` with one), or calls that fit the
    offered schemas."""
    agent = Agent(local, tools=[add_numbers], settings=AgentSettings(trajectory_dir=None))
    first = await _first_turn(agent, question)
    assert not [e for e in first if isinstance(e, ToolCallInvalidEvent)]
    made = [e for e in first if isinstance(e, ToolCallEvent)]
    assert {e.name for e in made} <= {"add_numbers", "finish"}  # nothing else is writable
    adds = [e for e in made if e.name == "add_numbers"]
    assert len(adds) == calls
    for e in adds:
        assert isinstance(e.arguments["a"], int)


async def test_a_turn_that_must_call_calls(local: LocalModel) -> None:
    """Held to `must_call` (the turn a react run gives a model whose answer rested on
    nothing), the 0.5B calls the tool even when told to answer in a word."""
    tool = Agent(local, tools=[add_numbers]).workspace.tools["add_numbers"].definition
    told = "Reply with one word, bonjour, and call no tool."
    request = ModelRequest(
        messages=[Message(role="user", content=told)], tools=[tool], must_call=["add_numbers"]
    )
    held = "".join([c.text async for c in local.stream(request) if isinstance(c, TextChunk)])
    call = json.loads(held.strip().removeprefix("<tool_call>").removesuffix("</tool_call>"))
    assert call["name"] == "add_numbers"
    assert set(call["arguments"]) == {"a", "b"}


async def test_a_turn_that_must_answer_answers_in_text(local: LocalModel) -> None:
    """Asked for its answer after a loop (`answer_only`, no tools offered), the 1.5B copilot
    wrote its query again as a call, turn after turn; the grammar leaves it only text that
    does not open like a call, even when told to call."""
    told = 'Reply with exactly this JSON and nothing else: {"name": "add_numbers"}'
    request = ModelRequest(messages=[Message(role="user", content=told)], answer_only=True)
    assert "grammar" in local.completion_arguments(request)
    text = "".join([c.text async for c in local.stream(request) if isinstance(c, TextChunk)])
    assert text.strip()
    assert text.strip()[0] not in "<{[`"


async def test_the_tool_format_is_known_without_the_weights(small_model_path: Path) -> None:
    """A run asks before `run_started`: it must not wait for weights to load (or be joined)."""
    by_pack = LocalModel("qwen2.5-coder-0.5b-instruct-q4_k_m")
    by_file = LocalModel(small_model_path)
    assert await by_pack.detect_tool_format() == "hermes"
    assert await by_file.detect_tool_format() == "hermes"  # from the GGUF's chat template
    assert (by_pack._llama, by_file._llama) == (None, None)


def city_weather(city: str) -> str:
    """The current weather in a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize(
    ("question", "cities"),
    [
        ("What is the weather in Oslo and in Lima?", ["Oslo", "Lima"]),
        ("What is the weather in Oslo?", ["Oslo"]),
    ],
)
async def test_asked_for_two_things_the_small_model_calls_for_both(
    small_model_path: Path, question: str, cities: list[str]
) -> None:
    """Asked for one more call after its first, the 0.5B writes it; it is kept only when it
    serves a part of the question no call did (`more_calls`), so one thing asked is one call."""
    model = LocalModel(small_model_path, max_tokens=160, probe_calls=True)
    agent = Agent(model, tools=[city_weather], settings=AgentSettings(trajectory_dir=None))
    first = await _first_turn(agent, question)
    calls = [e for e in first if isinstance(e, ToolCallEvent) and e.name == "city_weather"]
    assert [e.arguments["city"] for e in calls] == cities
    response = next(e for e in first if isinstance(e, ModelResponseEvent))
    assert len(written_calls(response.text)) == len(cities)  # the kept call is in the record


def test_asking_for_more_calls_is_the_packs_choice(small_model_path: Path) -> None:
    """On where measured to help (the 0.5B), off where it only cost time (the 1.5B), off for a
    file nobody measured; the argument wins."""
    assert LocalModel("qwen2.5-coder-0.5b-instruct-q4_k_m").probe_calls is True
    assert LocalModel("qwen2.5-coder-1.5b-instruct-q4_k_m").probe_calls is False
    assert LocalModel(small_model_path).probe_calls is False
    assert LocalModel("qwen2.5-coder-1.5b-instruct-q4_k_m", probe_calls=True).probe_calls is True


def air_quality(city: str) -> str:
    """The air quality index of a city, from its monitoring stations."""
    return "42"


def uv_index(city: str) -> str:
    """Today's UV index in a city."""
    return "3"


@pytest.mark.parametrize(
    ("question", "tool"),
    [
        ("What is the weather in Oslo?", "city_weather"),
        ("How clean is the air in Delhi?", "air_quality"),
        ("Translate 'good morning' into Spanish.", None),
        ("Write a haiku about autumn.", None),
    ],
)
async def test_unsure_of_every_tool_the_model_calls_none(
    small_model_path: Path, question: str, tool: str | None
) -> None:
    """Before its first turn, the 0.5B's probability of the likeliest weather tool's name
    (`min_tool_confidence`): far above 0.1 for weather questions, which it then calls for,
    far below for others (measured 0.96-0.99 against 0.01-0.02), whose turn is asked again
    with only `finish` shown, and no weather tool is called."""
    model = LocalModel(small_model_path, max_tokens=64, min_tool_confidence=0.1)
    tools = [city_weather, air_quality, uv_index]
    agent = Agent(model, tools=tools, settings=AgentSettings(trajectory_dir=None))
    first = await _first_turn(agent, question)
    responses = [e for e in first if isinstance(e, ModelResponseEvent)]
    measured = responses[0].tool_confidence
    assert measured is not None
    calls = {e.name for e in first if isinstance(e, ToolCallEvent)}
    if tool is None:
        assert measured < 0.1
        assert (responses[0].tools_withheld, responses[0].text, len(responses)) == (True, "", 2)
        assert calls <= {"finish"}
    else:
        assert measured > 0.5
        assert not responses[0].tools_withheld
        assert calls == {tool}


def test_the_confidence_threshold_is_the_packs_choice(small_model_path: Path) -> None:
    """Read off the tool-calling benchmark's dev half per model, off for a file nobody
    measured; the argument wins, and is a probability."""
    assert LocalModel("qwen2.5-coder-0.5b-instruct-q4_k_m").min_tool_confidence == 0.1
    assert LocalModel("qwen2.5-coder-1.5b-instruct-q4_k_m").min_tool_confidence == 0.3
    assert LocalModel(small_model_path).min_tool_confidence == 0
    assert LocalModel(small_model_path, min_tool_confidence=0.2).min_tool_confidence == 0.2
    with pytest.raises(UserError, match="min_tool_confidence is a probability"):
        LocalModel(small_model_path, min_tool_confidence=1.5)


def test_which_turns_are_weighed() -> None:
    """A constrained turn whose caller can take withheld tools, on the user's message,
    offering a tool that does not answer; never an unconstrained one, one held to a call, on
    tool results, or offering only `finish`. Decided without the weights."""
    model = LocalModel("qwen2.5-coder-0.5b-instruct-q4_k_m")
    tools = {
        name: Agent(model, tools=[city_weather]).workspace.tools[name].definition
        for name in ("city_weather", "finish")
    }
    asked = [Message(role="user", content="What is the weather in Oslo?")]
    base = ModelRequest(
        messages=asked, tools=list(tools.values()), weigh_tools=True, answer_tools=["finish"]
    )

    def weighed(**changes: object) -> bool:
        request = base.model_copy(update=changes)
        return model._weighs_tools(request, model.completion_arguments(request))

    assert weighed()
    assert not weighed(constrain_tools="off")
    assert not weighed(weigh_tools=False)
    assert not weighed(must_call=["city_weather"])
    assert not weighed(tools=[tools["finish"]])
    on_results = [*asked, Message(role="tool", content="sunny", name="city_weather")]
    assert not weighed(messages=on_results)
    assert not LocalModel(model._pack.name, min_tool_confidence=0)._weighs_tools(
        base, model.completion_arguments(base)
    )


async def test_a_stream_closed_early_stops_generating_before_the_next(local: LocalModel) -> None:
    """A caller that stops reading (react cuts a turn) closes the stream: its generation must
    have stopped by then, or the next stream decodes beside it in another thread and llama.cpp
    crashes the process (a segmentation fault, found on the tool-calling benchmark)."""
    request = ModelRequest(
        messages=[Message(role="user", content="Count from one to fifty, in words.")],
        max_tokens=40,
    )
    for _ in range(3):
        stream = local.stream(request)
        async for _chunk in stream:
            break
        await stream.aclose()  # type: ignore[attr-defined]
    text = "".join([c.text async for c in local.stream(request) if isinstance(c, TextChunk)])
    assert text.strip()


async def test_a_conversation_longer_than_the_window_is_cut_to_fit(
    small_model_path: Path,
) -> None:
    """Results that outgrow the window are cut, the question kept: llama.cpp refused such a
    prompt, which ended a knowledge run of the 1.5B in an error. A system prompt that cannot
    fit is a clear error."""
    model = LocalModel(small_model_path, n_ctx=1024, max_tokens=24)
    results = "The station reads 21 degrees at noon. " * 400  # about 3,600 tokens
    request = ModelRequest(
        messages=[
            Message(role="user", content="What temperature does the station read?"),
            Message(role="assistant", content="I will read the log."),
            Message(role="user", content=f"The log:\n{results}"),
        ]
    )
    chunks = [c async for c in model.stream(request)]
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)).strip()
    (usage,) = [c for c in chunks if isinstance(c, UsageChunk)]
    assert usage.usage.prompt_tokens < 1024 - 24

    huge = ModelRequest(messages=[Message(role="system", content=results), request.messages[0]])
    with pytest.raises(ModelError, match="does not fit the 1024-token context window"):
        [c async for c in model.stream(huge)]


async def test_conversations_taking_turns_are_not_read_again(
    small_model_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two system prompts in turn (two sessions on one model, a classifier and its agent):
    llama.cpp's context holds only the prompt read last, so each turn would read its whole
    prompt again. A kept state spares the part it shares with an earlier one, and the answer
    is the one read from the start."""
    shop = "You answer for a bicycle shop. " + " ".join(
        f"Model {i} has a warranty of {i % 5 + 1} years." for i in range(30)
    )
    trains = "You answer about trains. " + " ".join(
        f"The train from town {i} leaves at {i % 24}:00." for i in range(30)
    )

    def asking(system: str, question: str) -> ModelRequest:
        messages = [Message(role="system", content=system), Message(role="user", content=question)]
        return ModelRequest(messages=messages, max_tokens=8)

    async def answer(model: LocalModel, request: ModelRequest) -> str:
        return "".join([c.text async for c in model.stream(request) if isinstance(c, TextChunk)])

    kept = LocalModel(small_model_path)
    await answer(kept, asking(shop, "How long is model 7's warranty?"))
    await answer(kept, asking(trains, "When does the train from town 3 leave?"))
    again = asking(shop, "How long is model 12's warranty?")
    with caplog.at_level("DEBUG", logger="agentrt.models.local"):
        spared_answer = await answer(kept, again)
    (line,) = [r.getMessage() for r in caplog.records if "spares" in r.getMessage()]
    spared, total = (int(w) for w in line.split() if w.isdigit())
    assert 300 < spared < total  # the shop's system prompt, not its question

    read_whole = await answer(LocalModel(small_model_path, prompt_cache_mb=0), again)
    assert spared_answer == read_whole
    with pytest.raises(UserError, match="prompt_cache_mb is a size in MB"):
        LocalModel(small_model_path, prompt_cache_mb=-1)
