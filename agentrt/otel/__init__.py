"""OpenTelemetry GenAI spans of agentrt runs: live, and from stored trajectories.

Needs the `otel` extra (`pip install 'agentrt[otel]'`); agentrt imports nothing of
OpenTelemetry until an agent is instrumented or this package is imported.

```python
from opentelemetry.sdk.trace import TracerProvider
from agentrt import Agent
from agentrt.otel import InstrumentationSettings

provider = TracerProvider()  # with the span processors and exporters of your choice
agent = Agent(model, tools=[...], instrument=InstrumentationSettings(tracer_provider=provider))
```

A run is one `invoke_agent {agent}` span; each model call a `chat {model}` span under it
(model, tokens, finish reason), each tool call an `execute_tool {tool}` span (error status when
the call failed), linked to the spans of the calls it depended on in a `dag` plan. The spans are
derived from the run's events, so `export_trajectories` (`agentrt export-otel`) gives the same
spans for runs recorded long ago.
"""

from agentrt.otel.export import (
    ExportFailed,
    ExportReport,
    export_trajectories,
    jsonl_exporter,
    otlp_exporter,
)
from agentrt.otel.instrument import InstrumentationSettings
from agentrt.otel.spans import SpanTranslator

__all__ = [
    "ExportFailed",
    "ExportReport",
    "InstrumentationSettings",
    "SpanTranslator",
    "export_trajectories",
    "jsonl_exporter",
    "otlp_exporter",
]
