"""Against a real OpenAI-compatible server: llama-cpp-python's own, on a free loopback port,
serving the real Qwen2.5-Coder-0.5B. Bounded by tokens, never by wall-clock asserts."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import BaseModel

from agentrt import (
    Agent,
    AgentSettings,
    Message,
    ModelRequest,
    ModelResponseEvent,
    OpenAIModel,
    OpenAISettings,
    TextChunk,
    ToolCallChunk,
    ToolCallEvent,
    ToolDefinition,
    ToolFinishedEvent,
    UsageChunk,
)
from agentrt.parsing import NativeToolCallAssembler
from agentrt.parsing.toolcalls import CallPiece
from tests.helpers import REAL_MODEL_WORKSPACE, check_stream


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def server(small_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`python -m llama_cpp.server` started for these tests and stopped by its PID."""
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(small_model_path),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                "4096",
                "--n_threads",
                "2",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "OMP_WAIT_POLICY": "passive"},
        )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited {process.returncode}:\n{log.read_text()}")
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not come up:\n{log.read_text()}")
            time.sleep(0.2)
        yield base
    finally:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def model(base: str, **settings: object) -> OpenAIModel:
    # llama-cpp-python's server answers 500 to response_format json_schema: json_object it is.
    return OpenAIModel(
        OpenAISettings(
            base_url=base,
            model="qwen",
            structured_output="json_object",
            temperature=0,
            **settings,  # type: ignore[arg-type]
        )
    )


ADD = ToolDefinition(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)


async def test_text_streams_in_pieces(server: str) -> None:
    """The answer arrives as many text deltas, then usage."""
    async with model(server) as m:
        request = ModelRequest(
            messages=[Message(role="user", content="Name three colours.")], max_tokens=24
        )
        chunks = [c async for c in m.stream(request)]
    texts = [c for c in chunks if isinstance(c, TextChunk)]
    assert len(texts) >= 5
    assert isinstance(chunks[-1], UsageChunk)
    assert 0 < chunks[-1].usage.completion_tokens <= 24


async def test_a_forced_tool_call_streams_natively(server: str) -> None:
    """Held to a named tool (`must_call`, sent as `tool_choice`), the server streams native
    tool_call deltas (id and name repeated in every chunk); assembled, they are one call to
    `add` with integer arguments."""
    async with model(server) as m:
        request = ModelRequest(
            messages=[Message(role="user", content="What is 2 + 3?")],
            tools=[ADD],
            max_tokens=40,
            must_call=["add"],
        )
        deltas = [c async for c in m.stream(request) if isinstance(c, ToolCallChunk)]
    assert len(deltas) > 2
    assembler = NativeToolCallAssembler()
    pieces = [p for d in deltas for p in assembler.feed(d.index, d.id, d.name, d.arguments)]
    pieces += assembler.close()
    (call,) = pieces
    assert isinstance(call, CallPiece)
    assert call.name == "add"
    assert isinstance(call.arguments["a"], int)
    assert isinstance(call.arguments["b"], int)


async def test_a_json_step_parses(server: str) -> None:
    """A JSON schema sent as json_object-with-schema comes back as JSON that fits it."""
    schema = {
        "type": "object",
        "properties": {"colour": {"type": "string", "enum": ["red", "green", "blue"]}},
        "required": ["colour"],
        "additionalProperties": False,
    }
    async with model(server) as m:
        request = ModelRequest(
            messages=[Message(role="user", content="Which colour is the sky?")],
            json_schema=schema,
            max_tokens=20,
        )
        text = "".join([c.text async for c in m.stream(request) if isinstance(c, TextChunk)])
    assert json.loads(text)["colour"] in ("red", "green", "blue")


async def test_a_run_with_native_calls(server: str, tmp_path: Path) -> None:
    """A whole run over the server with native tools: the calls run, their results go back
    with matching ids and the server accepts them (it is forced to call `add` every turn, so
    the run ends on its step budget)."""
    forced = {"tool_choice": {"type": "function", "function": {"name": "add"}}}
    async with model(server, extra_body=forced, max_tokens=40) as m:
        agent = Agent(
            workspace=REAL_MODEL_WORKSPACE,
            model=m,
            settings=AgentSettings(trajectory_dir=tmp_path, default_strategy="arithmetic"),
        )
        result = await agent.run("What is 2 + 3?", strategy="arithmetic")
    events = result.trajectory.events
    check_stream(events)
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert calls
    assert {(e.name, e.format) for e in calls} == {("add", "native")}
    assert any(isinstance(e, ToolFinishedEvent) and e.status == "ok" for e in events)
    turns = [e for e in events if isinstance(e, ModelResponseEvent) and e.purpose == "turn"]
    assert len(turns) == 4  # every turn after the first was answered with tool results in it
    assert result.status == "budget_exhausted"


class Capital(BaseModel):
    city: str
    country: str


async def test_a_typed_output_over_the_server(server: str) -> None:
    """The output step goes to the server with the schema (llama.cpp builds a grammar from
    it): the answer validates, whatever the prose before it said."""
    async with model(server, max_tokens=40) as m:
        agent = Agent(m, output_type=Capital, output_retries=0)
        result = await agent.run("What is the capital of France?")
    assert result.status == "ok", result.error
    assert isinstance(result.output, Capital)
    assert result.output.city.strip()
