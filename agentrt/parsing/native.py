"""Internal. Assembly of OpenAI-style streamed ``tool_calls`` deltas into complete calls.

A server streams each call as deltas that share an ``index``: usually the first carries the
call's ``id`` and function ``name`` and the rest carry pieces of the ``arguments`` string, but
some servers repeat the id and name in every delta, so those are taken once and never joined.

A call is returned as soon as it is known to be complete, so that it can run while the model is
still streaming:

- its arguments form a JSON object whose closing brace has arrived and which parses
  (an `ObjectScanner` follows the braces, so each piece is scanned once);
- or a delta for another index arrives (servers send calls one after the other);
- or the stream ends (`close`).

In the last two cases, arguments that are not a JSON object give an `InvalidPiece`. Deltas for a
call that was already returned are ignored, so each call is returned exactly once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agentrt.parsing._jsonscan import JSONProblem, ObjectScanner, load_object
from agentrt.parsing.toolcalls import CallPiece, InvalidPiece

__all__ = ["NativeToolCallAssembler"]

_NON_BLANK = re.compile(r"\S")


@dataclass(slots=True)
class _Call:
    index: int
    id: str | None = None
    name: str | None = None
    parts: list[str] = field(default_factory=list)
    started: bool = False
    """Whether the first non-blank character of the arguments has arrived."""
    scanner: ObjectScanner | None = None
    """Follows the arguments while they may still close as an object; None otherwise."""


class NativeToolCallAssembler:
    """Joins the ``tool_calls`` deltas of one streamed response into calls.

    One assembler reads one response: `feed` every delta, then `close` once at the end
    (after which the assembler is ready for a new response).
    """

    def __init__(self) -> None:
        self._open: dict[int, _Call] = {}
        self._returned: set[int] = set()

    def feed(
        self, index: int, id: str | None, name: str | None, arguments: str | None
    ) -> list[CallPiece | InvalidPiece]:
        """Read one delta; return the calls it completes, in index order."""
        out = [self._finish(call) for i, call in sorted(self._open.items()) if i != index]
        if out:
            self._open = {i: call for i, call in self._open.items() if i == index}
        if index in self._returned:
            return out
        call = self._open.get(index)
        if call is None:
            call = self._open[index] = _Call(index)
        if id and call.id is None:
            call.id = id
        if name and call.name is None:
            call.name = name
        if arguments:
            call.parts.append(arguments)
            end = self._scan(call, arguments)
            if end >= 0:
                raw = "".join(call.parts)
                try:
                    parsed = load_object(raw[: len(raw) - len(arguments) + end])
                except JSONProblem:
                    # Balanced but malformed: it can only be judged when the call ends.
                    call.scanner = None
                else:
                    del self._open[index]
                    out.append(self._piece(call, raw, parsed))
        return out

    def close(self) -> list[CallPiece | InvalidPiece]:
        """End the response: return every call still open, in index order."""
        out = [self._finish(call) for _, call in sorted(self._open.items())]
        self._open = {}
        self._returned = set()
        return out

    @staticmethod
    def _scan(call: _Call, arguments: str) -> int:
        """Where in `arguments` the object closes, or -1."""
        pos = 0
        if not call.started:
            match = _NON_BLANK.search(arguments)
            if match is None:
                return -1
            call.started = True
            pos = match.start()
            if arguments[pos] == "{":
                call.scanner = ObjectScanner()
        if call.scanner is None:
            return -1
        return call.scanner.scan(arguments, pos, len(arguments))

    def _finish(self, call: _Call) -> CallPiece | InvalidPiece:
        raw = "".join(call.parts)
        arguments: dict[str, Any] | JSONProblem
        try:
            arguments = load_object(raw) if raw.strip() else {}
        except JSONProblem as exc:
            arguments = exc
        return self._piece(call, raw, arguments)

    def _piece(
        self, call: _Call, raw: str, arguments: dict[str, Any] | JSONProblem
    ) -> CallPiece | InvalidPiece:
        self._returned.add(call.index)
        if call.name is None:
            reason = f"the tool call at index {call.index} has no function name: name the tool."
            return InvalidPiece(raw, reason)
        if isinstance(arguments, JSONProblem):
            reason = (
                f'arguments of "{call.name}" are not valid JSON: {arguments}. '
                "Give the arguments as one JSON object."
            )
            return InvalidPiece(raw, reason, call.name)
        return CallPiece(call.name, arguments, raw, "native", call.id)
