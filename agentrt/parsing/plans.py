"""Internal. Incremental parsing of a streamed plan: each node as soon as it is written.

A `dag` plan is one JSON object with a `nodes` array (and, under a schema, a `plan` string),
perhaps preceded by a human-readable `<plan>…</plan>` block and wrapped in a code fence:

    <plan>
    T1: …  Dependencies: none
    </plan>
    {"plan": "…", "nodes": [{"id": "T1", …}, {"id": "T2", …, "depends_on": ["T1"]}]}

`PlanStreamParser.feed` returns the node objects whose closing brace arrived in that chunk, so a
scheduler can start a node before the model has finished writing the plan. A `vm` program
(`{"program": [instructions…]}`) is read the same way, its array named by `items`. The scan keeps a
stack of open brackets, whether it is in a string, and the last key seen at the top level; each
character is looked at once. It does not validate: the planner does, node by node and whole.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from agentrt.parsing._jsonscan import JSONProblem, load_object

__all__ = ["PlanStreamParser"]


class PlanStreamParser:
    """Finds the nodes of a plan in streamed text. One parser reads one plan.

    :param items: the key of the top-level array whose objects are the nodes
    """

    def __init__(self, items: str = "nodes") -> None:
        self._items = items
        self._whole = ""
        self._before = True
        """Still before the JSON object (in prose or in the `<plan>` block)."""
        self._in_block = False
        self._start = -1
        """Where the JSON object begins in the whole text."""
        self._stack: list[str] = []
        self._in_string = False
        self._escaped = False
        self._string_start = -1
        self._last_key: str | None = None
        self._expect_key = False
        self._nodes_depth = -1
        """Depth of the nodes array's contents once it is open."""
        self._node_start = -1
        self._node_ends: list[int] = []
        """Where each node `feed` returned ends in the whole text (just past its brace)."""
        self._pos = 0

    @property
    def text(self) -> str:
        return self._whole

    def feed(self, chunk: str) -> list[dict[str, Any]]:
        """Read the next chunk; return the node objects it completes (not validated)."""
        # Appending to the one reference to a str extends it in place in CPython: the scan
        # stays linear in the plan's length however finely it is chunked.
        self._whole += chunk
        whole = self._whole
        nodes: list[dict[str, Any]] = []
        while self._pos < len(whole):
            if self._before:
                if not self._skip_prose(whole):
                    break
                continue
            char = whole[self._pos]
            self._step(char, whole, nodes)
            self._pos += 1
        return nodes

    def cut(self, keep: int) -> None:
        """End the plan after its first `keep` (≥ 1) nodes, as if the model had closed it
        there: the text after them is dropped and the nodes array and the object closed. For
        a model that loops, writing one node over and over until its token cap."""
        end = self._node_ends[keep - 1]
        # The array is read only as a key of the top-level object: two brackets are open.
        self._whole = self._whole[:end] + "]}"
        self._node_ends = self._node_ends[:keep]

    def finish(self) -> tuple[str, dict[str, Any]]:
        """End of the stream: the `<plan>` text (or the `plan` field) and the whole JSON object.

        :raises JSONProblem: there is no JSON object, or it does not parse
        """
        whole = self._whole
        block = ""
        if "<plan>" in whole:
            block = whole.split("<plan>", 1)[1].split("</plan>", 1)[0].strip()
        if self._start < 0:
            msg = f"the answer holds no JSON object with the plan's {self._items}"
            raise JSONProblem(msg)
        body = whole[self._start :].strip()
        if body.endswith("```"):
            body = body[:-3].rstrip()
        try:
            obj = load_object(body)
        except JSONProblem as exc:
            msg = f"the plan is not valid JSON: {exc}"
            raise JSONProblem(msg) from None
        field = obj.get("plan")
        return (field if isinstance(field, str) and field.strip() else block), obj

    def _skip_prose(self, whole: str) -> bool:
        """Advance through text before the JSON object; False when more text is needed."""
        if self._in_block:
            end = whole.find("</plan>", self._pos)
            if end < 0:
                return False
            self._pos = end + len("</plan>")
            self._in_block = False
            return True
        block = whole.find("<plan>", self._pos)
        brace = whole.find("{", self._pos)
        if block >= 0 and (brace < 0 or block < brace):
            self._pos = block + len("<plan>")
            self._in_block = True
            return True
        if brace < 0:
            # Hold back a possible "<plan" split across chunks; the rest is prose.
            self._pos = max(self._pos, len(whole) - len("<plan>"))
            return False
        self._before = False
        self._start = brace
        self._pos = brace
        return True

    def _step(self, char: str, whole: str, nodes: list[dict[str, Any]]) -> None:
        if self._in_string:
            if self._escaped:
                self._escaped = False
            elif char == "\\":
                self._escaped = True
            elif char == '"':
                self._in_string = False
                if self._expect_key and len(self._stack) == 1:
                    try:
                        self._last_key = json.loads(whole[self._string_start : self._pos + 1])
                    except ValueError:
                        self._last_key = None
                    self._expect_key = False
            return
        if char == '"':
            self._in_string = True
            self._string_start = self._pos
        elif char in "{[":
            if (
                char == "["
                and len(self._stack) == 1
                and self._last_key == self._items
                and self._nodes_depth < 0
            ):
                self._nodes_depth = 2
            self._stack.append(char)
            if char == "{" and len(self._stack) == 1:
                self._expect_key = True
            if char == "{" and len(self._stack) == self._nodes_depth + 1:
                self._node_start = self._pos
        elif char in "}]":
            if char == "}" and len(self._stack) == self._nodes_depth + 1 and self._node_start >= 0:
                # A node that does not parse is left to the whole plan's parse, which reports it.
                with contextlib.suppress(JSONProblem):
                    nodes.append(load_object(whole[self._node_start : self._pos + 1]))
                    self._node_ends.append(self._pos + 1)
                self._node_start = -1
            if self._stack:
                self._stack.pop()
        elif char == "," and len(self._stack) == 1:
            self._expect_key = True
