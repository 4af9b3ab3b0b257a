"""Internal. Stored trajectories as spans: sent to an OTLP/HTTP collector, or written to a file.

Each trajectory is translated with the OpenTelemetry SDK (a provider of its own, its spans kept
in memory), then handed to the exporter in one batch, whose answer is checked: a collector
that cannot be reached or refuses the spans is an error naming it, never a silent loss.

A run's trace and span ids are derived from its run id, so exporting a trajectory again sends
the same ids: a collector sees the same trace, not a second copy of it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

from agentrt._version import __version__
from agentrt.otel.spans import SpanTranslator
from agentrt.trajectory.format import Trajectory

__all__ = [
    "ExportFailed",
    "ExportReport",
    "export_trajectories",
    "jsonl_exporter",
    "otlp_exporter",
]


class ExportFailed(Exception):
    """The exporter did not take the spans (a collector not reachable, or refusing them)."""


@dataclass(frozen=True, slots=True)
class ExportReport:
    """What an export sent."""

    runs: int
    spans: int


def otlp_exporter(endpoint: str | None = None, *, timeout: float = 10.0) -> SpanExporter:
    """An OTLP/HTTP (protobuf) span exporter.

    :param endpoint: the collector's URL; one without a path gets OTLP's `/v1/traces`
        (`http://localhost:4318` → `http://localhost:4318/v1/traces`). None: the
        `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`/`OTEL_EXPORTER_OTLP_ENDPOINT` environment, else
        `http://localhost:4318/v1/traces`.
    :param timeout: seconds each request to the collector may take
    """
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    if endpoint is not None and urlsplit(endpoint).path in ("", "/"):
        endpoint = endpoint.rstrip("/") + "/v1/traces"
    return OTLPSpanExporter(endpoint=endpoint, timeout=timeout)


def jsonl_exporter(out: IO[str]) -> SpanExporter:
    """An exporter writing each span to `out` as one line of JSON (the SDK's `to_json`)."""
    return ConsoleSpanExporter(out=out, formatter=lambda span: span.to_json(indent=None) + "\n")


class _RunIds(IdGenerator):
    """Ids from a hash of the run id and a count: the same for the same trajectory, since the
    translator makes its spans in the order of the events."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.spans = 0

    def _hash(self, what: str, size: int) -> int:
        digest = hashlib.sha256(f"{self.run_id}/{what}".encode()).digest()
        return int.from_bytes(digest[:size]) or 1  # 0 is the invalid id

    def generate_trace_id(self) -> int:
        return self._hash("trace", 16)

    def generate_span_id(self) -> int:
        self.spans += 1
        return self._hash(f"span/{self.spans}", 8)

    def is_trace_id_random(self) -> bool:
        return False


def _spans_of(trajectory: Trajectory, include_content: bool) -> tuple[ReadableSpan, ...]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({SERVICE_NAME: "agentrt"}),
        id_generator=_RunIds(trajectory.header.run_id),
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("agentrt", __version__)
    translator = SpanTranslator(tracer, trajectory.header, include_content=include_content)
    for event in trajectory.events:
        translator.feed(event)
    translator.close()
    provider.shutdown()
    return memory.get_finished_spans()


def export_trajectories(
    paths: Iterable[Path], exporter: SpanExporter, *, include_content: bool = False
) -> ExportReport:
    """Turn stored trajectories into spans and export them, a trajectory at a time; the
    exporter is shut down at the end.

    :param paths: trajectory files (`agentrt.trajectory.replay.trajectory_files` lists a
        folder's)
    :param exporter: `otlp_exporter(…)`, `jsonl_exporter(…)`, or any SDK span exporter
    :param include_content: record the query, the model's text, tool arguments and results
    :raises ValueError: a file is not a trajectory (the message names it and the line)
    :raises ExportFailed: the exporter refused a batch; those before it were sent
    """
    runs = spans = 0
    try:
        for path in paths:
            batch = _spans_of(Trajectory.read(path), include_content)
            if exporter.export(batch) is not SpanExportResult.SUCCESS:
                msg = f"{path}: the exporter did not take its {len(batch)} spans"
                raise ExportFailed(msg)
            runs, spans = runs + 1, spans + len(batch)
    finally:
        exporter.shutdown()
    return ExportReport(runs, spans)
