"""Without tracing switched on, agentrt imports nothing of OpenTelemetry."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import ROOT

RUN = """
import asyncio, json, sys
from agentrt import Agent, AgentSettings, ScriptedModel

def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b

async def main() -> None:
    script = ['<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>', "3"]
    agent = Agent(ScriptedModel(script), tools=[add], settings=AgentSettings(trajectory_dir=None),
                  instrument=INSTRUMENT)
    result = await agent.run("What is 1 + 2?")
    assert result.status == "ok", result.error
    print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry"
                            or m.startswith("agentrt.otel"))))

asyncio.run(main())
"""


def otel_modules(instrument: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", RUN.replace("INSTRUMENT", instrument)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert done.stderr == ""
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_a_run_without_tracing_imports_no_opentelemetry() -> None:
    assert otel_modules("False") == []


def test_instrument_true_imports_it() -> None:
    """The same program, traced (to the global provider, a no-op until one is set)."""
    loaded = otel_modules("True")
    assert "opentelemetry.trace" in loaded
    assert "agentrt.otel.spans" in loaded
