"""Several server workers over one Postgres: `agentrt serve` processes on their own ports, each
with its own trajectory folder, so that whatever crosses from one to another crossed through
Postgres (the relay, `agentrt.server.relay`).

The model is the scripted demo (`--model demo`): a classification, then `days_between` and
`calculate` at once, then the answer. For a run that stays in progress, the workspace's
`days_between` never returns (until the run is cancelled).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import asyncpg
import httpx
import pytest

from agentrt.cli import DEMO_QUESTION
from agentrt.events import Event
from tests.helpers import MakeAgent, call, finish
from tests.server.serving import wait_until

REPO = Path(__file__).parents[2]
NDJSON = {"Accept": "application/x-ndjson"}
SLOW = '''
@tool
async def days_between(start: date, end: date) -> int:
    """The number of days from one date to another; this one never answers (until its run is
    cancelled).

    Args:
        start: The first date, YYYY-MM-DD.
        end: The second date, YYYY-MM-DD.
    """
    import anyio

    await anyio.sleep_forever()
    raise AssertionError("unreachable")
'''


class Worker:
    """An `agentrt serve` process, its stderr read as it comes."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "agentrt", "serve", "--model", "demo", "--port", "0", *args],
            cwd=cwd,
            env={
                "PATH": "/usr/bin:/bin",
                **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
            },
            stderr=subprocess.PIPE,
            text=True,
        )
        self.said: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        assert self.process.stderr is not None
        threading.Thread(target=self._read, args=(self.process.stderr,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(None)

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match[str]:
        """The first line of stderr from here on that matches `pattern`."""
        while True:
            line = self._lines.get(timeout=timeout)
            assert line is not None, f"the server ended: {''.join(self.said)}"
            self.said.append(line)
            if found := re.search(pattern, line):
                return found

    @property
    def url(self) -> str:
        if not hasattr(self, "_url"):
            self._url = self.wait_for(r"Uvicorn running on (http://127\.0\.0\.1:\d+)").group(1)
        return self._url

    def stop(self) -> int:
        """Ctrl-C, unless it has ended already; its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout=30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()

    def stderr(self) -> str:
        """All it said on stderr (once it has ended)."""
        while (line := self._lines.get(timeout=30)) is not None:
            self.said.append(line)
        return "".join(self.said)


@contextlib.contextmanager
def workers(
    tmp_path: Path, store: str, *extra: str, n: int = 2, failing: bool = False
) -> Iterator[list[Worker]]:
    """`n` workers over `store`, stopped after the block; unless `failing` (the test makes a
    run fail, which is logged with its traceback), none may have logged a traceback."""
    started: list[Worker] = []
    try:
        for i in range(n):
            folder = tmp_path / f"worker{i}"
            folder.mkdir()
            started.append(Worker(["--store", store, *extra], folder))
        for w in started:
            assert w.url
        yield started
        for w in started:  # each stops cleanly on Ctrl-C (unless the test killed it)
            assert w.stop() in (130, -signal.SIGKILL)
            said = w.stderr()
            assert failing or "Traceback" not in said, said
    finally:
        for w in started:
            w.stop()


@pytest.fixture
def slow_workspace(tmp_path: Path) -> Path:
    """The built-in workspace, its `days_between` one that never answers."""
    workspace = tmp_path / "workspace"
    for part in ("strategies", "prompts", "registry", "tools"):
        shutil.copytree(REPO / part, workspace / part)
    basics = workspace / "tools" / "basics.py"
    source = basics.read_text()
    quick = source[source.index("@tool\ndef days_between") :].split("\n\n\n")[0]
    basics.write_text(source.replace(quick, SLOW.strip()))
    return workspace


def read_until(lines: Iterator[str], test: Any) -> list[dict[str, Any]]:
    """Events from an NDJSON stream up to the first that passes `test`."""
    got = []
    for line in lines:
        got.append(json.loads(line))
        if test(got[-1]):
            return got
    raise AssertionError(f"the stream ended first: {got}")


def test_a_run_on_one_worker_is_streamed_from_another(tmp_path: Path, postgres_url: str) -> None:
    """Started on A, streamed from B after a Last-Event-ID: the events after it, byte for byte
    what A sent, ending with run_finished; B's SSE and its run state say the same."""
    with workers(tmp_path, postgres_url) as (a, b), httpx.Client(timeout=60) as client:
        with client.stream(
            "POST", f"{a.url}/runs", json={"query": DEMO_QUESTION}, headers=NDJSON
        ) as started:
            run_id = started.headers["X-Run-Id"]
            lines = started.iter_lines()
            first = read_until(lines, lambda e: e["seq"] == 2)
            from_b = client.get(
                f"{b.url}/runs/{run_id}/events", headers={**NDJSON, "Last-Event-ID": "2"}
            )
            rest = list(lines)
        assert from_b.status_code == 200
        sent_by_a = "".join(line + "\n" for line in rest)
        assert from_b.text == sent_by_a
        end = json.loads(rest[-1])
        assert (end["type"], end["status"], len(first)) == ("run_finished", "ok", 3)

        sse = client.get(f"{b.url}/runs/{run_id}/events").text
        events = [json.loads(line) for line in rest]
        assert sse.endswith(
            "".join(
                f"event: {e['type']}\nid: {e['seq']}\ndata: {line}\n\n"
                for e, line in zip(events, rest, strict=True)
            )
        )
        info = client.get(f"{b.url}/runs/{run_id}").json()
        assert (info["state"], info["query"], len(info["events"])) == (
            "ok",
            DEMO_QUESTION,
            3 + len(rest),
        )
        assert not list((tmp_path / "worker1").glob("trajectories/*/*.jsonl"))
        for protocol in ("ag-ui", "vercel"):  # a UI protocol's frames, resumed mid-run too
            for after in ({}, {"Last-Event-ID": "5"}):
                path = f"/runs/{run_id}/events?protocol={protocol}"
                from_a = client.get(a.url + path, headers=after)
                assert from_a.text == client.get(b.url + path, headers=after).text
                assert from_a.text.count("data: ") > 3


def test_a_run_is_cancelled_from_another_worker(
    tmp_path: Path, postgres_url: str, slow_workspace: Path
) -> None:
    """A run waiting on a slow tool on A, followed and cancelled from B: both streams and A's
    trajectory end `cancelled`, and B's stream is A's, byte for byte."""
    with workers(tmp_path, postgres_url, "--workspace", str(slow_workspace)) as (a, b):
        with (
            httpx.Client(timeout=60) as client,
            client.stream(
                "POST", f"{a.url}/runs", json={"query": DEMO_QUESTION}, headers=NDJSON
            ) as started,
        ):
            run_id = started.headers["X-Run-Id"]
            lines = started.iter_lines()
            so_far = read_until(
                lines, lambda e: e["type"] == "tool_started" and e["name"] == "days_between"
            )
            after = str(so_far[-1]["seq"])
            with client.stream(
                "GET", f"{b.url}/runs/{run_id}/events", headers={**NDJSON, "Last-Event-ID": after}
            ) as followed:
                assert client.get(f"{b.url}/runs/{run_id}").json()["state"] == "running"
                cancelled = client.post(f"{b.url}/runs/{run_id}/cancel")
                from_b = [line + "\n" for line in followed.iter_lines()]
            from_a = [line + "\n" for line in lines]
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["state"] == "cancelled"
        assert from_b == from_a
        end = json.loads(from_a[-1])
        assert (end["type"], end["status"]) == ("run_finished", "cancelled")
        (trajectory,) = (tmp_path / "worker0").glob("trajectories/*/*.jsonl")
        assert json.loads(trajectory.read_text().splitlines()[-1])["status"] == "cancelled"
        again = httpx.post(f"{b.url}/runs/{run_id}/cancel", timeout=30)
        assert again.status_code == 409
        assert "already ended (cancelled)" in again.json()["detail"]


@contextlib.contextmanager
def followed_from_b(
    client: httpx.Client, a: Worker, b: Worker
) -> Iterator[tuple[str, Iterator[str]]]:
    """A run started on A, waiting on its slow tool (A's stream held open: the run goes on),
    and followed from B as far as A has streamed it: the run's id and the rest of B's lines."""
    with client.stream(
        "POST", f"{a.url}/runs", json={"query": DEMO_QUESTION}, headers=NDJSON
    ) as started:
        # Held: a generator dropped half-read would close A's stream, which cancels the run.
        owned = started.iter_lines()
        seen = read_until(owned, lambda e: e["type"] == "tool_started")
        run_id = started.headers["X-Run-Id"]
        with client.stream("GET", f"{b.url}/runs/{run_id}/events", headers=NDJSON) as followed:
            lines = followed.iter_lines()
            read_until(lines, lambda e: e["seq"] == seen[-1]["seq"])
            yield run_id, lines


def test_a_session_is_continued_on_another_worker(tmp_path: Path, postgres_url: str) -> None:
    """A session's first message on A, its second on B: B's run reads the session A wrote
    (it appends after A's turn, at version 1), so the store holds both turns, in order."""
    from agentrt.sessions.store import open_store

    with workers(tmp_path, postgres_url) as (a, b), httpx.Client(timeout=60) as client:
        first = client.post(f"{a.url}/sessions/s1/messages", json={"query": DEMO_QUESTION})
        second = client.post(f"{b.url}/sessions/s1/messages", json={"query": "And again?"})
        assert (first.status_code, second.status_code) == (200, 200), second.text

    async def turns() -> list[tuple[str, int, str]]:
        # The turns as stored: which run wrote each, and the version that run had read.
        store = open_store(postgres_url)
        await store.open()
        db = await asyncpg.connect(postgres_url)
        try:
            session = await store.load("s1")
            rows = await db.fetch(
                "SELECT run_id, base_version FROM agentrt_turns WHERE session_id = 's1' "
                "ORDER BY position"
            )
        finally:
            await db.close()
            await store.close()
        questions = [m.content for m in session.messages if m.role == "user"]
        return [
            (row["run_id"], row["base_version"], q) for row, q in zip(rows, questions, strict=True)
        ]

    assert anyio.run(turns) == [
        (first.headers["X-Run-Id"], 0, DEMO_QUESTION),
        (second.headers["X-Run-Id"], 1, "And again?"),
    ]


def test_a_session_busy_on_one_worker_is_busy_on_all(
    tmp_path: Path, postgres_url: str, slow_workspace: Path
) -> None:
    """A session's run in progress on A: B refuses the session's next message (409, naming the
    run) until the run has been cancelled, then takes it."""
    with (
        workers(tmp_path, postgres_url, "--workspace", str(slow_workspace)) as (a, b),
        httpx.Client(timeout=60) as client,
        client.stream(
            "POST", f"{a.url}/sessions/s1/messages", json={"query": DEMO_QUESTION}, headers=NDJSON
        ) as started,
    ):
        owned = started.iter_lines()
        read_until(owned, lambda e: e["type"] == "tool_started")
        run_id = started.headers["X-Run-Id"]
        refused = client.post(f"{b.url}/sessions/s1/messages", json={"query": "And then?"})
        assert refused.status_code == 409
        assert f"has a run in progress on another worker ({run_id})" in refused.json()["detail"]
        assert client.post(f"{b.url}/runs/{run_id}/cancel").json()["state"] == "cancelled"
        with client.stream(
            "POST", f"{b.url}/sessions/s1/messages", json={"query": "And then?"}, headers=NDJSON
        ) as taken:
            first = json.loads(next(taken.iter_lines()))
        assert (taken.status_code, first["type"], first["session_id"]) == (
            200,
            "run_started",
            "s1",
        )


def test_a_watcher_of_a_dead_worker_s_run_does_not_hang(
    tmp_path: Path, postgres_url: str, slow_workspace: Path
) -> None:
    """A killed (SIGKILL) while B follows its run: B's stream ends with run_finished error,
    saying the worker is gone; the run's events so far stay readable from B."""
    with (
        workers(tmp_path, postgres_url, "--workspace", str(slow_workspace)) as (a, b),
        httpx.Client(timeout=60) as client,
    ):
        with followed_from_b(client, a, b) as (run_id, lines):
            a.process.kill()
            a.process.wait(timeout=30)
            rest = [json.loads(line) for line in lines]
        end = rest[-1]
        assert (end["type"], end["status"]) == ("run_finished", "error"), rest
        assert "the worker that ran it is gone" in end["error"]
        info = client.get(f"{b.url}/runs/{run_id}").json()
        assert info["state"] == "unfinished"
        assert [e["seq"] for e in info["events"]] == list(range(len(info["events"])))


def test_a_worker_that_stops_relays_its_runs_ends_first(
    tmp_path: Path, postgres_url: str, slow_workspace: Path
) -> None:
    """A stopped (Ctrl-C) while B follows its run: A cancels the run as it stops, and B's
    stream ends with that recorded end, `run_finished: cancelled`, not one of its own."""
    with (
        workers(tmp_path, postgres_url, "--workspace", str(slow_workspace)) as (a, b),
        httpx.Client(timeout=60) as client,
    ):
        with followed_from_b(client, a, b) as (run_id, lines):
            a.process.send_signal(signal.SIGINT)
            rest = [json.loads(line) for line in lines]
        assert a.process.wait(timeout=30) == 130
        end = rest[-1]
        assert (end["type"], end["status"], end["error"]) == (
            "run_finished",
            "cancelled",
            "the run was cancelled",
        )
        assert client.get(f"{b.url}/runs/{run_id}").json()["state"] == "cancelled"


def test_a_relay_that_loses_postgres_reconnects(
    tmp_path: Path, postgres_url: str, slow_workspace: Path
) -> None:
    """B's connections to Postgres are ended under it while it follows A's run: B's stream ends
    with run_finished error saying why, A's run goes on, and B reconnects by itself: its client
    follows the run again after its Last-Event-ID (B cancels it), and a run started on B then
    is streamed from A (and cancelled from there)."""
    with (
        workers(tmp_path, postgres_url, "--workspace", str(slow_workspace)) as (a, b),
        httpx.Client(timeout=60) as client,
    ):
        with followed_from_b(client, a, b) as (run_id, lines):
            assert _terminate(postgres_url, f"agentrt relay {b.process.pid}") >= 1
            rest = [json.loads(line) for line in lines]
            assert (rest[-1]["type"], rest[-1]["status"]) == ("run_finished", "error")
            assert "the relay lost its connection to Postgres" in rest[-1]["error"]
            assert "reconnecting; ask again with Last-Event-ID" in rest[-1]["error"]
            assert client.get(f"{a.url}/runs/{run_id}").json()["state"] == "running"
            wait_until(
                lambda: client.get(f"{b.url}/runs/{run_id}").status_code == 200,
                "B to reconnect",
                timeout=30,
            )
            assert client.get(f"{b.url}/runs/{run_id}").json()["state"] == "running"
            after = {**NDJSON, "Last-Event-ID": str(rest[-2]["seq"])}
            with client.stream("GET", f"{b.url}/runs/{run_id}/events", headers=after) as again:
                assert client.post(f"{b.url}/runs/{run_id}/cancel").json()["state"] == "cancelled"
                ended = [json.loads(line) for line in again.iter_lines()]
        assert [e["seq"] for e in ended] == [rest[-2]["seq"] + 1 + i for i in range(len(ended))]
        assert (ended[-1]["type"], ended[-1]["status"]) == ("run_finished", "cancelled")
        # B's own run (its demo model has not been asked yet), streamed from A: B publishes again.
        with followed_from_b(client, b, a) as (later, lines):
            assert client.post(f"{a.url}/runs/{later}/cancel").json()["state"] == "cancelled"
            end = [json.loads(line) for line in lines][-1]
        assert (end["type"], end["status"]) == ("run_finished", "cancelled")


def test_a_run_while_postgres_is_away_is_streamed_from_another_worker_once_it_is_back(
    tmp_path: Path, postgres_url: str
) -> None:
    """Postgres away from both workers: A says 503 (reconnecting) for a run it does not have,
    and a run started on A meanwhile (it fails: its store is away) is relayed once Postgres is
    back: B streams it whole, the bytes A sent."""
    with (
        workers(tmp_path, postgres_url, failing=True) as (a, b),
        httpx.Client(timeout=60) as client,
    ):
        anyio.run(cut_off, postgres_url)
        try:
            wait_until(
                lambda: client.get(f"{a.url}/runs/unknown").status_code == 503,
                "A to see Postgres away",
            )
            down = client.get(f"{a.url}/runs/unknown").json()["detail"]
            assert "reconnecting to Postgres" in down
            ran = client.post(f"{a.url}/runs", json={"query": DEMO_QUESTION}, headers=NDJSON)
        finally:
            anyio.run(restore, postgres_url)
        end = json.loads(ran.text.splitlines()[-1])
        assert (end["type"], end["status"]) == ("run_finished", "error"), ran.text
        run_id = ran.headers["X-Run-Id"]
        wait_until(
            lambda: client.get(f"{b.url}/runs/{run_id}").status_code == 200,
            "A's run to reach B",
            timeout=30,
        )
        assert client.get(f"{b.url}/runs/{run_id}/events", headers=NDJSON).text == ran.text


def _terminate(url: str, application_name: str) -> int:
    """End the Postgres connections of that name; how many there were."""

    async def terminate() -> int:
        conn = await asyncpg.connect(url)
        try:
            ended: int = await conn.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = $1",
                application_name,
            )
        finally:
            await conn.close()
        return ended

    return anyio.run(terminate)


def test_workers_option_serves_from_n_processes(
    tmp_path: Path, postgres_url: str, slow_workspace: Path
) -> None:
    """`--workers 2`: two processes on one port, either knowing a run in progress; stopped by
    Ctrl-C, each cancels its runs first, as a lone server does: a stream open then ends with
    its `run_finished: cancelled`."""
    args = ["--workers", "2", "--store", postgres_url, "--workspace", str(slow_workspace)]
    worker = Worker(args, tmp_path)
    try:
        url = worker.url
        pids = {worker.wait_for(r"Started server process \[(\d+)\]").group(1) for _ in range(2)}
        assert len(pids) == 2
        with (
            httpx.Client(timeout=60) as client,
            client.stream(
                "POST", f"{url}/runs", json={"query": DEMO_QUESTION}, headers=NDJSON
            ) as started,
        ):
            lines = started.iter_lines()
            read_until(lines, lambda e: e["type"] == "tool_started")
            run_id = started.headers["X-Run-Id"]
            for _ in range(4):  # whichever worker answers, it knows the run
                assert client.get(f"{url}/runs/{run_id}").json()["state"] == "running"
            worker.process.send_signal(signal.SIGINT)
            rest = [json.loads(line) for line in lines]
        assert (rest[-1]["type"], rest[-1]["status"]) == ("run_finished", "cancelled")
        worker.stop()
        assert "Traceback" not in worker.stderr(), worker.stderr()
    finally:
        worker.stop()


def test_refuses_workers_without_a_shared_store(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentrt", "serve", "--model", "demo", "--workers", "2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr.strip()) == (
        2,
        "error: --workers 2 needs a store the workers share: give --store postgresql://… "
        "(each worker would otherwise see only its own runs)",
    )


def test_a_store_that_is_down_is_named_without_its_password(tmp_path: Path) -> None:
    with socket_closed_port() as port:
        url = f"postgresql://agentrt:s3cret@127.0.0.1:{port}/runs"
        done = subprocess.run(
            [sys.executable, "-m", "agentrt", "serve", "--model", "demo", "--store", url],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        f"error: cannot use the Postgres store at postgresql://agentrt@127.0.0.1:{port}/runs: "
    )
    assert "s3cret" not in done.stderr


@contextlib.contextmanager
def socket_closed_port() -> Iterator[int]:
    """A loopback port nothing listens on (bound, not listening, for as long as it is used)."""
    import socket

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        yield holder.getsockname()[1]


async def test_events_published_together_are_one_batch(postgres_url: str) -> None:
    """Events published together are written in one transaction: one notification per run,
    naming its last seq (never an event); another worker's relay reads them back as the very
    bytes published, and follows a run to its `run_finished`."""
    from agentrt.events import TextDeltaEvent
    from agentrt.server.relay import Relay
    from agentrt.server.runs import written_end

    def run(run_id: str, deltas: int) -> list[Event]:
        events: list[Event] = [
            TextDeltaEvent(run_id=run_id, seq=i, t=i / 10, step=1, text=f"«{i}»")
            for i in range(deltas)
        ]
        return [*events, written_end(run_id, events, "cancelled", "stopped by the test")]

    heard: list[str] = []
    both = anyio.Event()

    def hear(conn: object, pid: int, channel: str, payload: object) -> None:
        heard.append(str(payload))
        if len(heard) == 2:
            both.set()

    listener = await asyncpg.connect(postgres_url)
    owner = Relay(postgres_url, on_cancel=lambda run_id: None)
    watcher = Relay(postgres_url, on_cancel=lambda run_id: None)
    try:
        async with owner.running(), watcher.running():
            await listener.add_listener("agentrt_events", hear)
            await owner.claim("r1", "first", None)
            await owner.claim("r2", "second", "s")
            one, two = run("r1", 50), run("r2", 10)
            owner.publish(one + two)
            found = await watcher.find("r1")
            assert found is not None
            assert (found.owner, found.query) == (owner.key, "first")
            followed = [e async for batch in watcher.follow(found) for e in batch]
            assert [e.json_bytes for e in followed] == [e.json_bytes for e in one]
            with anyio.fail_after(10):
                await both.wait()
            assert sorted(heard) == ["r1 50", "r2 10"]
            assert (await watcher.info(found)).state == "cancelled"
    finally:
        await listener.close()


async def test_the_relay_forgets_runs_older_than_it_keeps(postgres_url: str) -> None:
    """A run claimed longer ago than `keep` is deleted with its events by the next batch
    written; a recent one stays."""
    from agentrt.events import TextDeltaEvent
    from agentrt.server.relay import Relay
    from agentrt.server.runs import written_end

    relay = Relay(postgres_url, on_cancel=lambda run_id: None, keep=3600)
    async with relay.running():
        for run_id in ("old", "new"):
            await relay.claim(run_id, run_id, None)
        db = await asyncpg.connect(postgres_url)
        try:
            await db.execute(
                "UPDATE agentrt_relay_runs SET claimed = now() - interval '2 hours' "
                "WHERE run_id = 'old'"
            )
            await db.execute("INSERT INTO agentrt_relay_events VALUES ('old', 0, '{}'::bytea)")
            delta: list[Event] = [TextDeltaEvent(run_id="new", seq=0, t=0.0, step=1, text="hi")]
            relay.publish([*delta, written_end("new", delta, "cancelled", "stopped by the test")])
            found = await relay.find("new")
            assert found is not None
            assert len([e async for batch in relay.follow(found) for e in batch]) == 2
            assert await relay.find("old") is None
            left = await db.fetch("SELECT DISTINCT run_id FROM agentrt_relay_events")
            assert [row["run_id"] for row in left] == ["new"]
        finally:
            await db.close()


def test_a_quiet_stream_from_another_worker_gets_keep_alives(
    make_agent: MakeAgent, tmp_path: Path, postgres_url: str
) -> None:
    """Two apps of `create_app(…, ServerSettings(store=…))` in this process: while A's run
    naps, B's SSE stream of it gets comment lines (then B cancels it), and its events are A's
    trajectory."""
    from agentrt.server import ServerSettings, create_app
    from tests.server.serving import LiveServer

    napping = make_agent([call("nap", seconds=60, label="a"), finish("Rested.")])
    other = make_agent([finish("Unused.")], trajectory_dir=tmp_path / "b")
    quick = ServerSettings(store=postgres_url, keepalive=0.05, owner_check=0.05)
    with (
        LiveServer(create_app(napping, ServerSettings(store=postgres_url))) as a,
        LiveServer(create_app(other, quick)) as b,
        httpx.Client(timeout=30) as client,
        client.stream(
            "POST", f"{a.url}/runs", json={"query": "Nap", "strategy": "exploratory"}
        ) as started,
    ):
        run_id = started.headers["X-Run-Id"]
        with client.stream("GET", f"{b.url}/runs/{run_id}/events") as followed:
            chunks = followed.iter_text()
            from_b = ""
            while ": keep-alive" not in from_b:
                from_b += next(chunks)
            assert client.post(f"{b.url}/runs/{run_id}/cancel").json()["state"] == "cancelled"
            from_b += "".join(chunks)
        started.read()
    (path,) = (tmp_path / "trajectories").glob(f"*/{run_id}.jsonl")
    lines = path.read_text().splitlines()[1:]
    assert json.loads(lines[-1])["status"] == "cancelled"
    assert from_b.replace(": keep-alive\n\n", "") == "".join(
        f"event: {json.loads(x)['type']}\nid: {i}\ndata: {x}\n\n" for i, x in enumerate(lines)
    )


def test_a_run_resumed_on_one_worker_is_followed_from_another(
    make_agent: MakeAgent, tmp_path: Path, postgres_url: str
) -> None:
    """A run held for approval on A and approved there starts again from `seq` 0 under its id:
    B streams the resumed attempt, not the earlier one's events of the same numbers."""
    from agentrt import Agent, AgentSettings, ScriptedModel
    from agentrt.server import ServerSettings, create_app
    from tests.resume.test_resume import FIRST_TURN, QUESTION, Ledger, make_tools
    from tests.server.serving import LiveServer

    settings = AgentSettings(trajectory_dir=tmp_path / "a")
    held = Agent(
        ScriptedModel([FIRST_TURN, "Paid."]), tools=make_tools(Ledger()), settings=settings
    )
    other = make_agent([finish("Unused.")], trajectory_dir=tmp_path / "b")
    with (
        LiveServer(create_app(held, ServerSettings(store=postgres_url))) as a,
        LiveServer(create_app(other, ServerSettings(store=postgres_url))) as b,
        httpx.Client(timeout=30) as client,
    ):
        first = client.post(f"{a.url}/runs", json={"query": QUESTION}, headers=NDJSON)
        assert first.text.splitlines()[-1].find('"needs_approval"') > 0, first.text
        run_id = first.headers["X-Run-Id"]
        approve = {"decisions": {"call_1_2": {"decision": "approve"}}}
        resumed = client.post(f"{a.url}/runs/{run_id}/approvals", json=approve, headers=NDJSON)
        assert resumed.status_code == 200, resumed.text
        from_b = client.get(f"{b.url}/runs/{run_id}/events", headers=NDJSON)
        assert from_b.text == resumed.text
        assert '"run_resumed"' in from_b.text
        assert client.get(f"{b.url}/runs/{run_id}").json()["state"] == "ok"


@contextlib.asynccontextmanager
async def outage(url: str, *, spared: asyncpg.Connection | None = None) -> AsyncIterator[None]:
    """Postgres away for the database at `url` inside the block, back after it."""
    await cut_off(url, spared=spared)
    try:
        yield
    finally:
        await restore(url)


async def cut_off(url: str, *, spared: asyncpg.Connection | None = None) -> None:
    """No new connections to the database at `url`, the open ones ended (but `spared`)."""
    name = url.rpartition("/")[2]
    admin = await asyncpg.connect(url.rpartition("/")[0] + "/postgres")
    try:
        await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        await admin.execute(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
            "WHERE datname = $1 AND pid <> $2",
            name,
            spared.get_server_pid() if spared is not None else 0,
        )
    finally:
        await admin.close()


async def restore(url: str) -> None:
    """Connections to the database at `url` let in again."""
    name = url.rpartition("/")[2]
    admin = await asyncpg.connect(url.rpartition("/")[0] + "/postgres")
    try:
        await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    finally:
        await admin.close()


async def until(test: Any) -> None:
    """Wait until `test()` holds, for at most 30 s: the relay's state, which no event tells,
    asked again every 10 ms (as `tests.server.serving.wait_until` does from a thread)."""
    with anyio.fail_after(30):
        while not test():  # noqa: ASYNC110
            await anyio.sleep(0.01)


def failed_attempts(caplog: pytest.LogCaptureFixture, relay: Any) -> list[logging.LogRecord]:
    """The warnings `relay` logged, one per failed attempt to reconnect."""
    return [
        r
        for r in caplog.records
        if "could not reconnect" in r.msg and r.__dict__["owner"] == relay.key
    ]


def deltas(run_id: str, seqs: range) -> list[Event]:
    from agentrt.events import TextDeltaEvent

    return [TextDeltaEvent(run_id=run_id, seq=i, t=i / 10, step=1, text=f"«{i}»") for i in seqs]


async def test_events_published_while_postgres_is_away_are_relayed_once_it_is_back(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Postgres away while the owner's run goes on (and another run starts): the owner keeps
    the events, says 503-worthy `RelayLost` meanwhile, logs each failed attempt to reconnect,
    and once back (with the same owner key) writes them: the other worker reads both runs
    whole, in order, the very bytes published."""
    from agentrt.server.relay import Relay, RelayLost
    from agentrt.server.runs import written_end

    owner = Relay(postgres_url, on_cancel=lambda run_id: None, retry_cap=0.2)
    watcher = Relay(postgres_url, on_cancel=lambda run_id: None, retry_cap=0.2)
    async with owner.running(), watcher.running():
        key = owner.key
        await owner.claim("r1", "first", None)
        before = deltas("r1", range(3))
        owner.publish(before)
        await until(lambda: owner._idle.is_set())
        async with outage(postgres_url):
            await until(lambda: owner.down is not None and watcher.down is not None)
            during = deltas("r1", range(3, 10))
            one = [*before, *during, written_end("r1", [*before, *during], "ok", "")]
            owner.publish(one[3:])
            await owner.claim("r2", "second", "s")
            two = [*deltas("r2", range(4))]
            owner.publish(two)
            with pytest.raises(RelayLost, match="reconnecting to Postgres"):
                await watcher.find("r1")
            await until(lambda: len(failed_attempts(caplog, owner)) >= 3)
        # Tried again and again, each wait at most the cap: no crash, no busy loop.
        attempts = failed_attempts(caplog, owner)
        assert [r.__dict__["attempt"] for r in attempts[:3]] == [1, 2, 3]
        assert all(0 < r.__dict__["retry_in"] <= 0.2 for r in attempts)
        await until(lambda: owner.down is None and watcher.down is None)
        assert owner.key == key
        found = await watcher.find("r1")
        assert found is not None
        assert found.owner == key
        followed = [e async for batch in watcher.follow(found) for e in batch]
        assert [e.json_bytes for e in followed] == [e.json_bytes for e in one]
        second = await watcher.find("r2")
        assert second is not None
        assert (second.owner, second.session_id) == (key, "s")
        await until(lambda: owner._idle.is_set())
        assert [e.json_bytes for e in await watcher.read("r2")] == [e.json_bytes for e in two]
        assert (await watcher.info(second)).state == "running"


async def test_an_owner_key_taken_meanwhile_is_replaced_and_the_runs_claimed_again(
    postgres_url: str,
) -> None:
    """Another connection takes the owner's key while Postgres is away from the owner: back,
    the owner takes a new key and claims its run in progress under it, so that the run's
    owner is alive again for the other workers."""
    from agentrt.server.relay import Relay

    owner = Relay(postgres_url, on_cancel=lambda run_id: None, retry_cap=0.2)
    thief = await asyncpg.connect(postgres_url)
    try:
        async with owner.running():
            old = owner.key
            await owner.claim("r1", "first", None)
            async with outage(postgres_url, spared=thief):
                await until(lambda: owner.down is not None)
                await thief.execute("SELECT pg_advisory_lock($1, $2)", 0x61727472, old)
            await until(lambda: owner.down is None)
            assert owner.key != old
            found = await owner.find("r1")
            assert found is not None
            assert found.owner == owner.key
            assert (await owner.info(found)).state == "running"
    finally:
        await thief.close()


async def test_a_full_backlog_drops_the_oldest_events_and_says_how_many(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    from agentrt.server.relay import Relay

    owner = Relay(postgres_url, on_cancel=lambda run_id: None, retry_cap=0.2, backlog=3)
    async with owner.running():
        await owner.claim("r1", "first", None)
        async with outage(postgres_url):
            await until(lambda: owner.down is not None)
            owner.publish(deltas("r1", range(5)))
        await until(lambda: owner.down is None and owner._idle.is_set())
        assert [e.seq for e in await owner.read("r1")] == [2, 3, 4]
    (said,) = [r for r in caplog.records if "dropped events" in r.msg]
    assert (said.levelname, said.__dict__["dropped"]) == ("WARNING", 2)


async def test_a_relay_reconnecting_stops_at_once(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Stopped while Postgres is away (a retry cap far longer than the test): the relay stops
    at once, saying how many events it could not write."""
    from agentrt.server.relay import Relay

    owner = Relay(postgres_url, on_cancel=lambda run_id: None, retry_cap=3600)
    away = outage(postgres_url)
    try:
        with anyio.fail_after(10):
            async with owner.running():
                await away.__aenter__()  # left once the relay has stopped, not before
                await until(lambda: owner.down is not None)
                owner.publish(deltas("r1", range(2)))
    finally:
        await away.__aexit__(None, None, None)
    (said,) = [r for r in caplog.records if "dropped events" in r.msg]
    assert said.__dict__["dropped"] == 2
