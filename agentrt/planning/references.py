"""Internal. References from one plan step to another's result, filled in before the step runs.

    "${T1}"                 the whole result of T1 (a `dag` node or a `vm` variable)
    "${T1.rows[0].name}"    a part of it: fields by `.name`, list items by `[index]`
    "{T1}"                  the whole result of a `dag` node (the GAP paper's form)

A string that is exactly one reference becomes the referenced value, with its type; a
reference inside longer text is replaced by the value's text. A result that is JSON text is
read as JSON when a field is asked of it. A missing name or field makes `resolve` return an
`Unresolved` saying which, which fails the step that asked, not the run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import Any

__all__ = [
    "VARIABLE",
    "VARIABLE_PATTERN",
    "Unresolved",
    "expressions",
    "referable",
    "references",
    "resolve",
]

_NAME = r"[A-Za-z_][\w-]*"
VARIABLE = re.compile(_NAME)
"""A name a reference can read (`fullmatch`)."""
_GRAMMAR_NAME = "[A-Za-z_][A-Za-z0-9_-]*"
VARIABLE_PATTERN = f"^{_GRAMMAR_NAME}$"
"""The same, as a JSON schema `pattern` in llama.cpp's regex subset (see `_ONE_REFERENCE`)."""
_DOLLAR = re.compile(rf"\$\{{({_NAME})((?:\.[A-Za-z_]\w*|\[\d+\])*)\}}")
_BRACE = re.compile(rf"(?<![$\w{{])\{{({_NAME})\}}")
# Both forms in one pass, so that text put in by one reference is never read as another.
_EITHER = re.compile(f"{_DOLLAR.pattern}|{_BRACE.pattern}")
_PATH = re.compile(r"\.([A-Za-z_]\w*)|\[(\d+)\]")
# A value that is nothing but arithmetic over references and numbers ("${a} + 1"): the VM only
# substitutes, it does not compute. Prose that happens to hold a dash is not one.
_OPERAND = r"(?:\$\{[^}]+\}|\d+(?:\.\d+)?)"
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
_EXPRESSION = re.compile(rf"\s*\(?\s*{_OPERAND}(?:\s*[-+*/%]\s*\(?\s*{_OPERAND}\s*\)?)+\s*\)?\s*")


_ONE_REFERENCE = (
    rf"^([$][{{]{_GRAMMAR_NAME}([.][A-Za-z_][A-Za-z0-9_]*|[\[][0-9]+[\]])*[}}]"
    rf"|[{{]{_GRAMMAR_NAME}[}}])$"
)
"""A string that is exactly one reference, as a JSON schema `pattern`: anchored, and in the
regex subset llama.cpp's grammar converter reads (no `(?:`, `\\w` or `\\d`), its literal
characters in classes: escaped, `\\$` or `\\{` become grammar escapes llama.cpp's own
parser refuses, and the model then samples with no grammar at all."""


def referable(parameters: dict[str, Any]) -> dict[str, Any]:
    """A tool's argument schema, for a plan step's arguments: the same names and types, each
    argument that is not free text also allowed to be one reference (`"${T1.rows}"`), which is
    filled with a value of any type before the step runs. Free text may hold references as it
    is. A schema this cannot read (not an object of named properties, or one with `$defs`,
    whose references would break inside a plan's schema) is any object.
    """
    properties = parameters.get("properties")
    if parameters.get("type") != "object" or not isinstance(properties, dict):
        return {"type": "object"}
    if "$defs" in parameters:
        return {"type": "object"}
    reference = {"type": "string", "pattern": _ONE_REFERENCE}
    return {
        **parameters,
        "properties": {
            name: schema if _free_text(schema) else {"anyOf": [schema, reference]}
            for name, schema in properties.items()
        },
    }


def _free_text(schema: Any) -> bool:
    return (
        isinstance(schema, dict)
        and schema.get("type") == "string"
        and len(schema) <= 3
        and (not {"enum", "const", "pattern", "format"} & set(schema))
    )


@dataclass(frozen=True, slots=True)
class Unresolved:
    """A reference that cannot be filled."""

    problem: str
    """Which reference, and why."""


def references(value: Any, names: Container[str] | None = None) -> set[str]:
    """The names `value` refers to (in strings, at any depth). `{name}` counts only for names
    in `names` (elsewhere braces are text); `${name}` always counts."""
    found: set[str] = set()
    for text in _strings(value):
        found.update(m.group(1) for m in _DOLLAR.finditer(text))
        if names is not None:
            found.update(m.group(1) for m in _BRACE.finditer(text) if m.group(1) in names)
    return found


def expressions(value: Any) -> list[str]:
    """Strings of `value` that compute with a reference (`"${a} + 1"`), which is not allowed."""
    return [
        text
        for text in _strings(value)
        if "${" in text
        and _EXPRESSION.fullmatch(text)
        # "${a} / ${b}" or "${from}-${to}" read as text; a number or a + or * is arithmetic.
        and (_NUMBER.search(text.replace("${", "").replace("}", " ")) or re.search(r"[+*]", text))
    ]


def resolve(
    value: Any, lookup: Callable[[str], Any], names: Container[str] | None = None
) -> Any | Unresolved:
    """`value` with its references filled from `lookup(name)` (which raises `KeyError` for a
    name it does not know); `Unresolved` for the first that cannot be filled.

    :param names: the names `{name}` may refer to (None: only `${name}` is a reference)
    """
    if isinstance(value, dict | list):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        filled: dict[Any, Any] = {}
        for key, item in items:
            filled[key] = resolve(item, lookup, names)
            if isinstance(filled[key], Unresolved):
                return filled[key]
        return filled if isinstance(value, dict) else list(filled.values())
    if not isinstance(value, str):
        return value
    whole = _DOLLAR.fullmatch(value)
    if whole is not None:
        return _read(lookup, whole.group(1), whole.group(2))
    brace = _BRACE.fullmatch(value)
    if brace is not None and names is not None and brace.group(1) in names:
        return _read(lookup, brace.group(1), "")
    problems: list[Unresolved] = []

    def fill(match: re.Match[str]) -> str:
        name, path, brace = match.group(1), match.group(2), match.group(3)
        if brace is not None:
            if names is None or brace not in names:
                return match.group(0)
            name, path = brace, ""
        found = _read(lookup, name, path)
        if isinstance(found, Unresolved):
            problems.append(found)
            return match.group(0)
        return found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)

    text = _EITHER.sub(fill, value)
    return problems[0] if problems else text


def _read(lookup: Callable[[str], Any], name: str, path: str) -> Any | Unresolved:
    try:
        current = lookup(name)
    except KeyError:
        return Unresolved(f"${{{name}}} refers to nothing: no result or variable is named {name!r}")
    walked = name
    for field, index in _PATH.findall(path):
        if isinstance(current, str):
            try:
                current = json.loads(current)
            except ValueError:
                return Unresolved(f"{walked} is text, not JSON: it has no {field or f'[{index}]'}")
        if field:
            if not isinstance(current, dict) or field not in current:
                have = ", ".join(current) if isinstance(current, dict) else type(current).__name__
                return Unresolved(f"{walked} has no field {field!r} (it has: {have})")
            current, walked = current[field], f"{walked}.{field}"
        else:
            if not isinstance(current, list) or int(index) >= len(current):
                size = len(current) if isinstance(current, list) else type(current).__name__
                return Unresolved(f"{walked} has no item [{index}] (it has {size})")
            current, walked = current[int(index)], f"{walked}[{index}]"
    return current


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
