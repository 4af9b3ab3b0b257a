"""The shape of the code a newcomer reads: no function in agentrt/ longer than a screen."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "agentrt"
MAX_LINES = 60
"""From `def` to the last line of the body, docstring included."""


def long_functions(root: Path, limit: int) -> list[str]:
    """Every function (methods and nested ones too) under `root` longer than `limit` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    where = path.relative_to(root.parent)
                    found.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_is_longer_than_60_lines() -> None:
    too_long = long_functions(PACKAGE, MAX_LINES)
    assert not too_long, "functions over 60 lines:\n" + "\n".join(too_long)
