"""Streaming runs over HTTP: many concurrent SSE streams from a scripted model, over loopback.

    .venv/bin/python benchmarks/server.py                  # 200 concurrent runs, the table
    .venv/bin/python benchmarks/server.py --runs 50        # fewer
    .venv/bin/python benchmarks/server.py --runs 5 --json  # a smoke check
    .venv/bin/python benchmarks/server.py --loop uvloop --http httptools   # if installed

The server runs in a process of its own (uvicorn serving `agentrt.server.create_app` over a
scripted model that streams word by word and calls two tools at once); the clients run in this
process, after one unmeasured run that warms the server up. Two loads, one after the other:
all runs started in the same instant (`burst`: each run's start waits behind all the others'),
then as many streams open at every moment (`steady`: each client starts a run as its last one
ends, their starts spread over a run's length; a backend serving that many users). Clients
read the streams by hand (HTTP/1.1, chunked, SSE split at blank lines: `raw_frames`), as a load
generator should: httpx with httpx-sse (`--client httpx`) used 4-5 times the server's CPU per
event, and with both on 2 cores the latency measured was mostly the client's backlog. Latency
is, for each event, the time from its creation in the server (`run_started.started_at +
event.t`, the run's wall clock) to its receipt here, before its JSON is parsed: one machine,
one clock. Both processes share the machine's cores, as a backend and its load generator
would on one box; the table says how much CPU each used (the server's per event: the run, the
stream and the HTTP write), and how busy the machine was.

Each event is serialised once in the server, for its trajectory line and every stream alike;
what that one serialisation costs is measured here too, on the events received, so that the
table says how much of the server's CPU per event it is.

Then the same two loads against the floor (server_floor.py), in a server process of its own:
a bare ASGI app on the same uvicorn that streams the same events at the same pace, built as
dicts, dumped with json and appended to a file per run. What it misses on a machine, no server
of these streams meets there; agentrt's columns over its columns are what agentrt costs.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import psutil

HERE = Path(__file__).parent
T = TypeVar("T")
WORKSPACE = HERE / "workspace"
ANSWER = (
    "Both lookups are back, and they agree: the value is 42. That settles the question, so "
    "here is the answer with the two sources side by side for you to check."
)


class StreamingModel:
    """Streams each turn word by word, `delay` seconds apart. Stateless (the turn is read off
    the conversation), so one instance serves every run: turn 1 calls `noop` twice in parallel,
    turn 2 answers."""

    native_tools = False

    def __init__(self, delay: float) -> None:
        self.delay = delay

    @property
    def name(self) -> str:
        return "bench-streaming"

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        from agentrt import TextChunk, Usage, UsageChunk

        if any(m.role == "assistant" for m in request.messages):
            text = ANSWER
        else:
            calls = "".join(
                f'<tool_call>{{"name": "noop", "arguments": {{"i": {i}}}}}</tool_call>'
                for i in (1, 2)
            )
            text = "Let me look that up in two places at once.\n" + calls
        words = text.split(" ")
        for n, word in enumerate(words):
            if self.delay:
                await asyncio.sleep(self.delay)
            yield TextChunk(text=word if n == 0 else " " + word)
        yield UsageChunk(usage=Usage(prompt_tokens=10, completion_tokens=len(words)))


def serve(fd: int, delay: float, runs: int, loop: str, http: str, app: str) -> None:
    """The server process: `app` (agentrt's, over the streaming model, or the floor's: see
    server_floor.py) on the listening socket `fd`, with uvicorn's `loop` and `http`."""
    import uvicorn

    from agentrt.server.serve import freeze_startup

    with tempfile.TemporaryDirectory() as tmp:
        if app == "floor":
            from server_floor import FloorApp, record, recorded_header

            recording = Path(tmp) / "recording"
            template = asyncio.run(record(WORKSPACE, StreamingModel, recording))
            floor = FloorApp(recorded_header(recording), template, delay, Path(tmp))
            config = uvicorn.Config(floor, lifespan="off", **_uvicorn(loop, http))
            freeze_startup()
            uvicorn.Server(config).run(sockets=[socket.socket(fileno=fd)])
            return
        from agentrt import Agent, AgentSettings
        from agentrt.server import Server, ServerSettings, create_app

        agent = Agent(
            workspace=WORKSPACE,
            model=StreamingModel(delay),
            settings=AgentSettings(trajectory_dir=Path(tmp), default_strategy="bench"),
        )
        served = create_app(agent, ServerSettings(max_runs=runs, keep_finished=runs))
        config = uvicorn.Config(served, **_uvicorn(loop, http))
        freeze_startup()  # as `agentrt serve` does
        Server(config).run(sockets=[socket.socket(fileno=fd)])


async def watched(server: subprocess.Popen[bytes], work: Awaitable[T]) -> T:
    """`work`, or an error as soon as the server's process is gone: its clients would
    otherwise wait forever in the listening socket's backlog, which this process holds."""
    task = asyncio.ensure_future(work)
    while not task.done():
        if server.poll() is not None:
            task.cancel()
            raise RuntimeError(f"the server exited ({server.returncode}): see its error above")
        await asyncio.wait({task}, timeout=0.5)
    return task.result()


def _uvicorn(loop: str, http: str) -> dict[str, Any]:
    return {"log_level": "warning", "access_log": False, "loop": loop, "http": http}


APPS = ("agentrt", "floor")
"""What is served, one after the other: agentrt's app, then the floor's (server_floor.py)."""

BODY = json.dumps({"query": "Look it up twice.", "strategy": "bench"}).encode()
Frames = AsyncIterator[tuple[float, bytes]]
"""A run's stream as its SSE events' `data`, each with the time it was received."""


async def raw_frames(host: str, port: int) -> Frames:
    """Start a run over a connection of its own and read its stream by hand: HTTP/1.1 with a
    chunked body, SSE events split at blank lines. A load generator's client, as lean as can
    be: httpx with httpx-sse cost 4-5 times the server's CPU per event, so that on 2 cores the
    latencies were the client's queue, not the server's."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(
            b"POST /runs HTTP/1.1\r\nHost: %s:%d\r\nAccept: text/event-stream\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (host.encode(), port, len(BODY), BODY)
        )
        head = (await reader.readuntil(b"\r\n\r\n")).lower()
        if not head.startswith(b"http/1.1 200") or b"transfer-encoding: chunked" not in head:
            raise RuntimeError(f"not a chunked 200 response: {head!r}")
        pending = b""
        while size := int((await reader.readline()).split(b";")[0], 16):
            chunk = (await reader.readexactly(size + 2))[:-2]
            now = time.time()
            *events, pending = (pending + chunk).split(b"\n\n")
            for event in events:
                if (at := event.find(b"data: ")) >= 0:  # not a keep-alive comment
                    yield now, event[at + 6 :]
    finally:
        writer.close()


async def httpx_frames(client: Any) -> Frames:
    """Start a run and read its stream with httpx and httpx-sse (`--client httpx`)."""
    from httpx_sse import aconnect_sse

    async with aconnect_sse(client, "POST", "/runs", content=BODY) as source:
        async for sse in source.aiter_sse():
            yield time.time(), sse.data.encode()


async def one_run(frames: Frames, latencies: list[float], received: list[bytes]) -> int:
    """Stream one run; note each event's latency and its JSON; return how many events came."""
    count, started, status = 0, 0.0, None
    async for now, data in frames:
        event = json.loads(data)
        if event["type"] == "run_started":
            started = datetime.fromisoformat(event["started_at"]).timestamp()
        elif event["type"] == "run_finished":
            status = event["status"]
        latencies.append(now - (started + event["t"]))
        received.append(data)
        count += 1
    if status != "ok":
        raise RuntimeError(f"a benchmark run ended {status}, not ok")
    return count


async def measure(url: str, runs: int, server: psutil.Process, client: str) -> dict[str, Any]:
    """Both loads, one after the other on the same server: `burst` then `steady`."""
    import httpx

    limits = httpx.Limits(max_connections=runs + 1, max_keepalive_connections=runs + 1)
    headers = {"Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=300, headers=headers) as http:

        def frames() -> Frames:
            if client == "httpx":
                return httpx_frames(http)
            return raw_frames(http.base_url.host, http.base_url.port or 80)

        # One run first, unmeasured: the server builds its schemas and prompts on first use.
        # Its length paces the steady load.
        t0 = time.perf_counter()
        await one_run(frames(), [], [])
        length = time.perf_counter() - t0
        return {
            "burst": await burst(frames, runs, server),
            "steady": await steady(frames, runs, server, length),
        }


async def burst(
    frames: Callable[[], Frames], runs: int, server: psutil.Process
) -> dict[str, float]:
    """`runs` runs started in the same instant: the worst a server meets, every run's start
    (request, strategy, trajectory file) queued behind the others'."""
    latencies: list[float] = []
    received: list[bytes] = []
    t0, client_cpu, server_cpu = time.perf_counter(), time.process_time(), _cpu(server)
    counts = await asyncio.gather(*(one_run(frames(), latencies, received) for _ in range(runs)))
    seconds = time.perf_counter() - t0
    client_cpu, server_cpu = time.process_time() - client_cpu, _cpu(server) - server_cpu
    return {
        **summary(latencies, sum(counts), seconds, runs, (server_cpu, client_cpu)),
        "serialise_us_per_event": round(serialise_seconds(received) / len(received) * 1e6, 2),
    }


async def steady(
    frames: Callable[[], Frames], runs: int, server: psutil.Process, length: float
) -> dict[str, float]:
    """`runs` streams open at every moment, as a backend serving that many users sees them:
    `runs` clients, each starting a run as its last one ends, their first starts spread over
    one run's `length`. Timed: each client's second run, while all the others stream too (the
    first runs ramp the load up; the third runs keep it on until every second run has ended)."""
    latencies: list[float] = []
    events = 0

    async def client(i: int) -> None:
        nonlocal events
        await asyncio.sleep(length * i / runs)
        for measured in (False, True, False):
            count = await one_run(frames(), latencies if measured else [], [])
            events += count

    t0, client_cpu, server_cpu = time.perf_counter(), time.process_time(), _cpu(server)
    await asyncio.gather(*(client(i) for i in range(runs)))
    seconds = time.perf_counter() - t0
    client_cpu, server_cpu = time.process_time() - client_cpu, _cpu(server) - server_cpu
    return summary(latencies, events, seconds, runs * 3, (server_cpu, client_cpu))


def summary(
    latencies: list[float], events: int, seconds: float, runs: int, cpu: tuple[float, float]
) -> dict[str, float]:
    """A load's rates, its creation-to-receipt latency quantiles (`latencies` in seconds, shown
    in ms), and the CPU seconds the server and the client spent on it (`cpu`)."""
    server_cpu, client_cpu = cpu
    cuts = (
        statistics.quantiles(latencies, n=100, method="inclusive")
        if len(latencies) > 1
        else latencies * 99
    )
    p50, p95, p99 = cuts[49], cuts[94], cuts[98]
    return {
        "runs": runs,
        "events": events,
        "seconds": round(seconds, 3),
        "events_per_s": round(events / seconds, 1),
        "runs_per_s": round(runs / seconds, 2),
        "p50_ms": round(p50 * 1000, 2),
        "p95_ms": round(p95 * 1000, 2),
        "p99_ms": round(p99 * 1000, 2),
        "p99_over_p50": round(p99 / p50, 2) if p50 > 0 else float("inf"),
        "max_ms": round(max(latencies) * 1000, 2),
        "server_cpu_s": round(server_cpu, 2),
        "client_cpu_s": round(client_cpu, 2),
        "server_cpu_ms_per_event": round(server_cpu / events * 1000, 4),
    }


def serialise_seconds(received: list[bytes]) -> float:
    """CPU seconds to serialise the received events once each, as the server does."""
    from agentrt.events import event_adapter

    events = [event_adapter.validate_json(data) for data in received]
    started = time.process_time()
    for e in events:
        e.__pydantic_serializer__.to_json(e)
    return time.process_time() - started


def _resolved(choice: str, fast: str, plain: str) -> str:
    """What uvicorn's `auto` picks: the faster implementation when it is installed."""
    if choice != "auto":
        return choice
    return fast if importlib.util.find_spec(fast) is not None else plain


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


ROWS = (
    ("runs", "{:.0f}", "runs"),
    ("events received", "{:.0f}", "events"),
    ("wall time (s)", "{:.2f}", "seconds"),
    ("events/s", "{:,.0f}", "events_per_s"),
    ("creation → receipt p50 (ms)", "{:.1f}", "p50_ms"),
    ("creation → receipt p95 (ms)", "{:.1f}", "p95_ms"),
    ("creation → receipt p99 (ms)", "{:.1f}", "p99_ms"),
    ("creation → receipt max (ms)", "{:.1f}", "max_ms"),
    ("p99 / p50 (target ≤ 3×)", "{:.1f}×", "p99_over_p50"),
    # Where the time went: when neither side used its wall time on a core, the cores were busy
    # with something else (the caption's load average says what the machine had to spare).
    ("CPU: server (s)", "{:.1f}", "server_cpu_s"),
    ("CPU: client (s)", "{:.1f}", "client_cpu_s"),
    ("server CPU per event (target ≤ 0.05 ms)", "{:.3f}", "server_cpu_ms_per_event"),
    ("of which its one serialisation (µs)", "{:.1f}", "serialise_us_per_event"),
)
"""The table's rows: a name, how its values are shown, and which of a load's results they are."""


def table(result: dict[str, Any], delay: float) -> None:
    from rich.console import Console
    from rich.table import Table

    loads = [result[app][load] for load in ("burst", "steady") for app in APPS]
    t = Table(
        title=f"{result['streams']} concurrent streaming runs over loopback (SSE)",
        caption=f"a scripted model, a word every {delay * 1000:.0f} ms, 2 parallel tools; "
        f"uvicorn on {result['loop']} / {result['http']}; client: {result['client']}; "
        f"load average (1 min) {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
    )
    t.add_column("measure")
    for load in ("all started at once", "steadily open"):
        t.add_column(f"{load}: agentrt", justify="right")
        t.add_column("floor", justify="right")
    for name, form, key in ROWS:
        t.add_row(name, *(form.format(load[key]) if key in load else "" for load in loads))
    for name, key in (("CPU per event", "server_cpu_ms_per_event"), ("p99", "p99_ms")):
        cells = []
        for ours, floor in (loads[0:2], loads[2:4]):
            # A small run's floor may use less CPU than the clock's tick: no ratio then.
            cells += [f"{ours[key] / floor[key]:.2f}×" if floor[key] else "–", ""]
        t.add_row(f"{name}: agentrt / floor", *cells)
    Console(width=120).print(t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="concurrent streaming runs")
    parser.add_argument(
        "--token-delay", type=float, default=0.01, help="seconds between streamed words"
    )
    parser.add_argument(
        "--loop",
        choices=["auto", "asyncio", "uvloop"],
        default="auto",
        help="uvicorn's event loop (auto: uvloop when installed)",
    )
    parser.add_argument(
        "--http",
        choices=["auto", "h11", "httptools"],
        default="auto",
        help="uvicorn's HTTP parser (auto: httptools when installed)",
    )
    parser.add_argument(
        "--client",
        choices=["raw", "httpx"],
        default="raw",
        help="the streams' client: a lean hand-read HTTP/1.1 (raw) or httpx with httpx-sse",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--serve-fd", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--app", choices=APPS, default="agentrt", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_fd is not None:
        serve(args.serve_fd, args.token_delay, args.runs, args.loop, args.http, args.app)
        return

    result: dict[str, Any] = {app: measured(app, args) for app in APPS} | {
        "streams": args.runs,
        "client": args.client,
        "loop": _resolved(args.loop, "uvloop", "asyncio"),
        "http": _resolved(args.http, "httptools", "h11"),
    }
    if args.json:
        print(json.dumps(result))
    else:
        table(result, args.token_delay)


def measured(app: str, args: argparse.Namespace) -> dict[str, Any]:
    """Both loads against `app`, served by a process of its own."""
    # Listening before the server starts: clients queue in the backlog until it accepts.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    serving = [
        *("--serve-fd", str(sock.fileno()), "--app", app, "--runs", str(args.runs)),
        *("--token-delay", str(args.token_delay), "--loop", args.loop, "--http", args.http),
    ]
    server = subprocess.Popen([sys.executable, __file__, *serving], pass_fds=[sock.fileno()])
    try:
        return asyncio.run(
            watched(server, measure(url, args.runs, psutil.Process(server.pid), args.client))
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
        sock.close()


if __name__ == "__main__":
    main()
