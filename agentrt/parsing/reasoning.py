"""Internal. Separating a model's reasoning from its content as the text streams.

Reasoning models write their thoughts before (or between) their answers, in one of two forms:

- ``<think>…</think>`` blocks (Qwen3, DeepSeek-R1, QwQ, …), anywhere and any number of times. A
  block still open when the stream ends is reasoning to its end. Templates such as DeepSeek-R1's
  put the opening ``<think>`` into the prompt, so the stream begins inside the block and only
  the closing tag arrives: `ReasoningSplitter(starts_in_reasoning=True)` reads such streams.
- gpt-oss's harmony messages: a header (``<|start|>assistant``, ``<|channel|>NAME``, an optional
  recipient ``to=…`` and ``<|constrain|>…``) closed by ``<|message|>``, then the body up to
  ``<|end|>``, ``<|return|>`` or ``<|call|>``. The ``analysis`` channel is reasoning; a message
  on any other channel (``final``, a ``commentary`` preamble) is content, its header and end
  tokens dropped. A message with a recipient is a tool call: header, body and ``<|call|>`` stay
  in the content, verbatim, for the tool-call parser.

Decided, for prose that only looks like markup: the tags are exact and case-sensitive, so
``<think`` not followed by ``>`` (``a <thinking> tag``, ``x <think y``) is content; a ``</think>``
with no block open is markup and is dropped (it can only close a block whose opening was in the
prompt); a ``<think>`` inside a block is dropped too (some models repeat the prompt's tag). A
harmony header that reaches `HEADER_LIMIT` characters without ``<|message|>`` is not one: it is
content, verbatim.

`ReasoningSplitter` is a state machine over characters, pure and synchronous like the tool-call
parser: only a possible tag (at most `HEADER_LIMIT` characters, for a harmony header) is held,
every decision depends on the characters alone (never on where chunks break, so any chunking of
a text gives the same pieces), and each character is examined a bounded number of times.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ContentPiece", "ReasoningPiece", "ReasoningSplitter", "SplitPiece"]


@dataclass(frozen=True, slots=True)
class ContentPiece:
    """Text that is not reasoning: the answer, and any tool-call markup in it."""

    text: str
    """Never empty."""


@dataclass(frozen=True, slots=True)
class ReasoningPiece:
    """The model's reasoning, its tags removed."""

    text: str
    """Never empty."""


SplitPiece = ContentPiece | ReasoningPiece

HEADER_LIMIT = 256
"""A harmony header longer than this (from ``<|start|>`` or ``<|channel|>`` to the end of
``<|message|>``) is content: prose that happens to hold a harmony token hides nothing after it."""

_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"
_START = "<|start|>"
_CHANNEL = "<|channel|>"
_MESSAGE = "<|message|>"
_END = "<|end|>"
_RETURN = "<|return|>"
_CALL = "<|call|>"

# States; the markup each one looks for, and what each tag does, are in `_ACTIONS`.
_CONTENT, _THINK, _ANALYSIS, _HEADER = range(4)
_REASONING = (_THINK, _ANALYSIS)

_ACTIONS: tuple[dict[str, int | None], ...] = (
    # Content: a tag with state None is dropped and content goes on.
    {
        _THINK_OPEN: _THINK,
        _THINK_CLOSE: None,
        _START: _HEADER,
        _CHANNEL: _HEADER,
        _END: None,
        _RETURN: None,
    },
    {_THINK_CLOSE: _CONTENT, _THINK_OPEN: None},
    {
        _END: _CONTENT,
        _RETURN: _CONTENT,
        _CALL: _CONTENT,
        _START: _HEADER,
        _CHANNEL: _HEADER,
    },
    {},
)
_LONGEST = max(len(tag) for actions in _ACTIONS for tag in actions)
# Each state's tags as one pattern, in `_ACTIONS` order: a text holding many ``<`` that begin
# no tag (tool-call markup) is searched once instead of tried tag by tag at each ``<``.
_FIND = tuple(re.compile("|".join(map(re.escape, actions))) for actions in _ACTIONS)
_CHANNEL_NAME = re.compile(r"<\|channel\|>\s*([^\s<]+)")
_RECIPIENT = re.compile(r"(?:^|\s|>)to=")


class ReasoningSplitter:
    """Splits streamed model text into reasoning and content.

    :param starts_in_reasoning: the stream begins inside a ``<think>`` block whose opening tag
        was in the prompt

    One splitter reads one stream: `feed` each chunk as it arrives, then `close` once at the end
    (after which it is ready for a new stream, in its initial state again).
    """

    def __init__(self, starts_in_reasoning: bool = False) -> None:
        self._initial = _THINK if starts_in_reasoning else _CONTENT
        self._handlers: tuple[Callable[[str, int], int], ...] = (
            self._on_text,
            self._on_text,
            self._on_text,
            self._on_header,
        )
        self._out: list[SplitPiece] = []
        self._parts: list[str] = []
        """Text of the current kind not yet made a piece."""
        self._kind: type[SplitPiece] = ContentPiece
        self._reset()

    def _reset(self) -> None:
        self._state = self._initial
        self._pending = ""
        """A possible tag cut off by the chunk's end."""
        self._header = ""

    def feed(self, chunk: str) -> list[SplitPiece]:
        """Read the next chunk; return the pieces it completes, in order (held: a possible tag
        at its end, or a harmony header not yet closed)."""
        state = self._state
        if not self._pending and state != _HEADER and "<" not in chunk:
            # The common case, prose: nothing in it can begin a tag.
            if not chunk:
                return []
            return [ReasoningPiece(chunk) if state in _REASONING else ContentPiece(chunk)]
        text = self._pending + chunk if self._pending else chunk
        self._pending = ""
        i, n = 0, len(text)
        while i < n:
            i = self._handlers[self._state](text, i)
        return self._drain()

    def close(self) -> list[SplitPiece]:
        """End the stream: a possible tag left is text, and so is an unclosed header."""
        if self._state == _HEADER:
            self._put(_CONTENT, self._header)
        else:
            self._put(self._state, self._pending)
        out = self._drain()
        self._reset()
        return out

    def _put(self, state: int, text: str) -> None:
        if not text:
            return
        kind = ReasoningPiece if state in _REASONING else ContentPiece
        if kind is not self._kind:
            self._flush()
            self._kind = kind
        self._parts.append(text)

    def _flush(self) -> None:
        if self._parts:
            self._out.append(self._kind("".join(self._parts)))
            self._parts.clear()

    def _drain(self) -> list[SplitPiece]:
        self._flush()
        out, self._out = self._out, []
        return out

    def _on_text(self, text: str, i: int) -> int:
        state = self._state
        actions = _ACTIONS[state]
        found = _FIND[state].search(text, i)
        if found is not None:
            self._put(state, text[i : found.start()])
            tag = found.group()
            after = actions[tag]
            if after is not None:
                self._state = after
            if after == _HEADER:
                self._header = tag
            return found.end()
        # No whole tag: the text is all this state's, but the text may end within a tag (each
        # tag holds one "<", its first character); hold that until the next chunk decides.
        j = text.rfind("<", max(i, len(text) - _LONGEST + 1))
        if j >= 0 and any(tag.startswith(text[j:]) for tag in actions):
            self._put(state, text[i:j])
            self._pending = text[j:]
        else:
            self._put(state, text[i:])
        return len(text)

    def _on_header(self, text: str, i: int) -> int:
        # The header is short (at most HEADER_LIMIT), so it is kept as one string; only its
        # last few characters are searched again when a chunk extends it.
        before = len(self._header)
        room = HEADER_LIMIT - before
        header = self._header + text[i : i + room]
        found = header.find(_MESSAGE, max(0, before - len(_MESSAGE) + 1))
        if found < 0:
            self._header = header
            if len(header) < HEADER_LIMIT:
                return len(text)
            self._header = ""
            self._state = _CONTENT
            self._put(_CONTENT, header)
            return i + room
        end = found + len(_MESSAGE)
        self._header = ""
        self._open_message(header[:end])
        return i + end - before

    def _open_message(self, header: str) -> None:
        """A harmony header is complete: its channel says where the body goes."""
        channel = _CHANNEL_NAME.search(header)
        if _RECIPIENT.search(header):
            self._state = _CONTENT
            self._put(_CONTENT, header)
        elif channel is not None and channel.group(1) == "analysis":
            self._state = _ANALYSIS
        else:
            self._state = _CONTENT
