"""What each format's prompt asks the model to write, the parser reads: every
`prompts/tool_formats/<format>.j2` example, filled in, parses back as the call it shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentrt.models.formats import TOOL_FORMATS
from agentrt.parsing import CallPiece, TagSpec, ToolCallParser
from agentrt.workspace import default_workspace_path

PROMPTS = default_workspace_path() / "prompts" / "tool_formats"
SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}


def example(fmt: str) -> str:
    """The call the prompt shows, with a real tool, argument and value."""
    text = (PROMPTS / f"{fmt}.j2").read_text(encoding="utf-8")
    shown = re.search(r"exactly like this[^:\n]*:\n(.*?)(?:\n\n|\Z)", text, re.S)
    assert shown is not None, f"{fmt}.j2 shows no example"
    return (
        shown.group(1)
        .replace("TOOL_NAME", "lookup")
        .replace("ARGUMENT", "query")
        .replace("VALUE", "x")
    )


def calls(text: str) -> list[CallPiece]:
    parser = ToolCallParser([TagSpec("lookup", "query", parameters=SCHEMA)])
    pieces = [*parser.feed(text), *parser.close()]
    return [p for p in pieces if isinstance(p, CallPiece)]


@pytest.mark.parametrize("fmt", sorted(TOOL_FORMATS))
def test_the_example_of_each_prompt_parses_back(fmt: str) -> None:
    found = [(c.name, c.arguments) for c in calls(example(fmt))]
    assert found == [("lookup", {"query": "x"})]


SEVERAL = sorted((PROMPTS / "several").glob("*.j2"))
ELEVATION = {"type": "object", "properties": {"place": {"type": "string"}}, "required": ["place"]}


def test_several_calls_examples_exist_only_for_known_formats() -> None:
    assert SEVERAL, "no several-calls example"
    assert {p.stem for p in SEVERAL} <= set(TOOL_FORMATS)


@pytest.mark.parametrize("path", SEVERAL, ids=lambda p: p.stem)
def test_a_several_calls_example_parses_back_as_one_call_per_thing_asked(path: Path) -> None:
    """The reply `calls_in_text` models are shown (react.j2) is read as the two calls it shows."""
    parser = ToolCallParser([TagSpec("lookup_elevation", "place", parameters=ELEVATION)])
    text = path.read_text(encoding="utf-8")
    pieces = [*parser.feed(text), *parser.close()]
    found = [(p.name, p.arguments) for p in pieces if isinstance(p, CallPiece)]
    assert found == [
        ("lookup_elevation", {"place": "Quito"}),
        ("lookup_elevation", {"place": "Denver"}),
    ]
