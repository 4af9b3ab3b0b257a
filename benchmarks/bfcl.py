"""The public tool-retrieval set: the Berkeley Function-Calling Leaderboard's single-turn
questions over one pooled catalog, read from the `bfcl-eval` wheel on PyPI.

This project never tunes on it, and keeps it out of the repository: fetch it where you like,

    pip download --no-deps --dest /tmp/bfcl bfcl-eval==2026.3.23
    .venv/bin/python benchmarks/retrieval.py --public /tmp/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl

Every function any question offers goes into one catalog, one tool per name (a name offered
with several descriptions keeps the first, in the order of `CATEGORIES` and of each file), as
an MCP server's tool becomes one: the name, the description's first paragraph, the parameters'
names. Each question with a ground truth asks for the tools its answer calls (`single`: one
call; `parallel`: several, of one tool or of several); an irrelevance question asks for
nothing its own functions serve (`none`), though a tool of the pooled catalog may serve it.
"""

from __future__ import annotations

import contextlib
import json
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agentrt.catalog.metadata import ToolMetadata, schema_metadata

CATEGORIES = {
    "simple_python": "single",
    "simple_java": "single",
    "simple_javascript": "single",
    "multiple": "single",
    "live_simple": "single",
    "live_multiple": "single",
    "parallel": "parallel",
    "parallel_multiple": "parallel",
    "live_parallel": "parallel",
    "live_parallel_multiple": "parallel",
    "irrelevance": "none",
    "live_irrelevance": "none",
}
"""The single-turn categories with one question each, and the query style each is."""
VERSION = "v4"


def load(source: Path) -> tuple[dict[str, ToolMetadata], list[tuple[str, str, list[str]]]]:
    """The pooled catalog, and every question as (text, style, the tools its answer calls),
    from the wheel (or its unpacked `bfcl_eval/data` folder) at `source`."""
    tools: dict[str, ToolMetadata] = {}
    questions = []
    with _opened(source) as rows:
        for category, style in CATEGORIES.items():
            answered = f"possible_answer/BFCL_{VERSION}_{category}.json"
            answers = (
                {} if style == "none" else {r["id"]: r["ground_truth"] for r in rows(answered)}
            )
            for row in rows(f"BFCL_{VERSION}_{category}.json"):
                for function in row["function"]:
                    tools.setdefault(function["name"], _metadata(function))
                called = list(dict.fromkeys(n for call in answers.get(row["id"], []) for n in call))
                if style != "none" and not called:
                    msg = f"{category}: question {row['id']} has no ground truth"
                    raise ValueError(msg)
                questions.append((_question(row), style, called))
    return tools, questions


@contextlib.contextmanager
def _opened(source: Path) -> Iterator[Callable[[str], list[dict[str, Any]]]]:
    """The rows of a data file by its name, read from the folder or the wheel (opened once)."""
    if source.is_dir():
        yield lambda name: _parsed((source / name).read_text(encoding="utf-8"))
        return
    with zipfile.ZipFile(source) as wheel:
        yield lambda name: _parsed(wheel.read(f"bfcl_eval/data/{name}").decode("utf-8"))


def _parsed(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _metadata(function: dict[str, Any]) -> ToolMetadata:
    """What agentrt's MCP client reads from a tool of that schema."""
    name = function["name"]
    return schema_metadata(
        name, function.get("description") or name, function.get("parameters") or {}
    )


def _question(row: dict[str, Any]) -> str:
    """The question's user messages of its first turn (a system prompt is not the request)."""
    return "\n".join(m["content"] for m in row["question"][0] if m["role"] == "user")
