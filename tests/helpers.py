"""Small builders shared by the tests."""

from __future__ import annotations

import functools
import importlib.util
import itertools
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from agentrt import Agent, Event, RunFinishedEvent, ToolContext, TrajectoryHeader

TEST_WORKSPACE = Path(__file__).parent / "workspace"
"""The workspace the tests run in: small tools that record what happened to them."""

REAL_MODEL_WORKSPACE = Path(__file__).parent / "models" / "workspace"
"""Two strategies and one tool, for runs on a real model: its prompt, and so the CPU time of
every turn, stays short."""

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
EXAMPLES = ROOT / "examples"

MakeAgent = Callable[..., Agent]
"""The `make_agent` fixture: an agent over the test workspace playing scripted turns."""


def call(name: str, **arguments: Any) -> str:
    """A Hermes-style tool call block, as a model writes it."""
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def finish(answer: str) -> str:
    return call("finish", answer=answer)


def classified(query_type: str) -> str:
    """A classifier's answer."""
    return json.dumps({"query_type": query_type, "language": "eng", "suggested_contexts": []})


def types(events: list[Event]) -> list[str]:
    return [e.type for e in events]


def last(events: list[Event]) -> RunFinishedEvent:
    end = events[-1]
    assert isinstance(end, RunFinishedEvent)
    return end


def check_stream(events: list[Event]) -> None:
    """The invariants of every event stream: one run id, seq gap-free from 0, t monotonic,
    exactly one run_finished and it is last."""
    assert [e.seq for e in events] == list(range(len(events)))
    assert len({e.run_id for e in events}) == 1
    assert all(a.t <= b.t for a, b in itertools.pairwise(events))
    assert [e.type for e in events].count("run_finished") == 1
    assert events[-1].type == "run_finished"


def header(run_id: str = "run") -> TrajectoryHeader:
    """A trajectory header, for parts tested without an agent."""
    return TrajectoryHeader(
        run_id=run_id,
        created=datetime.now(UTC),
        query="q",
        model="m",
        workspace="w",
        workspace_fingerprint="f",
    )


@functools.cache
def _vocabulary(model_path: Path) -> Any:
    from llama_cpp import Llama

    return Llama(model_path=str(model_path), vocab_only=True, verbose=False)


async def _no_model(request: object) -> str:
    raise AssertionError("no tool here asks the model")


def tool_context(artifacts: dict[str, Any], output_dir: Path) -> ToolContext:
    """What the executor hands a tool, for calling tools directly: artifacts and an output
    folder; no model, no session."""
    return ToolContext(
        run_id="run",
        session_id=None,
        call_id="call",
        step=1,
        scope=None,
        add_session_tool=lambda _: None,
        complete=_no_model,
        artifacts=artifacts,
        output_dir=output_dir,
        deps=None,
    )


def llama_accepts(gbnf: str, model_path: Path) -> bool:
    """Whether llama.cpp's own grammar parser accepts `gbnf`. llama-cpp-python's schema
    converter writes grammars it refuses (an escaped `$`), and a refused grammar is dropped:
    the model then samples unconstrained, so a converted grammar is checked here."""
    import llama_cpp

    vocab = _vocabulary(model_path)._model.vocab
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode(), b"root")
    if not sampler:
        return False
    llama_cpp.llama_sampler_free(sampler)
    return True


def load_benchmark(name: str) -> ModuleType:
    """benchmarks/NAME.py as a module (benchmarks/ is not a package)."""
    return _load_script(BENCHMARKS / f"{name}.py", f"{name}_benchmark")


def load_example(name: str) -> ModuleType:
    """examples/NAME.py as a module (examples/ is not a package: each file stands alone)."""
    return _load_script(EXAMPLES / f"{name}.py", f"{name}_example")


def _load_script(path: Path, module_name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Its dataclasses and pydantic models resolve their annotations through sys.modules.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_python(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Python run as a user runs it (in `cwd`), importing this checkout's agentrt."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


_RECORD_FIELDS = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


@contextmanager
def agentrt_logs() -> Iterator[list[dict[str, Any]]]:
    """What agentrt logs inside the block, read once it ends: each record as a dict of its
    `event` (the message), `log_level` and the fields bound or passed with it."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = records.append
    logger = logging.getLogger("agentrt")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    entries: list[dict[str, Any]] = []
    try:
        yield entries
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        entries += [
            {
                "event": r.getMessage(),
                "log_level": r.levelname.lower(),
                **{k: v for k, v in vars(r).items() if k not in _RECORD_FIELDS},
            }
            for r in records
        ]
