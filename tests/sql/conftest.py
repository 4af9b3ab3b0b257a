"""Fixtures of the database copilot's tests: shop databases and the real embedding model."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrt.vectors.embedder import Embedder, load_embedder

from .shop import make_shop


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A fresh shop database in its own folder (tests may compare the folder before and after)."""
    folder = tmp_path / "db"
    folder.mkdir()
    return make_shop(folder / "shop.sqlite")


@pytest.fixture(scope="session")
def shared_shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One shop database for tests that only read it."""
    return make_shop(tmp_path_factory.mktemp("shared") / "shop.sqlite")


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real embedding model (the packaged all-MiniLM-L6-v2 here)."""
    return load_embedder()
