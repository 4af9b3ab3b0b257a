"""Model speed, and what agentrt's client adds on top of a raw request, in one process run.

    .venv/bin/python benchmarks/models.py            # the 0.5B model, 5 rounds
    .venv/bin/python benchmarks/models.py --model qwen2.5-coder-1.5b-instruct-q4_k_m

It starts llama-cpp-python's OpenAI-compatible server on a free loopback port, records the exact
request an agentrt turn sends (system prompt included), and then, alternating in each round so
that all see the same moments of a noisy machine, sends that same request four ways:

- a raw streaming httpx request with the body `OpenAIModel` builds (the floor);
- `OpenAIModel.stream`;
- a whole agentrt run of that one turn through the same client (`Agent.run`: events, parsing);
- `LocalModel` on the same weights in this process (no server at all).

The prompts are identical, so the server's prompt cache favours none of them.

Time to first token, tokens/s and total time are medians over the rounds; the overheads are
differences of medians. Generation dominates (seconds against milliseconds), so read the
overhead rows against their spread, which the table shows.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from agentrt import (
    Agent,
    AgentSettings,
    LocalModel,
    ModelChunk,
    ModelRequest,
    OpenAIModel,
    OpenAISettings,
    TextChunk,
)
from agentrt.models.local import SMALL_PACK
from agentrt.models.weights import materialize, weight_packs

PROMPT = "Write one sentence about the sea."
MAX_TOKENS = 48
WORKSPACE = Path(__file__).parent / "workspace"


@contextmanager
def server(model_path: Path) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tempfile.NamedTemporaryFile("w", suffix=".log", delete=False)  # noqa: SIM115
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model_path),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--n_threads",
            "2",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "OMP_WAIT_POLICY": "passive"},
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(600):
            if process.poll() is not None:
                raise RuntimeError(f"the server exited; see {log.name}")
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        yield base
    finally:
        os.kill(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


class Sample:
    def __init__(self) -> None:
        self.first: list[float] = []
        self.total: list[float] = []
        self.tokens: list[int] = []

    def add(self, first: float, total: float, tokens: int) -> None:
        self.first.append(first)
        self.total.append(total)
        self.tokens.append(tokens)

    def rate(self) -> float:
        return statistics.median(
            n / (t - f)
            for n, t, f in zip(self.tokens, self.total, self.first, strict=True)
            if n > 1
        )


async def timed(chunks: AsyncIterator[ModelChunk], sample: Sample) -> None:
    start = time.perf_counter()
    first = 0.0
    tokens = 0
    async for chunk in chunks:
        if isinstance(chunk, TextChunk):
            tokens += 1
            if not first:
                first = time.perf_counter() - start
    sample.add(first, time.perf_counter() - start, tokens)


class Recorder:
    """Passes calls to a model and keeps the last request (to send the same one raw)."""

    def __init__(self, model: OpenAIModel) -> None:
        self.model = model
        self.native_tools = model.native_tools
        self.name = model.name
        self.request: ModelRequest | None = None

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        self.request = request
        return self.model.stream(request)


async def raw(client: httpx.AsyncClient, url: str, body: dict[str, object], sample: Sample) -> None:
    start = time.perf_counter()
    first = 0.0
    tokens = 0
    async with client.stream("POST", url, json=body) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            delta = json.loads(line[6:])["choices"][0]["delta"]
            if delta.get("content"):
                tokens += 1
                if not first:
                    first = time.perf_counter() - start
    sample.add(first, time.perf_counter() - start, tokens)


async def agent_turn(agent: Agent, sample: Sample) -> None:
    start = time.perf_counter()
    first = 0.0
    tokens = 0
    async for event in agent.run(PROMPT, strategy="chat"):
        if event.type == "text_delta":
            tokens += 1
            if not first:
                first = time.perf_counter() - start
    sample.add(first, time.perf_counter() - start, tokens)


async def main(model_name: str, rounds: int) -> None:
    from rich.console import Console
    from rich.table import Table

    path = materialize(weight_packs()[model_name])
    samples = {name: Sample() for name in ("raw httpx", "OpenAIModel", "agent turn", "LocalModel")}
    local = LocalModel(path, max_tokens=MAX_TOKENS)
    await local.load()
    with server(path) as base:
        settings = OpenAISettings(
            base_url=base, model="bench", temperature=0, max_tokens=MAX_TOKENS
        )
        async with httpx.AsyncClient(timeout=120) as client, OpenAIModel(settings) as openai:
            recorder = Recorder(openai)
            agent = Agent(
                workspace=WORKSPACE,
                model=recorder,
                settings=AgentSettings(trajectory_dir=None, default_strategy="chat"),
            )
            await agent_turn(agent, Sample())
            assert recorder.request is not None
            request = recorder.request
            body = openai._body(request, request.messages)
            url = f"{base}/chat/completions"
            # Round 0 warms up and is dropped: first calls fill caches on both sides.
            for _ in range(rounds + 1):
                await raw(client, url, body, samples["raw httpx"])
                await timed(openai.stream(request), samples["OpenAIModel"])
                await agent_turn(agent, samples["agent turn"])
                await timed(local.stream(request), samples["LocalModel"])
    for s in samples.values():
        for series in (s.first, s.total, s.tokens):
            del series[0]

    floor = samples["raw httpx"]
    table = Table(title=f"{model_name}: {MAX_TOKENS} tokens, median of {rounds} rounds")
    for col in ("path", "first token (ms)", "tokens/s", "total (ms)", "over raw httpx (ms)"):
        table.add_column(col, justify="left" if col == "path" else "right")
    for name, s in samples.items():
        over = statistics.median(s.total) - statistics.median(floor.total)
        spread = max(floor.total) - min(floor.total)
        table.add_row(
            name,
            f"{statistics.median(s.first) * 1000:.0f}",
            f"{s.rate():.1f}",
            f"{statistics.median(s.total) * 1000:.0f}",
            "—" if s is floor else f"{over * 1000:+.1f} (raw spread {spread * 1000:.0f})",
        )
    Console().print(table)
    Console().print(
        "[dim]Every path sends the request an agentrt turn sends. 'agent turn' is a whole run "
        "of that turn (events, parsing; trajectory off) over the same client; LocalModel is "
        "in-process, so it has no server to compare against.[/]"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default=SMALL_PACK, choices=sorted(weight_packs()))
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.model, args.rounds))
