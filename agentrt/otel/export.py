"""Internal. Stored trajectories as spans: sent to an OTLP/HTTP collector, or written to a file.

Each trajectory is translated with the OpenTelemetry SDK (a provider of its own, its spans kept
in memory), then handed to the exporter in one batch, whose answer is checked: a collector
that cannot be reached or refuses the spans is an error naming it, never a silent loss.
"""

from __future__ import annotations

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


def _spans_of(trajectory: Trajectory, include_content: bool) -> tuple[ReadableSpan, ...]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: "agentrt"}))
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
