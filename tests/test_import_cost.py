"""What `import agentrt` and a code-first agent's first run load: only what they use.

How long the import takes is printed by `benchmarks/overhead.py`; this checks which modules it
loads, in a fresh interpreter, so that a heavy import slipping back in fails a test rather than
only moving a benchmark's number.
"""

from __future__ import annotations

import json

import pytest

from tests.helpers import ROOT, run_python

PROGRAM = """
import asyncio, json, sys, tempfile
import agentrt
import pydantic
imported = sorted(sys.modules)

def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)

built = sorted(
    c.__qualname__
    for c in subclasses(pydantic.BaseModel)
    if c.__module__.startswith("agentrt") and c.__pydantic_complete__
)

def percent(rate: float, of: float) -> float:
    '''`rate` percent of `of`.'''
    return rate / 100 * of

async def main() -> str | None:
    model = agentrt.ScriptedModel([
        '<tool_call>{"name": "percent", "arguments": {"rate": 17.5, "of": 2340}}</tool_call>',
        "409.5",
    ])
    with tempfile.TemporaryDirectory() as tmp:
        settings = agentrt.AgentSettings(trajectory_dir=tmp)
        agent = agentrt.Agent(model, tools=[percent], settings=settings)
        return (await agent.run("What is 17.5% of 2340?")).answer

answer = asyncio.run(main())
run = sorted(sys.modules)
print(json.dumps({"answer": answer, "import": imported, "built": built, "run": run}))
"""


@pytest.fixture(scope="module")
def loaded() -> dict[str, list[str]]:
    """The modules loaded by `import agentrt`, the models whose schema it built, and the
    modules loaded once a code-first agent's first run is done."""
    found: dict[str, list[str]] = json.loads(run_python("-c", PROGRAM, cwd=ROOT).stdout)
    assert found["answer"] == "409.5"
    return found


def loaded_of(modules: list[str], names: list[str]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


NOT_IMPORTED = [
    # Backends and stores only some programs use: `agentrt.__getattr__` imports them.
    "agentrt.models.local",
    "agentrt.models.openai",
    "agentrt.sessions.sqlite",
    "httpx",
    "tenacity",
    "pydantic_settings",
    "llama_cpp",
    # Planners other than `react`: `run_planner` imports them when a strategy names them.
    "agentrt.planning.dag",
    "agentrt.planning.vm",
    "agentrt.planning.pipeline",
    # Only the embedded model renders a chat template; workspaces load jinja2 themselves.
    "jinja2",
    # Logging: structlog (and rich through it) when a record is first logged.
    "structlog",
    "rich",
    # anyio's memory streams: nothing at import makes one.
    "anyio.streams.memory",
    # Feature packages and optional extras.
    "agentrt.server",
    "agentrt.knowledge",
    "agentrt.sql",
    "agentrt.otel",
    "numpy",
    "torch",
    "sentence_transformers",
    "mcp",
    "opentelemetry",
]


def test_import_agentrt_loads_no_optional_subsystem(loaded: dict[str, list[str]]) -> None:
    assert loaded_of(loaded["import"], NOT_IMPORTED) == []


def test_import_agentrt_builds_no_schema(loaded: dict[str, list[str]]) -> None:
    """Models build their schemas when they first validate (`defer_build`), and the import
    validates nothing: the first schema built would also load pydantic's plugin machinery."""
    assert loaded["built"] == []
    assert loaded_of(loaded["import"], ["pydantic.plugin._loader"]) == []


NOT_RUN = [
    "agentrt.models.openai",
    "agentrt.sessions.sqlite",
    "httpx",
    "agentrt.planning.dag",
    "agentrt.planning.vm",
    "agentrt.planning.pipeline",
    # A run that logs nothing binds its run id without importing structlog.
    "structlog",
    "rich",
]


def test_a_code_first_run_loads_only_what_it_uses(loaded: dict[str, list[str]]) -> None:
    assert loaded_of(loaded["run"], NOT_RUN) == []


def test_lazy_names_are_the_real_objects() -> None:
    """Asking `agentrt` for a lazily imported name gives the class its module defines."""
    import agentrt
    from agentrt.models.local import LocalModel
    from agentrt.sessions.sqlite import SqliteSessionStore

    assert agentrt.LocalModel is LocalModel
    assert agentrt.SqliteSessionStore is SqliteSessionStore
    assert {"LocalModel", "SqliteSessionStore", "OpenAIModel"} <= set(dir(agentrt))
