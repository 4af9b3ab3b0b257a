"""Internal. Live tracing: what `Agent(instrument=…)` switches on.

Each run gets a `SpanTranslator` fed every event as the run stamps it (`RunContext.observe`),
so a run's spans are complete whether or not its caller reads the stream to the end. Its span
is a child of the span current where `agent.run(…)` was called (a web request's, say).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from opentelemetry import context, trace
from opentelemetry.trace import TracerProvider

from agentrt._version import __version__
from agentrt.events import Event
from agentrt.logs import get_logger
from agentrt.otel.spans import SpanTranslator
from agentrt.trajectory.format import TrajectoryHeader

__all__ = ["Instrumentation", "InstrumentationSettings", "provider_of"]

log = get_logger("agentrt.otel")

# The backends agentrt ships, by class name, as the conventions name their providers; a model
# of another class is named by its class.
_PROVIDERS = {"OpenAIModel": "openai", "LocalModel": "llama_cpp", "ScriptedModel": "agentrt"}


def provider_of(model: object) -> str:
    """`gen_ai.provider.name` for a model object."""
    cls = type(model).__name__
    return _PROVIDERS.get(cls, cls)


@dataclass(frozen=True, slots=True)
class InstrumentationSettings:
    """How an agent's runs are traced (`Agent(instrument=InstrumentationSettings(…))`;
    `instrument=True` is `InstrumentationSettings()`)."""

    tracer_provider: TracerProvider | None = None
    """Where spans go; None: OpenTelemetry's global provider (`trace.set_tracer_provider`)."""
    include_content: bool = False
    """Record the query, the model's text, tool arguments and results, and the answer. Off by
    default: they may hold personal data."""
    agent_name: str | None = None
    """`gen_ai.agent.name`, and the run span's name (`invoke_agent {name}`); None: the
    workspace folder's name, or `agentrt` for a code-first agent."""


class Instrumentation:
    """An agent's tracing: the settings, and a tracer made once."""

    def __init__(self, settings: InstrumentationSettings) -> None:
        self.settings = settings
        provider = settings.tracer_provider or trace.get_tracer_provider()
        self.tracer = provider.get_tracer("agentrt", __version__)

    def observer(self, header: TrajectoryHeader, model: object) -> Callable[[Event], None]:
        """What one run calls with each of its events: they become the run's spans."""
        translator = SpanTranslator(
            self.tracer,
            header,
            include_content=self.settings.include_content,
            agent_name=self.settings.agent_name,
            provider=provider_of(model),
            parent=context.get_current(),
        )
        failed = False

        def observe(event: Event) -> None:
            nonlocal failed
            if failed:
                return
            try:
                translator.feed(event)
            except Exception:
                # Tracing must never break the run it watches: its spans stop here, once said.
                failed = True
                log.exception("tracing failed; this run's spans stop here", run_id=header.run_id)

        return observe
