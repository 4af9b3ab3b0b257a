"""@tool: the schema comes from the signature and the docstring."""

from __future__ import annotations

from datetime import date
from typing import Literal

import pytest

from agentrt import Tool, ToolDefinitionError, tool


def test_schema_from_signature_and_docstring() -> None:
    @tool
    def lookup(city: str, unit: Literal["C", "F"] = "C", days: int = 1) -> str:
        """Weather forecast for a city.

        Args:
            city: City name, e.g. "Lyon".
            unit: Temperature unit.
            days: How many days ahead.
        """
        return city

    assert isinstance(lookup, Tool)
    assert lookup.name == "lookup"
    assert lookup.description == "Weather forecast for a city."
    schema = lookup.definition.parameters
    assert schema["required"] == ["city"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["city"]["description"] == 'City name, e.g. "Lyon".'
    assert schema["properties"]["unit"]["enum"] == ["C", "F"]
    assert lookup.text_param == "city"
    assert lookup("Lyon") == "Lyon"  # still a plain function


def test_options() -> None:
    @tool(name="when", timeout=3, cache=False)
    async def today_is(day: date) -> str:
        """Say the day."""
        return day.isoformat()

    assert (today_is.name, today_is.timeout, today_is.cache, today_is.is_async) == (
        "when",
        3,
        False,
        True,
    )
    assert today_is.args_model.model_validate({"day": "2025-01-02"}).day == date(2025, 1, 2)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: tool(_untyped), "parameter 'x' needs a type annotation"),
        (lambda: Tool(_no_doc), "has no description"),
        (lambda: Tool(_two_params, split="|"), "needs exactly one required str parameter"),
        (lambda: Tool(_two_params, ends_run=True), "needs an `answer` parameter"),
        (lambda: Tool(_star), "cannot be described to a model"),
    ],
    ids=["annotation", "docstring", "split", "ends-run", "varargs"],
)
def test_definition_errors(build: object, message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        build()  # type: ignore[operator]


def _untyped(x):  # type: ignore[no-untyped-def]
    """Untyped."""
    return x


def _no_doc(x: int) -> int:
    return x


def _two_params(a: str, b: str) -> str:
    """Two."""
    return a + b


def _star(*args: int) -> int:
    """Star."""
    return 0
