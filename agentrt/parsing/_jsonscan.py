"""JSON helpers shared by the text parser and the native assembler.

`ObjectScanner` finds where a streamed JSON object ends without parsing it: it follows only the
brace depth, whether it is inside a string, and whether the previous string character was a
backslash (and, in text that may hold markup, whether a ``<`` came outside a string). That
state survives between calls, so each character is looked at once however the text is chunked.
Regular expressions jump to the next character that can change the state.

`loads` and `load_object` wrap `json.loads` so that every failure, including the ones that are
not `JSONDecodeError` (huge integers, deep nesting), becomes a `JSONProblem` whose message a
model can act on.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["JSONProblem", "ObjectScanner", "kind", "load_object", "loads"]

# Lenient about raw control characters in strings: models often write real newlines there.
_DECODER = json.JSONDecoder(strict=False)
_IN_STRING = re.compile(r'["\\]')
_OUTSIDE_STRING = re.compile(r'["{}]')
_OUTSIDE_STRING_OR_TAG = re.compile(r'["{}<]')


class ObjectScanner:
    """The state of a scan through a JSON object, from its opening brace to its closing one."""

    __slots__ = ("_outside", "broken", "depth", "escaped", "in_string")

    def __init__(self, depth: int = 0, *, in_string: bool = False, tags: bool = False) -> None:
        self.depth = depth
        self.in_string = in_string
        self.escaped = False
        self.broken = False
        """With `tags`: a ``<`` came outside a string, where no JSON has one, so the object can
        never close (a model left it open and went on to a call tag)."""
        self._outside = _OUTSIDE_STRING_OR_TAG if tags else _OUTSIDE_STRING

    def scan(self, text: str, pos: int, end: int) -> int:
        """Scan `text[pos:end]`; return the index just past the brace that closes the object,
        or -1 when the object is still open at `end`. When the scan breaks (`broken`), return
        the index of the ``<``."""
        while pos < end:
            if self.escaped:
                self.escaped = False
                pos += 1
            elif self.in_string:
                match = _IN_STRING.search(text, pos, end)
                if match is None:
                    return -1
                pos = match.end()
                if match.group() == "\\":
                    self.escaped = True
                else:
                    self.in_string = False
            else:
                match = self._outside.search(text, pos, end)
                if match is None:
                    return -1
                pos = match.end()
                char = match.group()
                if char == "<":
                    self.broken = True
                    return match.start()
                if char == '"':
                    self.in_string = True
                elif char == "{":
                    self.depth += 1
                else:
                    self.depth -= 1
                    if self.depth == 0:
                        return pos
        return -1


class JSONProblem(ValueError):
    """Why a text is not the JSON that was expected, phrased for the model that wrote it."""


def loads(text: str) -> Any:
    """Parse JSON; raise `JSONProblem` on any failure."""
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise JSONProblem(f"{exc.msg} (line {exc.lineno} column {exc.colno})") from None
    except ValueError as exc:  # not a decode error: e.g. an integer longer than Python allows
        raise JSONProblem(str(exc)) from None
    except RecursionError:
        raise JSONProblem("the value is nested too deeply") from None


def load_object(text: str) -> dict[str, Any]:
    """Parse a JSON object; raise `JSONProblem` if `text` is not one."""
    value = loads(text)
    if not isinstance(value, dict):
        raise JSONProblem(f"expected a JSON object, got {kind(value)}")
    return value


def kind(value: Any) -> str:
    """The JSON type of a parsed value, as a phrase: "a list", "a string", ..."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"
