"""The analysis tool pack called as the executor calls it, for its tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentrt import Workspace
from tests.helpers import tool_context

Call = Callable[..., Any]


@pytest.fixture(scope="module")
def default() -> Workspace:
    """The shipped workspace: the one whose tools/ holds the pack."""
    return Workspace()


@pytest.fixture
def artifacts() -> dict[str, Any]:
    return {}


@pytest.fixture
def use(default: Workspace, artifacts: dict[str, Any], tmp_path: Path) -> Call:
    """Call a tool of the pack as the executor does: arguments validated, context filled."""
    context = tool_context(artifacts, tmp_path / "out")

    def use(tool_name: str, /, **arguments: Any) -> Any:
        tool = default.tools[tool_name]
        values = dict(tool.args_model.model_validate(arguments))
        assert tool.context_param is not None
        return tool.fn(**values, **{tool.context_param: context})

    return use
