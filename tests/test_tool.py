"""@tool: the schema comes from the signature and the docstring."""

from __future__ import annotations

import json
from datetime import date
from typing import Literal

import pytest
from pydantic import BaseModel, JsonValue, ValidationError

from agentrt import Tool, ToolDefinitionError, tool
from agentrt.tool import minimal_schema


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


class Node(BaseModel):
    label: str
    child: Node | None = None


class Point(BaseModel):
    x: int


class TestMinimalSchema:
    """The schema a model is shown holds nothing it could copy by mistake."""

    def test_no_titles_and_every_keyword_a_model_needs(self) -> None:
        """Titles go (the 0.5B called `lookup_arguments`); the rest stays."""

        @tool
        def lookup(title: str, unit: Literal["C", "F"] = "C") -> str:
            """Find a page.

            Args:
                title: The page's title.
                unit: Temperature unit.
            """
            return title

        assert lookup.definition.parameters == {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "title": {"type": "string", "description": "The page's title."},
                "unit": {
                    "type": "string",
                    "enum": ["C", "F"],
                    "default": "C",
                    "description": "Temperature unit.",
                },
            },
            "required": ["title"],
        }

    def test_any_json_is_an_empty_schema_not_a_reference(self) -> None:
        """The 1.5B pasted `{"$ref": "#/$defs/JsonValue"}` into arguments."""

        @tool
        def store(value: JsonValue) -> str:
            """Store a value.

            Args:
                value: Anything.
            """
            return "ok"

        schema = store.definition.parameters
        assert "$defs" not in schema
        assert schema["properties"]["value"] == {"description": "Anything."}
        assert "$ref" not in json.dumps(schema)

    def test_nested_models_are_inlined_and_recursion_cut(self) -> None:
        """A nested model is shown in place; one that refers to itself stops at an object."""

        @tool
        def plant(root: Node, extra: list[Node]) -> str:
            """Plant a tree."""
            return root.label

        schema = plant.definition.parameters
        text = json.dumps(schema)
        assert "$ref" not in text
        assert "title" not in text
        root = schema["properties"]["root"]
        assert root["required"] == ["label"]
        assert root["properties"]["child"]["anyOf"] == [{"type": "object"}, {"type": "null"}]
        assert schema["properties"]["extra"]["items"]["properties"]["label"] == {"type": "string"}

    def test_validation_still_uses_the_full_model(self) -> None:
        """The shown schema is smaller; a call is still checked against the argument model."""

        @tool
        def move(to: Point) -> str:
            """Move."""
            return str(to.x)

        assert move.args_model.model_validate({"to": {"x": 3}}).to == Point(x=3)  # type: ignore[attr-defined]
        with pytest.raises(ValidationError):
            move.args_model.model_validate({"to": {"x": "three"}})

    def test_data_keeps_its_keys(self) -> None:
        """A default or enum is data: a "title" key inside it is not a schema's title."""
        schema = {
            "title": "T",
            "properties": {"p": {"title": "P", "default": {"title": "kept"}}},
        }
        assert minimal_schema(schema) == {"properties": {"p": {"default": {"title": "kept"}}}}
