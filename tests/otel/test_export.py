"""`agentrt export-otel`: stored trajectories as spans, to a file and to a real OTLP/HTTP
receiver started here on 127.0.0.1, whose requests are decoded with opentelemetry-proto."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from tests.helpers import ROOT, MakeAgent
from tests.planning.plans import finish, node, plan


def agentrt(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "agentrt", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
async def trajectories(make_agent: MakeAgent, tmp_path: Path) -> Path:
    """A folder of two recorded runs: a dag plan whose second node depends on the first and
    fails, and a react run."""
    dag = make_agent(
        [
            plan(node("T1", "add", a=1, b=2), node("T2", "fail", ["T1"], message="got {T1}")),
            finish("no"),
        ]
    )
    await dag.run("Go", strategy="planned")
    react = make_agent(
        ['<tool_call>{"name": "echo", "arguments": {"text": "hi"}}</tool_call>', "hi"]
    )
    await react.run("Say hi", strategy="exploratory")
    folder = tmp_path / "trajectories"
    assert len(list(folder.rglob("*.jsonl"))) == 2
    return folder


class Receiver(ThreadingHTTPServer):
    """An OTLP/HTTP trace receiver: POST /v1/traces, a protobuf `ExportTraceServiceRequest`."""

    def __init__(self, status: int = 200) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.status = status
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def spans(self) -> list[Span]:
        return [
            span
            for request in self.requests
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        assert self.headers["Content-Type"] == "application/x-protobuf"
        self.server.paths.append(self.path)
        self.server.requests.append(ExportTraceServiceRequest.FromString(body))
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test reads what arrived, not the log."""


@pytest.fixture
def receiver(request: pytest.FixtureRequest) -> Iterator[Receiver]:
    server = Receiver(getattr(request, "param", 200))
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def attributes(span: Span) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        value = getattr(kv.value, kind)
        out[kv.key] = [v.string_value for v in value.values] if kind == "array_value" else value
    return out


def test_to_a_collector_over_otlp_http(trajectories: Path, receiver: Receiver) -> None:
    """Two runs, their spans in one trace each; names, attributes, parentage, the plan's link,
    the failed call's status; `/v1/traces` added to a URL without a path."""
    done = agentrt("export-otel", str(trajectories), "--endpoint", receiver.url, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    spans = receiver.spans()
    assert done.stdout.strip() == f"2 run(s), {len(spans)} span(s) → {receiver.url}"
    assert receiver.paths == ["/v1/traces", "/v1/traces"]
    resource = receiver.requests[0].resource_spans[0].resource
    assert {kv.key: kv.value.string_value for kv in resource.attributes}["service.name"] == (
        "agentrt"
    )
    runs = [s for s in spans if s.name == "invoke_agent workspace"]
    assert len(runs) == 2
    assert all(s.parent_span_id == b"" for s in runs)
    by_trace = {r.trace_id: r for r in runs}
    for span in spans:
        if span not in runs:
            assert span.parent_span_id == by_trace[span.trace_id].span_id
    tools = {attributes(s).get("gen_ai.tool.call.id"): s for s in spans if "execute_tool" in s.name}
    t1, t2 = tools["T1"], tools["T2"]
    assert (t1.name, t2.name) == ("execute_tool add", "execute_tool fail")
    assert [(link.trace_id, link.span_id) for link in t2.links] == [(t1.trace_id, t1.span_id)]
    assert t2.status.code == Status.STATUS_CODE_ERROR
    assert attributes(t2)["agentrt.tool.status"] == "error"
    chats = [s for s in spans if s.name == "chat scripted"]
    assert {attributes(c)["gen_ai.operation.name"] for c in chats} == {"chat"}
    assert all(c.kind == Span.SPAN_KIND_CLIENT for c in chats)
    assert all(c.start_time_unix_nano <= c.end_time_unix_nano for c in spans)
    assert not any("gen_ai.tool.call.arguments" in attributes(s) for s in spans)


@pytest.mark.parametrize("receiver", [400], indirect=True)
def test_a_collector_refusing_the_spans_is_an_error(trajectories: Path, receiver: Receiver) -> None:
    done = agentrt("export-otel", str(trajectories), "--endpoint", receiver.url, cwd=ROOT)
    assert done.returncode == 1
    assert "the exporter did not take its" in done.stderr
    assert ".jsonl: the exporter did not take its" in done.stderr
    assert receiver.url in done.stderr


def test_to_a_file_with_content(trajectories: Path, tmp_path: Path) -> None:
    out = tmp_path / "spans.jsonl"
    done = agentrt(
        "export-otel", str(trajectories), "--output", str(out), "--include-content", cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    spans = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert done.stdout.strip() == f"2 run(s), {len(spans)} span(s) → {out}"
    names = sorted(s["name"] for s in spans)
    assert names.count("invoke_agent workspace") == 2
    assert {"execute_tool add", "execute_tool fail", "execute_tool echo"} <= set(names)
    echo = next(s for s in spans if s["name"] == "execute_tool echo")
    assert json.loads(echo["attributes"]["gen_ai.tool.call.arguments"]) == {"text": "hi"}
    assert json.loads(echo["attributes"]["gen_ai.tool.call.result"]) == "hi"
    ids = {s["context"]["span_id"]: s["name"] for s in spans}
    t2 = next(s for s in spans if s["name"] == "execute_tool fail")
    assert [ids[link["context"]["span_id"]] for link in t2["links"]] == ["execute_tool add"]


def test_bad_input(trajectories: Path, tmp_path: Path) -> None:
    """Both destinations, a file that is not a trajectory: each a clear error."""
    both = agentrt(
        "export-otel", str(trajectories), "--endpoint", "http://x", "--output", "f", cwd=ROOT
    )
    assert both.returncode == 2
    assert "give --endpoint or --output, not both" in both.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "header"}\n', encoding="utf-8")
    done = agentrt("export-otel", str(bad), "--output", str(tmp_path / "o.jsonl"), cwd=ROOT)
    assert done.returncode == 1
    assert f"{bad}:1: not a trajectory header" in done.stderr


def test_exporting_again_sends_the_same_ids(trajectories: Path, tmp_path: Path) -> None:
    """Ids are derived from the run id: a second export is the same trace, not a copy."""

    def ids(name: str) -> list[tuple[str, str, str | None]]:
        out = tmp_path / name
        done = agentrt("export-otel", str(trajectories), "--output", str(out), cwd=ROOT)
        assert done.returncode == 0, done.stderr
        spans = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        return [(s["context"]["trace_id"], s["context"]["span_id"], s["parent_id"]) for s in spans]

    first = ids("first.jsonl")
    assert first == ids("second.jsonl")
    assert len({trace for trace, _, _ in first}) == 2
    assert len({span for _, span, _ in first}) == len(first)
