"""The OpenAI-compatible client, against a real HTTP server on 127.0.0.1 that fails on cue."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import re
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentrt import Agent, AgentSettings, ReasoningDeltaEvent, Trajectory, Workspace
from agentrt.events import Usage
from agentrt.exceptions import RequestRejected, RetriesExhausted, StreamInterrupted
from agentrt.models.base import (
    TOOL_RESULTS_NUDGE,
    Message,
    ModelChunk,
    ModelRequest,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    ToolDefinition,
    UsageChunk,
)
from agentrt.models.openai import OpenAIModel, OpenAISettings, _retry_after
from agentrt.trajectory.replay import replay
from tests.helpers import agentrt_logs, call, check_stream, last
from tests.models.openai_server import (
    DONE,
    Cut,
    FakeServer,
    Piece,
    Reply,
    Stall,
    chunk,
    error_reply,
    text_reply,
    tool_call_delta,
)

MakeModel = Callable[..., OpenAIModel]

ADD = ToolDefinition(
    name="add",
    description="Add two integers.",
    parameters={"type": "object", "properties": {"a": {"type": "integer"}}},
)


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings read the environment: keep the machine's own out of the tests."""
    for name in list(os.environ):
        if name.upper().startswith("AGENTRT_OPENAI_") or name.upper() == "OPENAI_API_KEY":
            monkeypatch.delenv(name)


@pytest.fixture
async def server() -> AsyncIterator[FakeServer]:
    async with FakeServer() as s:
        yield s


@pytest.fixture
async def make_model(server: FakeServer) -> AsyncIterator[MakeModel]:
    """Models on the fake server with tiny timeouts and waits; closed after the test."""
    models: list[OpenAIModel] = []

    def make(**overrides: Any) -> OpenAIModel:
        fields: dict[str, Any] = {
            "base_url": server.url,
            "model": "test-model",
            "connect_timeout": 0.5,
            "read_timeout": 0.3,
            "write_timeout": 0.5,
            "pool_timeout": 0.5,
            "retry_initial_wait": 0.01,
            "retry_max_wait": 0.05,
            **overrides,
        }
        model = OpenAIModel(OpenAISettings(**fields))
        models.append(model)
        return model

    yield make
    for model in models:
        await model.aclose()


def ask(text: str = "What is the answer?", **request: Any) -> ModelRequest:
    return ModelRequest(messages=[Message(role="user", content=text)], **request)


async def collect(model: OpenAIModel, request: ModelRequest | None = None) -> list[ModelChunk]:
    return [c async for c in model.stream(request or ask())]


def text_of(chunks: list[ModelChunk]) -> str:
    return "".join(c.text for c in chunks if isinstance(c, TextChunk))


class TestStreaming:
    async def test_text_in_many_deltas(self, server: FakeServer, make_model: MakeModel) -> None:
        """Each content delta becomes one TextChunk, in order, and the request is a stream."""
        deltas = ["The", " answer", " is", " 4", "2", "."]
        server.add(text_reply(*deltas))
        chunks = await collect(make_model())
        assert [c.text for c in chunks if isinstance(c, TextChunk)] == deltas
        (received,) = server.requests
        assert received.path == "/v1/chat/completions"
        assert received.body == {
            "model": "test-model",
            "messages": [{"role": "user", "content": "What is the answer?"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        }

    async def test_usage_from_the_server(self, server: FakeServer, make_model: MakeModel) -> None:
        """The usage of a final chunk with empty choices is the one UsageChunk, at the end."""
        server.add(text_reply("Hi", "!", usage={"prompt_tokens": 12, "completion_tokens": 2}))
        chunks = await collect(make_model())
        assert [c for c in chunks if isinstance(c, UsageChunk)] == [chunks[-1]]
        assert chunks[-1] == UsageChunk(usage=Usage(prompt_tokens=12, completion_tokens=2))

    async def test_usage_counted_locally(self, server: FakeServer, make_model: MakeModel) -> None:
        """Without usage from the server: a token per delta, four characters per prompt token."""
        server.add(text_reply("One", " two", " three"))
        chunks = await collect(make_model(), ask("x" * 41))
        assert [c for c in chunks if isinstance(c, UsageChunk)] == [chunks[-1]]
        assert chunks[-1] == UsageChunk(usage=Usage(prompt_tokens=10, completion_tokens=3))

    async def test_sampling_fields(self, server: FakeServer, make_model: MakeModel) -> None:
        """temperature and max_tokens are sent when set, the request's max_tokens wins, and
        extra_body is merged last."""
        server.add(text_reply("a"), text_reply("b"))
        model = make_model(temperature=0.2, max_tokens=64, extra_body={"top_k": 20, "seed": 1})
        await collect(model)
        await collect(model, ask(max_tokens=8))
        first, second = (r.body for r in server.requests)
        assert (first["temperature"], first["max_tokens"], first["top_k"]) == (0.2, 64, 20)
        assert (second["max_tokens"], second["seed"]) == (8, 1)

    async def test_aclose_closes_the_connection(
        self, server: FakeServer, make_model: MakeModel
    ) -> None:
        """A consumer that stops after the first chunk closes the HTTP response."""
        server.add(Reply(pieces=[chunk({"content": "Hello"}), Stall()]))
        stream = make_model().stream(ask())
        assert await anext(stream) == TextChunk(text="Hello")
        await stream.aclose()  # type: ignore[attr-defined]
        await asyncio.wait_for(server.requests[0].hung_up.wait(), 1)

    async def test_cancel_closes_the_connection(
        self, server: FakeServer, make_model: MakeModel
    ) -> None:
        """A consumer cancelled mid-stream closes the HTTP response and leaves no task."""
        server.add(Reply(pieces=[chunk({"content": "Hello"}), Stall()]))
        first = asyncio.Event()

        async def consume() -> None:
            async for _ in make_model(read_timeout=5).stream(ask()):
                first.set()

        task = asyncio.create_task(consume())
        await first.wait()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await asyncio.wait_for(server.requests[0].hung_up.wait(), 1)
        assert asyncio.all_tasks() == {asyncio.current_task()}


class TestTools:
    async def test_native_tool_call_deltas(self, server: FakeServer, make_model: MakeModel) -> None:
        """Tool-call deltas pass through as they came: split arguments, repeated id and name,
        two calls told apart by index; tools go out in OpenAI's shape."""
        server.add(
            Reply(
                pieces=[
                    chunk({"role": "assistant"}),
                    tool_call_delta(0, "call_a", "add", '{"a": '),
                    tool_call_delta(0, "call_a", "add", "2}"),
                    tool_call_delta(1, "call_b", "add", '{"a"'),
                    tool_call_delta(1, "call_b", "add", ": 4}"),
                    chunk({}, finish="tool_calls"),
                    DONE,
                ]
            )
        )
        chunks = await collect(make_model(), ask(tools=[ADD]))
        assert chunks[:-1] == [
            ToolCallChunk(index=0, id="call_a", name="add", arguments='{"a": '),
            ToolCallChunk(index=0, id="call_a", name="add", arguments="2}"),
            ToolCallChunk(index=1, id="call_b", name="add", arguments='{"a"'),
            ToolCallChunk(index=1, id="call_b", name="add", arguments=": 4}"),
        ]
        assert chunks[-1] == UsageChunk(usage=Usage(prompt_tokens=4, completion_tokens=4))
        assert server.requests[0].body["tools"] == [
            {
                "type": "function",
                "function": {
                    "name": "add",
                    "description": "Add two integers.",
                    "parameters": ADD.parameters,
                },
            }
        ]

    @pytest.mark.parametrize(
        ("must_call", "choice"),
        [
            ([], None),
            (["add"], {"type": "function", "function": {"name": "add"}}),
            (["add", "echo"], "required"),
        ],
    )
    async def test_a_turn_that_must_call_says_so(
        self, server: FakeServer, make_model: MakeModel, must_call: list[str], choice: Any
    ) -> None:
        server.add(Reply(pieces=[chunk({"content": "x"}), DONE]))
        await collect(make_model(), ask(tools=[ADD], must_call=must_call))
        assert server.requests[0].body.get("tool_choice") == choice

    async def test_native_tool_calls_through_the_agent(
        self, server: FakeServer, make_model: MakeModel, workspace: Workspace, tmp_path: Path
    ) -> None:
        """A run calls `add` twice natively, sends the results back as `tool` messages with
        their call ids, and ends with the second turn's text."""
        server.add(
            Reply(
                pieces=[
                    tool_call_delta(0, "call_a", "add", '{"a": 2, '),
                    tool_call_delta(0, "call_a", "add", '"b": 3}'),
                    tool_call_delta(1, "call_b", "add", '{"a": 4, "b": 5}'),
                    chunk({}, finish="tool_calls"),
                    DONE,
                ]
            ),
            text_reply("5 and ", "9."),
        )
        agent = Agent(
            workspace=workspace, model=make_model(), settings=AgentSettings(trajectory_dir=tmp_path)
        )
        events = [e async for e in agent.run("Add 2+3 and 4+5", strategy="exploratory")]
        check_stream(events)
        calls = [e for e in events if e.type == "tool_call"]
        assert [(e.call_id, e.name, e.arguments, e.format) for e in calls] == [
            ("call_a", "add", {"a": 2, "b": 3}, "native"),
            ("call_b", "add", {"a": 4, "b": 5}, "native"),
        ]
        assert (last(events).status, last(events).answer) == ("ok", "5 and 9.")

        messages = server.requests[1].body["messages"]
        assert messages[-3] == {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 4, "b": 5}'},
                },
            ],
        }
        tool_messages = [(m["role"], m["tool_call_id"]) for m in messages[-2:]]
        assert tool_messages == [("tool", "call_a"), ("tool", "call_b")]
        assert ["5" in messages[-2]["content"], "9" in messages[-1]["content"]] == [True, True]

    async def test_text_tool_mode(
        self, server: FakeServer, make_model: MakeModel, workspace: Workspace, tmp_path: Path
    ) -> None:
        """In text mode no tools are sent, and the results come back as one user message."""
        written = call("add", a=2, b=3)
        server.add(
            text_reply(written[:15], written[15:]),
            text_reply("The sum is ", "5."),
        )
        model = make_model(tool_mode="text")
        assert model.native_tools is False
        agent = Agent(
            workspace=workspace, model=model, settings=AgentSettings(trajectory_dir=tmp_path)
        )
        events = [e async for e in agent.run("Add 2 and 3", strategy="exploratory")]
        assert (last(events).status, last(events).answer) == ("ok", "The sum is 5.")
        assert all("tools" not in r.body for r in server.requests)
        messages = server.requests[1].body["messages"]
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
        assert messages[2] == {"role": "assistant", "content": written}
        results = messages[3]["content"]
        assert results.startswith("Results of your tool calls:")
        assert "add" in results
        assert "5" in results
        assert results.endswith(TOOL_RESULTS_NUDGE)

    async def test_text_tool_mode_sends_the_requests_nudge(
        self, server: FakeServer, make_model: MakeModel
    ) -> None:
        """In text mode the folded results end with the request's `results_nudge`, not the
        default."""
        server.add(text_reply("ok"))
        written = call("add", a=2, b=3)
        request = ModelRequest(
            messages=[
                Message(role="user", content="Add 2 and 3"),
                Message(role="assistant", content=written),
                Message(role="tool", content="5", tool_call_id="c1", name="add"),
            ],
            results_nudge="Call done with the sum.",
        )
        await collect(make_model(tool_mode="text"), request)
        results = server.requests[0].body["messages"][-1]
        assert results["role"] == "user"
        assert results["content"].endswith("\n\nCall done with the sum.")
        assert TOOL_RESULTS_NUDGE not in results["content"]


SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


@pytest.mark.parametrize(
    ("mode", "fields"),
    [
        (
            "json_schema",
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "answer", "schema": SCHEMA, "strict": True},
                }
            },
        ),
        ("json_object", {"response_format": {"type": "json_object", "schema": SCHEMA}}),
        ("vllm", {"guided_json": SCHEMA}),
        ("none", {}),
    ],
)
async def test_structured_output(
    server: FakeServer, make_model: MakeModel, mode: str, fields: dict[str, Any]
) -> None:
    """A request's JSON schema is sent the way `structured_output` says."""
    server.add(text_reply('{"x": 1}'))
    await collect(make_model(structured_output=mode), ask(json_schema=SCHEMA))
    body = server.requests[0].body
    sent = {k: body[k] for k in ("response_format", "guided_json") if k in body}
    assert sent == fields


class TestRetries:
    async def test_429_honours_retry_after(self, server: FakeServer, make_model: MakeModel) -> None:
        """A 429 with `Retry-After: 0` is retried and the answer arrives."""
        server.add(
            error_reply(429, {"error": {"message": "slow down"}}, {"retry-after": "0"}),
            text_reply("fine"),
        )
        assert text_of(await collect(make_model())) == "fine"
        assert len(server.requests) == 2

    async def test_retry_after_is_capped(self, server: FakeServer, make_model: MakeModel) -> None:
        """A `Retry-After` longer than retry_max_wait waits retry_max_wait."""
        server.add(error_reply(429, "busy", {"retry-after": "3600"}), text_reply("fine"))
        answer = await asyncio.wait_for(collect(make_model(retry_max_wait=0.01)), 1)
        assert text_of(answer) == "fine"

    async def test_retry_after_as_a_date(self, server: FakeServer, make_model: MakeModel) -> None:
        """A `Retry-After` HTTP date in the past means: retry now."""
        date = format_datetime(datetime(2000, 1, 1, tzinfo=UTC), usegmt=True)
        server.add(error_reply(429, "busy", {"retry-after": date}), text_reply("fine"))
        answer = await asyncio.wait_for(collect(make_model(retry_max_wait=30)), 1)
        assert text_of(answer) == "fine"

    @pytest.mark.parametrize(
        "value", ["nan", "NaN", "inf", "-inf", "1e999", "-5", "soon", "Mon, 99 Foo 2000"]
    )
    async def test_bad_retry_after_backs_off(
        self, server: FakeServer, make_model: MakeModel, value: str
    ) -> None:
        """A `Retry-After` that is no number of seconds nor a date (`nan`, `inf`, negative,
        garbage) is ignored: the retry waits the usual backoff, a finite wait, and comes."""
        server.add(error_reply(429, "busy", {"retry-after": value}), text_reply("fine"))
        with agentrt_logs() as logs:
            answer = await asyncio.wait_for(collect(make_model(retry_max_wait=30)), 5)
        assert text_of(answer) == "fine"
        (retry,) = [e for e in logs if e["event"] == "model call failed; retrying"]
        assert math.isfinite(retry["wait"])
        assert 0 <= retry["wait"] <= 0.011  # the backoff's first bound: retry_initial_wait

    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            ("0", 0.0),
            (" 2 ", 2.0),
            ("1.5", 1.5),
            ("nan", None),
            ("inf", None),
            ("+3", None),
            ("-1", None),
            ("1_000", None),
            ("Sat, 01 Jan 2000 00:00:00 GMT", 0.0),
            ("", None),
        ],
    )
    def test_retry_after_parsing(self, value: str, expected: float | None) -> None:
        """Only digits or an HTTP date are read; a date in the past means now."""
        assert _retry_after(value) == expected

    async def test_503_twice_then_success(self, server: FakeServer, make_model: MakeModel) -> None:
        """Two 503s are retried, each logged as a warning, and the answer arrives."""
        server.add(error_reply(503, "overloaded"), error_reply(503, "overloaded"))
        server.add(text_reply("fine"))
        with agentrt_logs() as logs:
            assert text_of(await collect(make_model())) == "fine"
        retries = [e for e in logs if e["event"] == "model call failed; retrying"]
        assert [(e["log_level"], e["attempt"]) for e in retries] == [("warning", 1), ("warning", 2)]
        assert retries[0]["error"] == "503 Service Unavailable: overloaded"
        assert 0 <= retries[0]["wait"] <= 0.05

    @pytest.mark.parametrize(
        ("status", "expected"), [(429, "429 Too Many Requests"), (500, "500 Internal Server Error")]
    )
    async def test_retries_exhausted(
        self, server: FakeServer, make_model: MakeModel, status: int, expected: str
    ) -> None:
        """Failures past max_retries raise RetriesExhausted naming the attempts and the last
        status."""
        server.add(*[error_reply(status, {"error": {"message": "nope"}})] * 3)
        with pytest.raises(RetriesExhausted, match=f"after 3 attempts.*{expected}: nope"):
            await collect(make_model(max_retries=2))
        assert len(server.requests) == 3

    async def test_400_is_rejected_at_once(self, server: FakeServer, make_model: MakeModel) -> None:
        """A 400 raises RequestRejected with the server's message, after one request."""
        body = {"error": {"message": "'messages' is too long", "type": "invalid_request_error"}}
        server.add(error_reply(400, body), text_reply("never sent"))
        with pytest.raises(RequestRejected) as caught:
            await collect(make_model())
        assert str(caught.value) == "400 Bad Request: 'messages' is too long"
        assert len(server.requests) == 1

    async def test_401_is_rejected(self, server: FakeServer, make_model: MakeModel) -> None:
        """A 401 raises RequestRejected quoting the body when it is not JSON."""
        server.add(error_reply(401, "invalid   api\nkey"))
        with pytest.raises(RequestRejected, match=r"^401 Unauthorized: invalid api key$"):
            await collect(make_model())
        assert len(server.requests) == 1

    async def test_not_an_event_stream(self, server: FakeServer, make_model: MakeModel) -> None:
        """A 200 that is not an event stream is rejected, saying what came instead."""
        server.add(error_reply(200, {"choices": []}))
        with pytest.raises(RequestRejected, match="expected an event stream, got application/json"):
            await collect(make_model())

    async def test_slow_first_byte(self, server: FakeServer, make_model: MakeModel) -> None:
        """A server silent past the read timeout is abandoned and asked again."""
        server.add(Reply(before=Stall()), text_reply("fine"))
        assert text_of(await collect(make_model(read_timeout=0.2))) == "fine"
        assert server.requests[0].hung_up.is_set()

    @pytest.mark.parametrize(
        "pieces",
        [
            Reply(before=Cut()),
            Reply(pieces=[Cut()]),
            Reply(pieces=[chunk({"role": "assistant", "content": ""}), Cut()]),
            Reply(pieces=['data: {"choices": [{"delta": {"content": "Hel', Cut()]),
            Reply(pieces=[]),
        ],
        ids=[
            "before-headers",
            "after-headers",
            "after-a-role-delta",
            "in-the-first-event",
            "empty",
        ],
    )
    async def test_cut_before_the_answer(
        self, server: FakeServer, make_model: MakeModel, pieces: Reply
    ) -> None:
        """A connection cut (or a stream ended) before any chunk is retried."""
        server.add(pieces, text_reply("fine"))
        assert text_of(await collect(make_model())) == "fine"
        assert len(server.requests) == 2

    async def test_error_event_before_the_answer(
        self, server: FakeServer, make_model: MakeModel
    ) -> None:
        """An error event before any chunk is retried, or rejected when its code is a 4xx."""
        server.add(
            Reply(pieces=[chunk({"role": "assistant"}), 'data: {"error": {"message": "oom"}}\n\n']),
            text_reply("fine"),
            Reply(pieces=['data: {"error": {"message": "bad grammar", "code": 400}}\n\n']),
        )
        model = make_model()
        assert text_of(await collect(model)) == "fine"
        with pytest.raises(RequestRejected, match=r"^400 Bad Request: bad grammar$"):
            await collect(model)


class TestBrokenStreams:
    async def test_cut_mid_stream(self, server: FakeServer, make_model: MakeModel) -> None:
        """A connection cut after the first chunk raises StreamInterrupted, not a retry."""
        server.add(Reply(pieces=[chunk({"content": "The ans"}), Cut()]), text_reply("never"))
        stream = make_model().stream(ask())
        assert await anext(stream) == TextChunk(text="The ans")
        with pytest.raises(StreamInterrupted, match="broke off after the answer had begun"):
            await anext(stream)
        assert len(server.requests) == 1

    async def test_read_timeout_mid_stream(self, server: FakeServer, make_model: MakeModel) -> None:
        """Silence past the read timeout after the first chunk raises StreamInterrupted."""
        server.add(Reply(pieces=[chunk({"content": "The ans"}), Stall()]))
        with pytest.raises(StreamInterrupted, match="ReadTimeout"):
            await collect(make_model(read_timeout=0.2))

    @pytest.mark.parametrize(
        "data",
        ["{not json", '{"choices": [{"delta": {"tool_calls": ["x"]}}]}'],
        ids=["json", "shape"],
    )
    async def test_invalid_json_mid_stream(
        self, server: FakeServer, make_model: MakeModel, data: str
    ) -> None:
        """A `data:` that is not a JSON completion chunk, after the first chunk, raises
        StreamInterrupted."""
        server.add(Reply(pieces=[chunk({"content": "The ans"}), f"data: {data}\n\n", DONE]))
        with pytest.raises(StreamInterrupted, match=re.escape(f"not a completion chunk: {data}")):
            await collect(make_model())

    async def test_error_event_mid_stream(self, server: FakeServer, make_model: MakeModel) -> None:
        """An `error` object after the first chunk raises StreamInterrupted with its message."""
        error = 'data: {"error": {"message": "engine died", "code": 500}}\n\n'
        server.add(Reply(pieces=[chunk({"content": "The ans"}), error]))
        with pytest.raises(StreamInterrupted, match="error mid-stream: engine died"):
            await collect(make_model())

    async def test_malformed_sse_lines_are_ignored(
        self, server: FakeServer, make_model: MakeModel
    ) -> None:
        """Lines without a colon, comments, unknown fields and data-less events are skipped."""
        server.add(
            Reply(
                pieces=[
                    ": keep-alive comment\n\n",
                    chunk({"content": "The "}),
                    "no colon at all\nmood: cheerful\n\n",
                    "event: ping\nid: 7\nretry: 10\n\n",
                    chunk({"content": "answer"}),
                    ":another comment\n",
                    chunk({"content": "."}),
                    DONE,
                ]
            )
        )
        chunks = await collect(make_model())
        assert text_of(chunks) == "The answer."
        assert chunks[-1] == UsageChunk(usage=Usage(prompt_tokens=4, completion_tokens=3))


class TestThroughTheAgent:
    async def test_a_cut_turn_is_asked_again(
        self, server: FakeServer, make_model: MakeModel, workspace: Workspace, tmp_path: Path
    ) -> None:
        """A stream cut mid-answer once: a model_error that retries, then the full answer."""
        server.add(
            Reply(pieces=[chunk({"content": "The answer"}), Cut()]),
            text_reply("The answer ", "is 42."),
        )
        agent = Agent(
            workspace=workspace, model=make_model(), settings=AgentSettings(trajectory_dir=tmp_path)
        )
        events = [e async for e in agent.run("What is the answer?", strategy="exploratory")]
        check_stream(events)
        errors = [e for e in events if e.type == "model_error"]
        assert [e.retrying for e in errors] == [True]
        assert errors[0].error.startswith("StreamInterrupted: ")
        assert (last(events).status, last(events).answer) == ("ok", "The answer is 42.")

    async def test_cut_twice_ends_the_run(
        self, server: FakeServer, make_model: MakeModel, workspace: Workspace, tmp_path: Path
    ) -> None:
        """A stream cut mid-answer twice ends the run with status error."""
        cut = Reply(pieces=[chunk({"content": "The answer"}), Cut()])
        server.add(cut, cut, text_reply("never"))
        agent = Agent(
            workspace=workspace, model=make_model(), settings=AgentSettings(trajectory_dir=tmp_path)
        )
        events = [e async for e in agent.run("What is the answer?", strategy="exploratory")]
        check_stream(events)
        assert [e.retrying for e in events if e.type == "model_error"] == [True, False]
        end = last(events)
        assert end.status == "error"
        assert end.error is not None
        assert end.error.startswith("StreamInterrupted: ")
        assert len(server.requests) == 2


class TestSettings:
    async def test_api_key_as_bearer_token(self, server: FakeServer, make_model: MakeModel) -> None:
        """An API key is sent as a bearer token; without one, no Authorization header."""
        server.add(text_reply("a"), text_reply("b"))
        await collect(make_model(api_key="sk-test"))
        await collect(make_model())
        with_key, without = server.requests
        assert with_key.headers["authorization"] == "Bearer sk-test"
        assert "authorization" not in without.headers

    async def test_injected_client(self, server: FakeServer) -> None:
        """A client passed in is used, gets the key and timeouts, and is not closed by aclose."""
        server.add(text_reply("a"))
        settings = OpenAISettings(base_url=server.url, api_key="sk-test", read_timeout=0.3)
        async with httpx.AsyncClient() as client:
            async with OpenAIModel(settings, client=client) as model:
                assert text_of(await collect(model)) == "a"
            assert not client.is_closed
        assert server.requests[0].headers["authorization"] == "Bearer sk-test"

    async def test_from_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Settings come from AGENTRT_OPENAI_* variables, the key also from OPENAI_API_KEY."""
        monkeypatch.setenv("AGENTRT_OPENAI_BASE_URL", "http://gpu-box:8000/v1")
        monkeypatch.setenv("AGENTRT_OPENAI_MODEL", "qwen2.5-7b")
        monkeypatch.setenv("AGENTRT_OPENAI_TOOL_MODE", "text")
        monkeypatch.setenv("AGENTRT_OPENAI_READ_TIMEOUT", "7.5")
        monkeypatch.setenv("AGENTRT_OPENAI_STRUCTURED_OUTPUT", "vllm")
        monkeypatch.setenv("AGENTRT_OPENAI_EXTRA_BODY", json.dumps({"top_k": 20}))
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
        s = OpenAISettings()
        assert (s.base_url, s.model, s.tool_mode, s.read_timeout) == (
            "http://gpu-box:8000/v1",
            "qwen2.5-7b",
            "text",
            7.5,
        )
        assert (s.structured_output, s.extra_body) == ("vllm", {"top_k": 20})
        assert s.api_key is not None
        assert s.api_key.get_secret_value() == "sk-env"
        monkeypatch.setenv("AGENTRT_OPENAI_API_KEY", "sk-agentrt")
        key = OpenAISettings().api_key
        assert key is not None
        assert key.get_secret_value() == "sk-agentrt"
        async with OpenAIModel(s) as model:
            assert (model.name, model.native_tools) == ("qwen2.5-7b", False)


@pytest.mark.parametrize(
    ("settings", "as_tool"),
    [
        ({}, True),
        ({"structured_output": "json_object"}, False),
        ({"structured_output": "vllm"}, False),
        ({"tool_mode": "text"}, False),
    ],
)
async def test_a_typed_output_is_a_tool_call_only_on_openais_own_terms(
    settings: dict[str, str], as_tool: bool
) -> None:
    """OpenAI's native calls take the output as a `final_result` call; llama.cpp, vLLM and
    text-mode servers get the schema-bound final step."""
    async with OpenAIModel(OpenAISettings(base_url="http://127.0.0.1:9", **settings)) as model:  # type: ignore[arg-type]
        assert model.final_result_tool is as_tool


def reasoning_reply(field: str, thoughts: list[str], answer: list[str]) -> Reply:
    """A server with a reasoning parser: the reasoning in `field` deltas, then the answer."""
    pieces: list[Piece] = [chunk({"role": "assistant", "content": ""})]
    pieces += [chunk({field: t, "content": None}) for t in thoughts]
    pieces += [chunk({"content": a}) for a in answer]
    return Reply(pieces=[*pieces, chunk({}, finish="stop"), DONE])


class TestReasoning:
    @pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
    async def test_reasoning_deltas_are_reasoning_chunks(
        self, server: FakeServer, make_model: MakeModel, field: str
    ) -> None:
        """vLLM, SGLang, DeepSeek (`reasoning_content`) and llama.cpp, newer vLLM
        (`reasoning`): each delta is a ReasoningChunk, in order, apart from the text."""
        server.add(reasoning_reply(field, ["Two", " and two."], ["4"]))
        chunks = await collect(make_model())
        kinds = [(c.kind, c.text) for c in chunks if isinstance(c, ReasoningChunk | TextChunk)]
        assert kinds == [("reasoning", "Two"), ("reasoning", " and two."), ("text", "4")]

    async def test_a_runs_reasoning_is_streamed_kept_and_replayed(
        self, server: FakeServer, make_model: MakeModel, workspace: Workspace, tmp_path: Path
    ) -> None:
        """Through the agent: `reasoning_delta` events, not the answer; the recording keeps it,
        and its replay sends it again."""
        server.add(reasoning_reply("reasoning_content", ["Simple", " sum."], ["It is ", "4."]))
        agent = Agent(
            workspace=workspace, model=make_model(), settings=AgentSettings(trajectory_dir=tmp_path)
        )
        result = await agent.run("2 + 2?", strategy="exploratory")
        assert result.answer == "It is 4."
        events = result.trajectory.events
        thought = "".join(e.text for e in events if isinstance(e, ReasoningDeltaEvent))
        assert thought == "Simple sum."
        assert result.path is not None
        _, difference = await replay(Trajectory.read(result.path), workspace=workspace)
        assert difference is None, difference.summary()

    async def test_a_stream_that_starts_inside_think(
        self, server: FakeServer, workspace: Workspace, tmp_path: Path
    ) -> None:
        """`starts_in_reasoning`: the template opened ``<think>``, only ``</think>`` arrives."""
        server.add(text_reply("Simple", " sum.</th", "ink>", "4"))
        settings = OpenAISettings(base_url=server.url, model="deepseek-r1")
        async with OpenAIModel(settings, starts_in_reasoning=True) as model:
            agent = Agent(
                workspace=workspace, model=model, settings=AgentSettings(trajectory_dir=tmp_path)
            )
            result = await agent.run("2 + 2?", strategy="exploratory")
        assert result.answer == "4"
        events = result.trajectory.events
        thought = "".join(e.text for e in events if isinstance(e, ReasoningDeltaEvent))
        assert thought == "Simple sum."
