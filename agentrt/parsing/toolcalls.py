"""Internal. Incremental parsing of the tool calls a model writes into its streamed text.

A call arrives in one of these shapes:

- a registered tool tag: ``<calc>{"expression": "2+2"}</calc>``, ``<wiki_search>x|y</wiki_search>``;
- a Hermes/Qwen element, ``<tool_call>{"name": "calc", "arguments": {...}}</tool_call>``, or with
  Qwen3-Coder's XML body ``<function=NAME><parameter=K>V</parameter></function>`` whose values are
  typed by the tool's schema, or GLM-4.5's body ``NAME<arg_key>K</arg_key><arg_value>V</arg_value>``
  typed the same way (its bare ``NAME`` only for a registered tool); one left open at the end of
  the stream is still a call when its body is whole (JSON that parses, a closed ``</function>``;
  never a GLM body, whose last pair may not have come);
- DeepSeek's ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME`` then a ```` ```json ```` fenced
  object and ``<｜tool▁call▁end｜>`` (V3, R1), or ``NAME<｜tool▁sep｜>{…}`` (V3.1); Kimi K2's
  ``<|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{…}<|tool_call_end|>``; the
  tokens of the sections around them are dropped (a ``<|tool_call_end|>`` outside a call too,
  as LFM2's); either left open at the end is a call when its arguments parse;
- MiniMax M2's ``<invoke name="NAME"><parameter name="K">V</parameter></invoke>``, typed by the
  schema, each a call at its ``</invoke>`` (and never without it); only inside a
  ``<minimax:tool_call>`` block (its tags dropped), so prose mentioning ``<invoke `` stays text;
- a JSON object ``{"name": ..., "arguments": ...}`` (or Llama's ``"parameters"``), or an array of
  them, anywhere: first on its line, after prose, after ``<|python_tag|>`` or
  ``<|function_call|>`` (tokens that are never shown), several separated by ``;``;
- the same object or array alone in a ```` ``` ```` or ```` ```json ```` fence;
- what the small embedded model copies from its chat template: calls in a ``<tools>`` block (the
  tags are dropped like the call tokens) and objects with doubled braces ``{{"name": …}}``;
- Mistral's ``[TOOL_CALLS]`` followed by a JSON array of call objects (older templates) or by
  ``NAME[ARGS]{…}`` (optionally ``NAME[CALL_ID]ID[ARGS]{…}``), several in a row; any name;
- a pythonic list ``[get_weather(city="Paris"), add(a=1)]`` (Llama 3.2/4, OLMo; LFM2 wraps it in
  ``<|tool_call_start|>``…``<|tool_call_end|>``, tokens dropped): it must begin with a registered
  tool's name and "(", and its keyword values are literals, read by `ast.literal_eval`, never run;
- an attribute tag ``<run_sql sql="SELECT 1" limit="5"/>`` (or ``<name/>``) of a registered tool,
  the attributes its arguments, typed by the tool's schema like Qwen3-Coder's values;
- a gpt-oss harmony call, as the reasoning splitter leaves it: a header naming the recipient
  ``to=functions.NAME``, ``<|message|>``, a JSON object and ``<|call|>``.

`ToolCallParser.feed` returns each call from the very chunk that completes it (the ``>`` of the
closing tag or end token, or the object's closing brace, also inside an array, or a pythonic
call's ``)``) and returns visible text as soon as it cannot belong to a call. The parser is a
state machine over characters:

    TEXT ── "<" ──► TAG_OPEN ── "<name>" ──► BODY ── "</name>" ──► calls, TEXT
     │                  ├── call token ──► TEXT, as at a line's start
     │                  └── "<invoke " outside a MiniMax block ──► text, TEXT
     ├─ "{" ──► JSON_OPEN ── '"' ──► JSON_BODY ── closing "}" ──► call: SEQ; else text, TEXT
     │                                 ├── first newline, no call keys yet ──► text, TEXT
     │                                 └── "<" outside a string ──► invalid call or text, TEXT
     ├─ "[" ──► SEQ ── "{" ──► JSON_OPEN …        SEQ ── "," / ";" then "{" ──► JSON_OPEN …
     │           │                                 SEQ ── "]" ──► TEXT; anything else: text
     │           └─ letter ──► WORD ── "tool(" ──► PY ── ")" ──► call, PY_SEP ── "," ──► WORD …
     │                          │                                  └── "]" ──► TEXT
     │                          └── "TOOL_CALLS]" ──► MISTRAL ── "[" ──► SEQ (mistral) …
     │                                     └── "NAME[ARGS]" ──► MISTRAL_HEAD ── "{" ──► JSON_OPEN …
     ├─ "<tool " ──► ATTRS ── ">" outside quotes, after "/" ──► call; otherwise text
     └─ "`" first on its line ──► FENCE_OPEN ── "```json⏎" ──► FENCE_WS ── "{" or "[" ──► …
                                     … closing "}" or "]" ──► FENCE_TAIL ── "```⏎" ──► TEXT

An object first on its line (or after a call token, or in a fence) is a call when it has a
``"name"`` (or ``"tool"``) string and either an arguments key (``"arguments"``, ``"args"``,
``"parameters"``) or a registered tool name; one in mid-line, or after prose anywhere since the
reply began (or since its last call token), only with a registered tool name, so a JSON example
in prose or in an answer's code fence stays text (a model that answers and then shows a call of
a tool nobody offered has written an example, not a call). An object that does not parse but
shows those same marks is an `InvalidPiece`; anything else is text. An object whose first line
shows no call key is released at that newline, so an unbalanced ``{"`` cannot hide what follows;
one still unbalanced after `JSON_LIMIT` characters is released too. A ``<`` outside a string
ends a candidate at once (no JSON has one there): a model that leaves an object open and goes on
to ``<tool_call>`` on the same line has that call read, and the open object, if it showed a
call, is an `InvalidPiece`.

Only a pending candidate is held. When it turns out not to be a call, what was held is released
as text and the character that decided it is read again in TEXT; every decision depends on the
characters alone, never on where chunks break, so any chunking of a text gives the same pieces.
Each character is examined a bounded number of times, so parsing is linear in the text.
"""

from __future__ import annotations

import ast
import functools
import html
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentrt.parsing._jsonscan import JSONProblem, ObjectScanner, kind, load_object, loads

__all__ = [
    "CallFormat",
    "CallPiece",
    "InvalidPiece",
    "ParsedPiece",
    "TagSpec",
    "TextPiece",
    "ToolCallParser",
]


CallFormat = Literal[
    "tag",
    "hermes",
    "json",
    "native",
    "plan",
    "qwen3_coder",
    "llama",
    "mistral",
    "pythonic",
    "xml_attributes",
    "deepseek",
    "glm4",
    "kimi_k2",
    "minimax",
    "harmony",
]
"""The names of the formats a call can be written in."""


@dataclass(frozen=True, slots=True)
class TextPiece:
    """Visible text: what the user is shown."""

    text: str
    """Never empty."""


@dataclass(frozen=True, slots=True)
class CallPiece:
    """A well-formed tool call. Whether the tool exists is the executor's business."""

    name: str
    arguments: dict[str, Any]
    raw: str
    """The call's source text: the whole tag, fence (up to the object's closing brace) or object;
    for a native call, the arguments string; for a plan's step, the step as the plan gives it."""
    format: CallFormat
    """How the model wrote the call; `plan` for a step of a plan (`dag`, `vm`, `pipeline`) or
    a strategy's first call."""
    id: str | None = None
    """The server's call id (native calls only)."""


@dataclass(frozen=True, slots=True)
class InvalidPiece:
    """Something the model meant as a tool call but wrote wrongly."""

    raw: str
    reason: str
    """What was wrong and what is expected, addressed to the model."""
    name: str | None = None
    """The tool's name, when it could be read."""


ParsedPiece = TextPiece | CallPiece | InvalidPiece


@dataclass(frozen=True, slots=True)
class TagSpec:
    """A tool that may be called with its name as an XML tag."""

    name: str
    param: str | None = None
    """The tool's single string parameter: a tag body that is not JSON becomes ``{param: body}``."""
    split: str | None = None
    """A separator, e.g. ``"|"``: the body then gives one call per non-blank part."""
    parameters: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)
    """The JSON schema of the tool's arguments: it types the string values of an XML call body
    (Qwen3-Coder's ``<parameter=K>V</parameter>``)."""


JSON_LIMIT = 100_000
"""A JSON candidate still unbalanced after this many characters is released as text."""

_XML_FORM = "<tool_call><function=NAME><parameter=KEY>value</parameter></function></tool_call>"
_XML_FUNCTION = re.compile(r"<function=([^>\s]+)>(.*?)(</function>|\Z)", re.S)
_XML_PARAMETER = re.compile(r"<parameter=([^>\s]+)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.S)
_TYPED = {"integer", "number", "boolean", "object", "array"}
_HERMES_FORM = '<tool_call>{"name": "<tool name>", "arguments": {...}}</tool_call>'
_NAME_KEYS = ("name", "tool")
_ARGUMENT_KEYS = ("arguments", "args", "parameters")
_FENCE_OPENERS = ("```", "```json")
_FENCE_LONGEST = "```json"
_NOT_TAG_NAME = re.compile(r"[\s<>/]")

_NON_SPACE = re.compile(r"\S")
_NON_JSON_SPACE = re.compile(r"[^ \t\n\r]")
_TEXT_STOP = re.compile(r"[<\n{\[]")
# Tokens some chat templates put before a JSON call (Llama 3.x, Functionary), and the <tools> block
# the small embedded model wraps its calls in, copying its template: never shown, and the JSON
# after one is read as if it started a line.
# LFM2 wraps its pythonic list in <|tool_call_start|>…<|tool_call_end|>.
_CALL_TOKENS = (
    "<|python_tag|>",
    "<|function_call|>",
    "<tools>",
    "</tools>",
    "<|tool_call_start|>",
    "<|tool_call_end|>",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁calls▁end｜>",
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
)
# gpt-oss harmony: the reasoning splitter leaves a call's header (from whichever token began it),
# its <|message|> and body, and <|call|> in the content.
_HARMONY_OPENERS = ("<|start|>", "<|channel|>")
_HARMONY_CALL = "<|call|>"
_HARMONY_FORM = (
    "<|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json"
    '<|message|>{"key": "value"}<|call|>'
)
_RECIPIENT = re.compile(r"(?:^|[\s>])to=(?:functions\.)?([^\s<]+)")
# DeepSeek V3/R1/V3.1 and Kimi K2 write each call between a begin and an end token, inside a
# section whose own tokens are dropped like the call tokens above.
_DEEPSEEK_SEP = "<｜tool▁sep｜>"
_DEEPSEEK_FORM = (
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n"
    '```json\n{"key": "value"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
)
_KIMI_ARGUMENTS = "<|tool_call_argument_begin|>"
_KIMI_FORM = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>"
    '{"key": "value"}<|tool_call_end|><|tool_calls_section_end|>'
)
_KIMI_NAME = re.compile(r"(?:functions\.)?(\S+?)(?::\d+)?")
_NON_NAME = re.compile(r"\s")
# GLM-4.5/4.6: a <tool_call> whose body is the name, then <arg_key>/<arg_value> pairs.
_GLM_HEAD = re.compile(r"([^\s<>{}\[\]\"']+)\s*")
_GLM_ARGUMENT = re.compile(r"<arg_key>([^<]*)</arg_key>\s*<arg_value>(.*?)</arg_value>\s*", re.S)
_GLM_FORM = "<tool_call>NAME\n<arg_key>KEY</arg_key>\n<arg_value>value</arg_value>\n</tool_call>"
# MiniMax M2: <invoke> elements inside a <minimax:tool_call> block; outside one, "<invoke " is text.
_MINIMAX_OPEN = "<minimax:tool_call>"
_MINIMAX_CLOSE = "</minimax:tool_call>"
_INVOKE_HEAD = re.compile(r"""\s*name\s*=\s*(?:"([^"]+)"|'([^']+)')\s*>\s*""")
_INVOKE_PARAMETER = re.compile(
    r"""<parameter\s+name\s*=\s*(?:"([^"]*)"|'([^']*)')\s*>(.*?)</parameter>\s*""", re.S
)
_MINIMAX_FORM = (
    '<minimax:tool_call>\n<invoke name="NAME">\n<parameter name="KEY">value</parameter>\n'
    "</invoke>\n</minimax:tool_call>"
)
# A word after "[": a pythonic call's name, or Mistral's TOOL_CALLS marker.
_WORD_START = re.compile(r"[A-Za-z_]")
_NOT_WORD = re.compile(r"[^\w.\-]")
WORD_LIMIT = 256
"""A word after ``[`` (or a Mistral call's head) longer than this is text."""
_MISTRAL_MARK = "TOOL_CALLS"
_MISTRAL_CALL_HEAD = re.compile(r"([^\[\]\s{]+)(?:\[CALL_ID\][^\[\]\s]*)?\[ARGS\]\s*")
_MISTRAL_FORM = '[TOOL_CALLS]NAME[ARGS]{"key": "value"}'
_HEAD_STOP = re.compile(r"[{\n]")
_PY_OUTSIDE = re.compile(r"""[()\[\]{}"']""")
_PY_IN_STRING = {'"': re.compile(r'["\\]'), "'": re.compile(r"['\\]")}
_JSON_WORDS = {"true": True, "false": False, "null": None}
# Between attributes only names, "=", blanks and the closing "/>" may appear.
_ATTR_SPECIAL = re.compile(r"[^\w\s=:.\-/]")
_ATTR_END = {'"': re.compile('"'), "'": re.compile("'")}
_ATTRIBUTE = re.compile(r"""\s*([\w.:\-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
# A candidate whose first line shows none of these keys is not a call: it is released at that
# line's end rather than hiding the rest of the stream until it balances.
_MARK = re.compile(r'"(?:name|tool|arguments|args|parameters)"\s*:')
# For telling a malformed call from other malformed JSON: the same test as for a parsed object,
# a name plus either an arguments key or a registered tool name.
_NAME_HINT = re.compile(r'"(?:name|tool)"\s*:\s*"((?:[^"\\]|\\.)+)"')
_ARGUMENTS_HINT = re.compile(r'"(?:arguments|args|parameters)"\s*:')

# Pieces are immutable, so one per character is shared: a stream fed a character at a time would
# otherwise spend much of its time building identical frozen dataclasses.
_char_piece = functools.lru_cache(maxsize=1024)(TextPiece)

# Parser states; plain ints because the state is dispatched on for every chunk.
(
    _TEXT,
    _TAG_OPEN,
    _BODY,
    _FENCE_OPEN,
    _FENCE_WS,
    _JSON_OPEN,
    _JSON_BODY,
    _FENCE_TAIL,
    _SEQ,
    _WORD,
    _PY,
    _PY_SEP,
    _MISTRAL,
    _MISTRAL_HEAD,
    _ATTRS,
) = range(15)


_TagKind = Literal[
    "tag", "hermes", "token", "attrs", "harmony", "deepseek", "kimi_k2", "block", "invoke"
]


@dataclass(frozen=True, slots=True)
class _Tag:
    open: str
    close: str
    spec: TagSpec | None
    """None for ``<tool_call>``, the call tokens and harmony."""
    kind: _TagKind = "tag"


class ToolCallParser:
    """Splits streamed model text into visible text, tool calls and invalid calls.

    :param tags: the tools that may be called as ``<name>…</name>``. A name that cannot be a tag
        (blank, or holding whitespace, ``<``, ``>`` or ``/``) is left out, and so is ``tool_call``,
        which belongs to the Hermes format.
    :raises ValueError: for a spec with `split` but no `param`, or two different specs of one name

    One parser reads one stream: `feed` each chunk as it arrives, then `close` once at the end
    (after which the parser is ready for a new stream).
    """

    # Slots, and one table of state handlers for all parsers (`_HANDLERS`): a run holds its
    # parser for the whole run, and a dict of ~40 attributes and a bound method per state cost
    # 2-3 KB of each run.
    __slots__ = (
        "_anywhere",
        "_attr_last",
        "_call_name",
        "_container",
        "_doubled",
        "_fence_core",
        "_fence_padded",
        "_fenced",
        "_fmt",
        "_held",
        "_in_seq",
        "_invoking",
        "_json_len",
        "_line_start",
        "_longest",
        "_marked",
        "_names",
        "_out",
        "_prefix",
        "_prefixes",
        "_prose",
        "_py",
        "_py_more",
        "_quote",
        "_scanner",
        "_schemas",
        "_segment",
        "_sep_seen",
        "_seq_first",
        "_state",
        "_tag",
        "_tags",
        "_tail_visible",
        "_text",
        "_ticks",
        "_word",
    )

    def __init__(self, tags: Iterable[TagSpec] = ()) -> None:
        specs = tuple(tags)
        self._names, self._tags, self._prefixes = _tag_tables(specs)
        self._schemas = {s.name: s.parameters for s in specs if s.parameters is not None}
        self._longest = max(map(len, self._tags))
        self._out: list[ParsedPiece] = []
        self._text: list[str] = []
        self._reset()

    def _reset(self) -> None:
        self._state = _TEXT
        self._line_start = True
        self._held: list[str] = []
        """The source text of the pending candidate (for TAG_OPEN: `_prefix`)."""
        self._prefix = ""
        self._tag = _Tag("", "", None)
        self._fence_core = ""
        self._fence_padded = False
        self._fenced = False
        self._anywhere = False
        """The candidate began in mid-line or after prose: it is a call only if it names a
        registered tool."""
        self._prose = False
        """Text other than blanks was read since the stream began or its last call marker."""
        self._marked = False
        self._container = ";"
        """In SEQ: "[" inside an array of calls, ";" after a bare call (Llama's separator)."""
        self._seq_first = False
        self._sep_seen = False
        self._in_seq = False
        """The object candidate is an element of an array of calls."""
        self._doubled = False
        """The object candidate opened with "{{" (its braces are all doubled)."""
        self._json_len = 0
        self._scanner = ObjectScanner()
        self._ticks = 0
        self._tail_visible = False
        self._fmt: CallFormat = "json"
        """The format of the JSON calls being read: `mistral` after ``[TOOL_CALLS]``."""
        self._call_name: str | None = None
        """The name read from ``[TOOL_CALLS]NAME[ARGS]``, whose arguments object is being read."""
        self._word = ""
        self._py_more = False
        """In WORD: a pythonic list already gave a call, so this word must name the next one."""
        self._py = _PyScanner()
        self._segment: list[str] = []
        """The pythonic call being read, from its name."""
        self._quote = ""
        self._attr_last = " "
        """In ATTRS: the last non-blank character outside a value (a value follows "=")."""
        self._invoking = False
        """Inside a ``<minimax:tool_call>`` block, where ``<invoke `` begins a call."""

    def feed(self, chunk: str) -> list[ParsedPiece]:
        """Read the next chunk; return the pieces it completes, in order."""
        if self._state == _TEXT and not self._line_start and _TEXT_STOP.search(chunk) is None:
            # The common case, prose in mid-line: nothing in it can begin a call.
            if not chunk:
                return []
            self._prose = self._prose or not chunk.isspace()
            return [_text_piece(chunk)]
        i, n = 0, len(chunk)
        while i < n:
            i = _HANDLERS[self._state](self, chunk, i)
        if not self._text and not self._out:
            return []
        return self._drain()

    def close(self) -> list[ParsedPiece]:
        """End the stream: release held text; a call left open becomes an `InvalidPiece`."""
        state = self._state
        if state == _TAG_OPEN:
            self._text.append(self._prefix)
        elif state == _BODY:
            for piece in self._unclosed():
                self._emit(piece)
        elif state in (_PY, _ATTRS) or (state == _JSON_BODY and self._call_name is not None):
            self._emit(self._unfinished())
        elif state != _FENCE_TAIL or self._tail_visible or self._ticks < 3:
            # A fence closed by "```" at the very end has consumed its text already.
            self._text.extend(self._held)
        out = self._drain()
        self._reset()
        return out

    def _emit(self, piece: CallPiece | InvalidPiece) -> None:
        self._flush_text()
        self._out.append(piece)

    def _flush_text(self) -> None:
        if self._text:
            text = "".join(self._text)
            self._text.clear()
            if text:
                self._prose = self._prose or not text.isspace()
                self._out.append(_text_piece(text))

    def _drain(self) -> list[ParsedPiece]:
        self._flush_text()
        out, self._out = self._out, []
        return out

    def _release(self, line_start: bool) -> None:
        """The held candidate is not a call: make it text and go back to TEXT."""
        self._text.extend(self._held)
        self._held = []
        self._state = _TEXT
        self._line_start = line_start
        self._call_name = None

    def _on_text(self, chunk: str, i: int) -> int:
        if self._line_start:
            i = self._on_line_start(chunk, i)
            if self._state != _TEXT or i == len(chunk):
                return i
        match = _TEXT_STOP.search(chunk, i)
        if match is None:
            self._text.append(chunk[i:])
            return len(chunk)
        j = match.start()
        char = chunk[j]
        if char == "\n":
            self._text.append(chunk[i : j + 1])
            self._line_start = True
            return j + 1
        if j > i:
            self._text.append(chunk[i:j])
        if char == "<":
            self._state = _TAG_OPEN
            self._prefix = "<"
        else:
            self._open_json(char, fenced=False, anywhere=True)
        return j + 1

    def _on_line_start(self, chunk: str, i: int) -> int:
        """Skip the line's indent; a "{", "[" or "`" there may begin a call."""
        n = len(chunk)
        match = _NON_SPACE.search(chunk, i)
        j = n if match is None else match.start()
        if j > i:
            self._text.append(chunk[i:j])
        if j == n:
            return n
        char = chunk[j]
        if char in "{[":
            self._open_json(char, fenced=False, anywhere=False)
            return j + 1
        if char == "`":
            self._state = _FENCE_OPEN
            self._held = ["`"]
            self._fence_core = "`"
            self._fence_padded = False
            return j + 1
        self._line_start = False
        return j

    def _on_tag_open(self, chunk: str, i: int) -> int:
        # This runs for every "<" in the text. When the whole tag is in the chunk (the usual
        # case), one lookup decides; otherwise one loop over the name's characters.
        prefix, n = self._prefix, len(chunk)
        tags, prefixes = self._tags, self._prefixes
        close = chunk.find(">", i, i + self._longest)
        if close >= 0:
            tag = tags.get(prefix + chunk[i : close + 1])
            if tag is not None:
                self._enter(tag)
                return close + 1
        while i < n:
            candidate = prefix + chunk[i]
            tag = tags.get(candidate)
            if tag is not None:
                self._enter(tag)
                return i + 1
            if candidate not in prefixes:
                self._text.append(prefix)
                self._state = _TEXT
                self._line_start = False
                return i
            prefix = candidate
            i += 1
        self._prefix = prefix
        return n

    def _enter(self, tag: _Tag) -> None:
        self._held = []
        self._tag = tag
        if tag.kind == "attrs" and tag.close:
            self._held = [tag.open]
            self._json_len = len(tag.open)
            self._quote = ""
            self._attr_last = " "
            self._state = _ATTRS
        elif tag.kind == "attrs":  # <name/>: a call without arguments, whole already
            self._emit(_attribute_call(tag, tag.open, self._schemas))
            self._state = _TEXT
            self._line_start = False
        elif tag.kind == "invoke" and not self._invoking:  # prose mentioning <invoke: text
            self._text.append(tag.open)
            self._state = _TEXT
            self._line_start = False
        elif tag.close:
            self._state = _BODY
        else:  # a call token: dropped, and what follows is read as a line's start
            self._flush_text()
            self._prose = False  # the token says a call follows, whatever came before
            if tag.kind == "block":
                self._invoking = tag.open == _MINIMAX_OPEN
            self._state = _TEXT
            self._line_start = True

    def _on_body(self, chunk: str, i: int) -> int:
        if chunk.find(">", i) < 0:  # every closing tag ends with ">"
            self._held.append(chunk[i:])
            return len(chunk)
        close = self._tag.close
        width = len(close) - 1
        # A closing tag that began in an earlier chunk can only be found by joining the tail on.
        tail = self._held_tail(width) if self._held else ""
        found = (tail + chunk[i : i + width]).find(close) if tail else -1
        if found >= 0:
            start = found - len(tail)
        else:
            found = chunk.find(close, i)
            if found < 0:
                self._held.append(chunk[i:])
                return len(chunk)
            start = found - i
        held = "".join(self._held)
        body = held + chunk[i : i + start] if start >= 0 else held[: len(held) + start]
        tag = self._tag
        raw = tag.open + body + tag.close
        if tag.spec is None:
            pieces = self._section_calls(tag.kind, body, raw)
        else:
            pieces = _tag_calls(tag.spec, body, raw)
        for piece in pieces:
            self._emit(piece)
        self._held = []
        self._state = _TEXT
        self._line_start = False
        return i + start + len(close)

    def _held_tail(self, width: int) -> str:
        """The last `width` characters held (fewer if fewer are held)."""
        parts: list[str] = []
        size = 0
        for part in reversed(self._held):
            parts.append(part)
            size += len(part)
            if size >= width:
                break
        return "".join(reversed(parts))[-width:]

    def _section_calls(self, kind: _TagKind, body: str, raw: str) -> list[CallPiece | InvalidPiece]:
        """The calls in the body of a ``<tool_call>``, a DeepSeek, Kimi or harmony call or an
        ``<invoke>``."""
        if kind == "harmony":
            return [_harmony_call(body, raw)]
        if kind == "deepseek":
            return [_deepseek_call(body, raw)]
        if kind == "kimi_k2":
            return [_kimi_call(body, raw)]
        if kind == "invoke":
            return [_invoke_call(body, raw, self._schemas)]
        return _hermes_calls(body, raw, self._names, self._schemas)

    def _unclosed(self) -> list[CallPiece | InvalidPiece]:
        tag = self._tag
        body = "".join(self._held)
        raw = tag.open + body
        name = tag.spec.name if tag.spec is not None else None
        if tag.kind == "harmony":
            recipient = _RECIPIENT.search(body)
            name = recipient.group(1) if recipient is not None else None
        elif tag.spec is None:
            pieces = self._section_calls(tag.kind, body, raw)
            if _whole(tag.kind, body, pieces):
                # Generation stopped at end-of-sequence before the closing tag: the body is whole.
                return pieces
            name = next((p.name for p in pieces if p.name), None)
            if tag.kind == "hermes":
                name = name or _hermes_name(body)
        reason = f"{tag.open.rstrip()} was never closed: end the call with {tag.close}."
        return [InvalidPiece(raw, reason, name)]

    def _on_fence_open(self, chunk: str, i: int) -> int:
        char = chunk[i]
        complete = self._fence_core in _FENCE_OPENERS
        if char == "\n" and complete:
            self._held.append(char)
            self._state = _FENCE_WS
        elif char.isspace() and char != "\n" and complete:
            self._held.append(char)
            self._fence_padded = True
        elif (
            not char.isspace()
            and not self._fence_padded
            and _FENCE_LONGEST.startswith(self._fence_core + char)
        ):
            self._held.append(char)
            self._fence_core += char
        else:
            self._release(line_start=False)
            return i
        return i + 1

    def _on_fence_ws(self, chunk: str, i: int) -> int:
        match = _NON_SPACE.search(chunk, i)
        j = len(chunk) if match is None else match.start()
        if j > i:
            self._held.append(chunk[i:j])
        if j == len(chunk):
            return j
        if chunk[j] in "{[":
            self._open_json(chunk[j], fenced=True, anywhere=False)
            return j + 1
        # Everything held since the opener's newline is blank, so the next line starts here.
        self._release(line_start=True)
        return j

    def _open_json(self, char: str, *, fenced: bool, anywhere: bool) -> None:
        """Begin a candidate at its "{" or "[" (a fenced one keeps its held fence)."""
        if not fenced:
            self._held = []
        self._fenced = fenced
        # After prose, an object is an example unless it names an offered tool: the answer went
        # on to show one (a call of a tool nobody offered, in a fence, is such an example).
        self._anywhere = anywhere or self._prose or any(t.strip() for t in self._text)
        self._in_seq = False
        self._fmt = "json"
        if char == "{":
            self._begin_json()
        else:
            self._held.append("[")
            self._state = _SEQ
            self._container = "["
            self._seq_first = True
            self._sep_seen = False

    def _begin_json(self) -> None:
        """An object candidate begins; what is held already (a fence, separators) stays held."""
        self._held.append("{")
        self._json_len = 1
        self._marked = False
        self._doubled = False
        self._state = _JSON_OPEN

    def _on_json_open(self, chunk: str, i: int) -> int:
        room = JSON_LIMIT - self._json_len
        if room == 0:
            return self._give_up(i)
        end = min(len(chunk), i + room)
        match = _NON_JSON_SPACE.search(chunk, i, end)
        j = end if match is None else match.start()
        if j > i:
            self._held.append(chunk[i:j])
            self._json_len += j - i
        if j == end:
            return j
        char = chunk[j]
        if char == '"':
            self._held.append(char)
            self._json_len += 1
            self._scanner = ObjectScanner(2 if self._doubled else 1, in_string=True, tags=True)
            self._state = _JSON_BODY
            return j + 1
        if char == "{" and self._json_len == 1:
            # "{{": the small model copies its chat template's doubled braces.
            self._held.append(char)
            self._json_len += 1
            self._doubled = True
            return j + 1
        if char == "}" and not self._doubled:
            self._held.append(char)
            self._json_len += 1
            return self._end_json(j + 1)
        return self._give_up(j)

    def _on_json_body(self, chunk: str, i: int) -> int:
        end = len(chunk)
        room = JSON_LIMIT - self._json_len
        if end - i > room:
            if room == 0:
                return self._give_up(i)
            end = i + room
        if not self._marked:
            newline = chunk.find("\n", i, end)
            if newline >= 0:
                stop = self._scanner.scan(chunk, i, newline)
                if stop >= 0:
                    self._held.append(chunk[i:stop])
                    self._json_len += stop - i
                    return self._end_json(stop)
                self._held.append(chunk[i:newline])
                self._json_len += newline - i
                return self._first_line_ends(newline)
        stop = self._scanner.scan(chunk, i, end)
        if stop < 0:
            self._held.append(chunk[i:end])
            self._json_len += end - i
            return end
        self._held.append(chunk[i:stop])
        self._json_len += stop - i
        return self._end_json(stop)

    def _first_line_ends(self, newline: int) -> int:
        """At the candidate's first newline inside the object: go on only if it looks like a
        call, so an unbalanced ``{"`` cannot hide the rest of the stream."""
        held = "".join(self._held)
        self._held = [held]
        if _MARK.search(held, len(held) - self._json_len) is None:
            return self._give_up(newline)
        self._marked = True
        return newline

    def _give_up(self, i: int) -> int:
        """The candidate is not a call (not JSON, or too long): release it as text."""
        released = "".join(self._held)
        # Without a newline, what is held follows a "{", "[", "`" or a call's "}" on the same
        # line; otherwise a blank last line means the next character is first on its line.
        last_line = released[released.rfind("\n") + 1 :]
        self._held = [released]
        self._release(line_start="\n" in released and (not last_line or last_line.isspace()))
        return i

    def _end_json(self, i: int) -> int:
        if self._scanner.broken:
            return self._broken_json(i)
        if self._call_name is not None:
            return self._end_mistral_call(i)
        held = "".join(self._held)
        self._held = []
        source = held[-self._json_len :]
        text = _undouble(source) if self._doubled else source
        in_array = self._in_seq and self._container == "["
        raw = source if self._in_seq else held
        piece = _json_call(text, raw, self._names, anywhere=self._anywhere, fmt=self._fmt)
        if piece is None and self._fmt == "mistral":
            reason = f"[TOOL_CALLS] is followed by calls: write {_MISTRAL_FORM}."
            piece = InvalidPiece(raw, reason)
        if piece is None:
            self._text.append(held)
            if self._fenced and not in_array:
                self._state = _FENCE_TAIL
                self._ticks = 0
                self._tail_visible = True
            else:
                self._state = _TEXT
                self._line_start = False
            return i
        self._emit(piece)
        if self._fenced and not in_array:
            self._state = _FENCE_TAIL
            self._ticks = 0
            self._tail_visible = False
        else:
            self._state = _SEQ
            self._container = "[" if in_array else ";"
            self._seq_first = False
            self._sep_seen = False
        return i

    def _broken_json(self, i: int) -> int:
        """A "<" outside a string at `i`: the object can never close. One that shows a call is a
        malformed call, anything else text; either way the "<" is read again in TEXT, so the
        call tag a model writes after a broken object on the same line is still read."""
        held = "".join(self._held)
        source = held[-self._json_len :]
        name, self._call_name = self._call_name, None
        form = _MISTRAL_FORM if name is not None else '{"name": "NAME", "arguments": {...}}'
        name = name or _hinted_name(source, self._names, anywhere=self._anywhere)
        if name is None:
            return self._give_up(i)
        reason = (
            f'the call of "{name}" is not valid JSON: its braces are still open where "<" '
            f"begins. Write {form.replace('NAME', name)}, closed, before anything else."
        )
        self._held = []
        self._emit(InvalidPiece(held, reason, name))
        self._state = _TEXT
        self._line_start = False
        return i

    def _on_seq(self, chunk: str, i: int) -> int:
        """Between the calls of an array (``[{…}, {…}]``) or after a bare call (``{…}; {…}``):
        separators are held, and dropped if another call follows."""
        char = chunk[i]
        array = self._container == "["
        if char in " \t" or (char in "\r\n" and array and (self._fenced or not self._seq_first)):
            self._held.append(char)
            return i + 1
        if char == "{" and (self._sep_seen or self._seq_first):
            self._in_seq = True
            self._begin_json()
            return i + 1
        if self._seq_first and array and _WORD_START.match(char):
            self._word = ""
            self._py_more = False
            self._state = _WORD
            return i
        closing = not self._seq_first and not self._sep_seen
        if closing and char == ("," if array else ";"):
            self._sep_seen = True
            self._held.append(char)
            return i + 1
        if closing and array and char == "]":
            self._held = []
            if self._fenced:
                self._state = _FENCE_TAIL
                self._ticks = 0
                self._tail_visible = False
            else:
                self._state = _TEXT
                self._line_start = False
            return i + 1
        return self._give_up(i)

    def _on_word(self, chunk: str, i: int) -> int:
        """A word right after ``[`` (or after a pythonic call's ","): a tool's name followed by
        "(" begins a pythonic call, ``TOOL_CALLS]`` is Mistral's marker; anything else is text."""
        match = _NOT_WORD.search(chunk, i)
        end = len(chunk) if match is None else match.start()
        word = self._word + chunk[i:end]
        if len(word) > WORD_LIMIT:
            return self._give_up(i)
        self._held.append(chunk[i:end])
        self._word = word
        if match is None:
            return end
        char = chunk[end]
        if char == "(" and (self._py_more or word in self._names):
            self._held.append(char)
            self._segment = [word, char]
            self._json_len = len(word) + 1
            self._py = _PyScanner()
            self._state = _PY
            return end + 1
        if char == "]" and word == _MISTRAL_MARK and not self._py_more:
            self._held.append(char)
            self._state = _MISTRAL
            return end + 1
        return self._give_up(end)

    def _on_py(self, chunk: str, i: int) -> int:
        """Inside a pythonic call's parentheses, up to the ")" that closes them."""
        room = JSON_LIMIT - self._json_len
        if room == 0:
            return self._give_up(i)
        end = min(len(chunk), i + room)
        stop = self._py.scan(chunk, i, end)
        part = chunk[i : end if stop < 0 else stop]
        self._held.append(part)
        self._segment.append(part)
        self._json_len += len(part)
        if stop < 0:
            return end
        self._emit(_pythonic_call("".join(self._segment), self._names))
        self._held = []
        self._state = _PY_SEP
        self._sep_seen = False
        return stop

    def _on_py_sep(self, chunk: str, i: int) -> int:
        """Between pythonic calls: ", " then the next call, or the list's "]"."""
        char = chunk[i]
        if char.isspace() or (char == "," and not self._sep_seen):
            self._sep_seen = self._sep_seen or char == ","
            self._held.append(char)
            return i + 1
        if self._sep_seen and _WORD_START.match(char):
            self._word = ""
            self._py_more = True
            self._state = _WORD
            return i
        if char == "]" and not self._sep_seen:
            self._held = []
            self._state = _TEXT
            self._line_start = False
            return i + 1
        return self._give_up(i)

    def _on_mistral(self, chunk: str, i: int) -> int:
        """After ``[TOOL_CALLS]``: a JSON array of calls (the older form) or ``NAME[ARGS]{…}``."""
        char = chunk[i]
        if char.isspace():
            self._held.append(char)
            return i + 1
        if char == "[":
            self._held.append(char)
            self._state = _SEQ
            self._container = "["
            self._seq_first = True
            self._sep_seen = False
            self._fmt = "mistral"
            self._anywhere = False
            return i + 1
        if _WORD_START.match(char):
            self._word = ""
            self._state = _MISTRAL_HEAD
            return i
        return self._give_up(i)

    def _on_mistral_head(self, chunk: str, i: int) -> int:
        """``NAME[ARGS]`` (or ``NAME[CALL_ID]ID[ARGS]``) up to the arguments' "{"."""
        match = _HEAD_STOP.search(chunk, i)
        end = len(chunk) if match is None else match.start()
        head = self._word + chunk[i:end]
        if len(head) > WORD_LIMIT:
            return self._give_up(i)
        self._held.append(chunk[i:end])
        self._word = head
        if match is None:
            return end
        found = _MISTRAL_CALL_HEAD.fullmatch(head) if chunk[end] == "{" else None
        if found is None:
            return self._give_up(end)
        self._call_name = found.group(1)
        self._begin_json()
        self._marked = True  # the marker said it is a call: its arguments may span lines
        return end + 1

    def _end_mistral_call(self, i: int) -> int:
        held = "".join(self._held)
        name, self._call_name = self._call_name or "", None
        self._held = []
        try:
            piece: CallPiece | InvalidPiece = CallPiece(
                name, load_object(held[-self._json_len :]), held, "mistral"
            )
        except JSONProblem as exc:
            reason = (
                f"the arguments of {name} are not a JSON object: {exc}. "
                f'Write [TOOL_CALLS]{name}[ARGS]{{"key": "value"}}.'
            )
            piece = InvalidPiece(held, reason, name)
        self._emit(piece)
        self._state = _TEXT
        self._line_start = False
        return i

    def _on_attrs(self, chunk: str, i: int) -> int:
        """Inside ``<name key="value" …``, up to the ">" outside a value."""
        n = len(chunk)
        while i < n:
            quote = self._quote
            pattern = _ATTR_END[quote] if quote else _ATTR_SPECIAL
            match = pattern.search(chunk, i)
            stop = n if match is None else match.end()
            if self._json_len + stop - i > JSON_LIMIT:
                return self._give_up(i)
            self._held.append(chunk[i:stop])
            self._json_len += stop - i
            if match is None:
                if not quote and chunk[i:].strip():
                    self._attr_last = chunk[i:].rstrip()[-1]
                return n
            before = chunk[i : match.start()].rstrip()
            i = stop
            char = match.group()
            if quote:
                self._quote = ""
                self._attr_last = char
                continue
            last = before[-1] if before else self._attr_last
            if char in "\"'" and last == "=":
                self._quote = char
            elif char == ">" and last == "/":
                self._emit(_attribute_call(self._tag, "".join(self._held), self._schemas))
                self._held = []
                self._state = _TEXT
                self._line_start = False
                return i
            else:  # not an attribute list: the tag and what followed are text
                self._held[-1] = self._held[-1][:-1]
                return self._give_up(i - 1)
        return n

    def _unfinished(self) -> InvalidPiece:
        """A pythonic call, an attribute tag or a Mistral call cut off by the end of the stream."""
        raw = "".join(self._held)
        if self._state == _PY:
            name = self._segment[0]
            form = f"[{name}(key=value)]"
        elif self._state == _ATTRS:
            name = self._tag.open[1:-1]
            form = f'<{name} key="value"/>'
        else:
            name = self._call_name or ""
            form = f'[TOOL_CALLS]{name}[ARGS]{{"key": "value"}}'
        return InvalidPiece(raw, f"the call of {name} was never closed: write {form}.", name)

    def _on_fence_tail(self, chunk: str, i: int) -> int:
        if self._ticks == 0:
            match = _NON_SPACE.search(chunk, i)
            j = len(chunk) if match is None else match.start()
            if j > i:
                self._held.append(chunk[i:j])
            if j == len(chunk):
                return j
            i = j
        char = chunk[i]
        if self._ticks < 3:
            if char != "`":
                # Not a closing fence: the blank text after the object is ordinary text.
                self._release(line_start=self._ticks == 0 and "\n" in "".join(self._held))
                return i
            self._ticks += 1
            self._held.append(char)
            if self._ticks == 3 and not self._tail_visible:
                self._held = []
            return i + 1
        if char == "\n":
            if self._tail_visible:
                self._held.append(char)
                self._release(line_start=True)
            else:
                self._held = []
                self._state = _TEXT
                self._line_start = True
            return i + 1
        if char.isspace():
            self._held.append(char)
            return i + 1
        self._release(line_start=False)
        return i


_HANDLERS: tuple[Callable[[ToolCallParser, str, int], int], ...] = (
    ToolCallParser._on_text,
    ToolCallParser._on_tag_open,
    ToolCallParser._on_body,
    ToolCallParser._on_fence_open,
    ToolCallParser._on_fence_ws,
    ToolCallParser._on_json_open,
    ToolCallParser._on_json_body,
    ToolCallParser._on_fence_tail,
    ToolCallParser._on_seq,
    ToolCallParser._on_word,
    ToolCallParser._on_py,
    ToolCallParser._on_py_sep,
    ToolCallParser._on_mistral,
    ToolCallParser._on_mistral_head,
    ToolCallParser._on_attrs,
)
"""`ToolCallParser`'s reader of each state, by the state's number."""


def _text_piece(text: str) -> TextPiece:
    return _char_piece(text) if len(text) == 1 else TextPiece(text)


@functools.lru_cache(maxsize=256)
def _tag_tables(
    specs: tuple[TagSpec, ...],
) -> tuple[frozenset[str], dict[str, _Tag], frozenset[str]]:
    """Registered names, tags by opening text, and every proper prefix of an opening tag.

    Cached: a run builds a parser per turn over the same tools, and for a large tool set these
    tables cost more than parsing a turn.
    """
    by_name: dict[str, TagSpec] = {}
    for spec in specs:
        if spec.split is not None and (not spec.split or spec.param is None):
            raise ValueError(f"tag {spec.name!r}: split needs a non-empty separator and a param")
        if by_name.get(spec.name, spec) != spec:
            raise ValueError(f"tag {spec.name!r} is registered twice, differently")
        # A tool whose name cannot be written as a tag is still callable in the other formats.
        if spec.name and spec.name != "tool_call" and not _NOT_TAG_NAME.search(spec.name):
            by_name[spec.name] = spec
    tags = {f"<{name}>": _Tag(f"<{name}>", f"</{name}>", spec) for name, spec in by_name.items()}
    for name, spec in by_name.items():  # <name key="value"/>, <name/>
        tags[f"<{name} "] = _Tag(f"<{name} ", "/>", spec, "attrs")
        tags[f"<{name}/>"] = _Tag(f"<{name}/>", "", spec, "attrs")
    tags["<tool_call>"] = _Tag("<tool_call>", "</tool_call>", None, "hermes")
    for opener in _HARMONY_OPENERS:
        tags[opener] = _Tag(opener, _HARMONY_CALL, None, "harmony")
    tags["<｜tool▁call▁begin｜>"] = _Tag(
        "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", None, "deepseek"
    )
    tags["<|tool_call_begin|>"] = _Tag("<|tool_call_begin|>", "<|tool_call_end|>", None, "kimi_k2")
    for token in (_MINIMAX_OPEN, _MINIMAX_CLOSE):
        tags[token] = _Tag(token, "", None, "block")
    tags.setdefault("<invoke ", _Tag("<invoke ", "</invoke>", None, "invoke"))
    for token in _CALL_TOKENS:  # a registered tool named "tools" keeps its tag
        tags.setdefault(token, _Tag(token, "", None, "token"))
    prefixes = frozenset(tag[:k] for tag in tags for k in range(1, len(tag)))
    return frozenset(by_name), tags, prefixes


def _tag_calls(spec: TagSpec, body: str, raw: str) -> list[CallPiece | InvalidPiece]:
    name = spec.name
    text = body.strip()
    if text.startswith("{"):
        try:
            arguments = load_object(text)
        except JSONProblem as exc:
            reason = (
                f"arguments of <{name}> are not valid JSON: {exc}. "
                f'Write one JSON object: <{name}>{{"parameter": "value"}}</{name}>.'
            )
            return [InvalidPiece(raw, reason, name)]
        return [CallPiece(name, arguments, raw, "tag")]
    if spec.param is None:
        if not text:
            return [CallPiece(name, {}, raw, "tag")]
        reason = (
            f"<{name}> takes its arguments as a JSON object, not as plain text: "
            f'write <{name}>{{"parameter": "value"}}</{name}>.'
        )
        return [InvalidPiece(raw, reason, name)]
    if spec.split is None:
        return [CallPiece(name, {spec.param: text}, raw, "tag")]
    parts = (part.strip() for part in text.split(spec.split))
    calls: list[CallPiece | InvalidPiece] = [
        CallPiece(name, {spec.param: part}, raw, "tag") for part in parts if part
    ]
    if calls:
        return calls
    reason = (
        f"<{name}> is empty: give one {spec.param} or several separated by {spec.split!r}, "
        f"e.g. <{name}>first{spec.split}second</{name}>."
    )
    return [InvalidPiece(raw, reason, name)]


def _hermes_calls(
    body: str, raw: str, names: frozenset[str], schemas: Mapping[str, Mapping[str, Any]]
) -> list[CallPiece | InvalidPiece]:
    text = body.strip()
    if text.startswith("<function="):
        return _xml_calls(text, raw, schemas)
    head = _GLM_HEAD.match(text)
    # GLM's body is a name, then its arguments; a bare name is a call only of an offered tool,
    # so a stray word in a <tool_call> is still told the JSON form.
    if head is not None and (
        text.startswith("<arg_key>", head.end()) or (head.end() == len(text) and text in names)
    ):
        return [_glm_call(text, head.group(1), head.end(), raw, schemas)]
    if text.startswith("{{"):
        text = _undouble(text)
    try:
        value = loads(text)
    except JSONProblem as exc:
        reason = f"the <tool_call> body is not valid JSON: {exc}. Write {_HERMES_FORM}."
        return [InvalidPiece(raw, reason)]
    items = value if isinstance(value, list) else [value]
    if not items:
        reason = f"the <tool_call> list is empty: write {_HERMES_FORM}."
        return [InvalidPiece(raw, reason)]
    return [_hermes_call(item, raw) for item in items]


def _xml_calls(
    text: str, raw: str, schemas: Mapping[str, Mapping[str, Any]]
) -> list[CallPiece | InvalidPiece]:
    """Qwen3-Coder's body: ``<function=NAME><parameter=K>V</parameter>…</function>``."""
    pieces: list[CallPiece | InvalidPiece] = []
    for function in _XML_FUNCTION.finditer(text):
        name, inner, closed = function.group(1), function.group(2), function.group(3)
        if not closed:
            reason = f"<function={name}> was never closed: write {_XML_FORM}."
            pieces.append(InvalidPiece(raw, reason, name))
            continue
        properties = schemas.get(name, {}).get("properties", {})
        arguments: dict[str, Any] = {}
        for parameter in _XML_PARAMETER.finditer(inner):
            key, value = parameter.group(1), _strip_newline(parameter.group(2))
            arguments[key] = _coerce(value, properties.get(key))
        pieces.append(CallPiece(name, arguments, raw, "qwen3_coder"))
    if not pieces:
        return [InvalidPiece(raw, f"no <function=NAME> in the <tool_call>: write {_XML_FORM}.")]
    return pieces


def _glm_call(
    text: str, name: str, pos: int, raw: str, schemas: Mapping[str, Mapping[str, Any]]
) -> CallPiece | InvalidPiece:
    """GLM-4.5's body after the name: ``<arg_key>K</arg_key><arg_value>V</arg_value>`` pairs."""
    properties = schemas.get(name, {}).get("properties", {})
    arguments: dict[str, Any] = {}
    while pos < len(text):
        pair = _GLM_ARGUMENT.match(text, pos)
        if pair is None:
            reason = (
                f"the arguments of {name} must be <arg_key>/<arg_value> pairs, and "
                f"{text[pos : pos + 40]!r} is not one: write {_GLM_FORM}."
            )
            return InvalidPiece(raw, reason, name)
        key, value = pair.group(1).strip(), pair.group(2)
        arguments[key] = _coerce(value, properties.get(key))
        pos = pair.end()
    return CallPiece(name, arguments, raw, "glm4")


def _whole(kind: _TagKind, body: str, pieces: list[CallPiece | InvalidPiece]) -> bool:
    """Whether a call left open at the end of the stream was written out all the same: a JSON
    body that parses, or Qwen3-Coder's closed ``</function>``. A GLM body or an ``<invoke>`` has
    nothing that shows its last argument came, so a turn cut off there is not run."""
    if kind == "hermes":
        return _complete_json(body) or "</function>" in body
    return kind in ("deepseek", "kimi_k2") and all(isinstance(p, CallPiece) for p in pieces)


def _strip_newline(value: str) -> str:
    """The template puts each value on its own line: one newline either side is layout."""
    value = value.removeprefix("\n")
    return value.removesuffix("\n")


def _coerce(value: str, schema: object) -> Any:
    """A parameter's text as the type its schema gives; as written when it does not fit (or
    when the tool's schema has no such parameter: `schema` is then not a mapping)."""
    if not isinstance(schema, Mapping):
        return value
    kinds = schema.get("type")
    kinds = set(kinds) if isinstance(kinds, list) else {kinds}
    if not kinds & _TYPED:  # a string, or a type the schema does not give: kept as written
        return value
    try:
        parsed = loads(value.strip())
    except JSONProblem:
        return value
    checks = {
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "null": lambda v: v is None,
    }
    return parsed if any(checks[k](parsed) for k in kinds if k in checks) else value


def _hermes_call(item: Any, raw: str) -> CallPiece | InvalidPiece:
    if not isinstance(item, dict):
        reason = f"a <tool_call> holds a JSON object, not {kind(item)}: write {_HERMES_FORM}."
        return InvalidPiece(raw, reason)
    name = _call_name(item)
    if name is None:
        reason = f'the <tool_call> object has no "name" string: write {_HERMES_FORM}.'
        return InvalidPiece(raw, reason)
    try:
        arguments = _call_arguments(item, name)
    except JSONProblem as exc:
        return InvalidPiece(raw, str(exc), name)
    return CallPiece(name, arguments, raw, "hermes")


def _hermes_name(body: str) -> str | None:
    """The name in an unclosed ``<tool_call>`` body, when it is readable."""
    hint = _NAME_HINT.search(body)
    return hint.group(1) if hint is not None else None


def _undouble(text: str) -> str:
    """``{{"name": "f", "arguments": {{}}}}`` as the JSON it stands for."""
    return text.replace("{{", "{").replace("}}", "}")


def _complete_json(body: str) -> bool:
    try:
        loads(body.strip())
    except JSONProblem:
        return False
    return True


def _json_call(
    text: str, raw: str, names: frozenset[str], *, anywhere: bool, fmt: CallFormat = "json"
) -> CallPiece | InvalidPiece | None:
    """The call a bare or fenced JSON object makes, or None when it is not call-shaped.

    One that starts a line is a call with a registered name or an arguments key; one in mid-line
    or after prose (`anywhere`) only with a registered name, so a JSON example is left as text.
    """
    try:
        value = load_object(text)  # `text` is a balanced {...}, so only a decode error is left
    except JSONProblem as exc:
        name = _hinted_name(text, names, anywhere=anywhere)
        if name is None:
            return None
        reason = (
            f'the call of "{name}" is not valid JSON: {exc}. '
            f'Write {{"name": "{name}", "arguments": {{...}}}}.'
        )
        return InvalidPiece(raw, reason, name)
    name = _call_name(value)
    if name is None or (
        name not in names and (anywhere or not any(k in value for k in _ARGUMENT_KEYS))
    ):
        return None
    try:
        arguments = _call_arguments(value, name)
    except JSONProblem as exc:
        return InvalidPiece(raw, str(exc), name)
    return CallPiece(name, arguments, raw, fmt)


def _hinted_name(text: str, names: frozenset[str], *, anywhere: bool) -> str | None:
    """The tool a malformed object calls, by the same test as a parsed one's (`_json_call`): a
    name plus an arguments key or a registered name; None when it shows no call."""
    hint = _NAME_HINT.search(text)
    if hint is None:
        return None
    name = hint.group(1)
    if name not in names and (anywhere or _ARGUMENTS_HINT.search(text) is None):
        return None
    return name


def _first_of(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The value of the first of `keys` that `obj` has, or None. A loop, not `next()` over a
    generator: 0.08 µs against 0.35, twice for every call parsed."""
    for key in keys:
        if key in obj:
            return obj[key]
    return None


def _call_name(obj: dict[str, Any]) -> str | None:
    value = _first_of(obj, _NAME_KEYS)
    return value if isinstance(value, str) and value else None


def _call_arguments(obj: dict[str, Any], name: str) -> dict[str, Any]:
    """The arguments of a call object: an object, or a string holding one (OpenAI style);
    absent, null or blank means none."""
    value = _first_of(obj, _ARGUMENT_KEYS)
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            return load_object(value)
        except JSONProblem as exc:
            raise JSONProblem(
                f'the arguments of "{name}" are a string that does not hold a JSON object: {exc}. '
                "Give the arguments as a JSON object."
            ) from None
    raise JSONProblem(
        f'the arguments of "{name}" must be a JSON object, not {kind(value)}: '
        f'write {{"name": "{name}", "arguments": {{...}}}}.'
    )


class _PyScanner:
    """Where a pythonic call's parentheses close: bracket depth and the open string's quote,
    kept between chunks like `ObjectScanner`'s."""

    __slots__ = ("depth", "escaped", "quote")

    def __init__(self) -> None:
        self.depth = 1
        self.quote = ""
        self.escaped = False

    def scan(self, text: str, pos: int, end: int) -> int:
        """Scan `text[pos:end]`; return the index just past the closing ")", or -1."""
        while pos < end:
            if self.escaped:
                self.escaped = False
                pos += 1
                continue
            pattern = _PY_IN_STRING[self.quote] if self.quote else _PY_OUTSIDE
            match = pattern.search(text, pos, end)
            if match is None:
                return -1
            pos = match.end()
            char = match.group()
            if char == "\\":
                self.escaped = True
            elif self.quote:
                self.quote = ""
            elif char in "\"'":
                self.quote = char
            elif char in "([{":
                self.depth += 1
            else:
                self.depth -= 1
                if self.depth == 0:
                    return pos
        return -1


def _pythonic_call(text: str, names: frozenset[str]) -> CallPiece | InvalidPiece:
    """``name(key=value, …)`` with literal values (read with `ast.literal_eval`, never run)."""
    name = text[: text.index("(")]
    form = f"[{name}(key=value, other=value)]"
    if name not in names:
        reason = f"{name} is not one of your tools: call only the tools you were given."
        return InvalidPiece(text, reason, name)
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        detail = exc.msg if isinstance(exc, SyntaxError) else "it cannot be read"
        reason = f"the call of {name} is not a Python call ({detail}): write {form}."
        return InvalidPiece(text, reason, name)
    if not isinstance(node, ast.Call) or node.args:
        reason = f"the arguments of {name} must each be named, as {form}."
        return InvalidPiece(text, reason, name)
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        value = keyword.value
        try:
            if keyword.arg is None:
                raise ValueError("**")
            if isinstance(value, ast.Name) and value.id in _JSON_WORDS:
                arguments[keyword.arg] = _JSON_WORDS[value.id]
            else:
                arguments[keyword.arg] = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            reason = (
                f"the value of {keyword.arg or '**'} in the call of {name} is not a literal "
                f"(a string, number, boolean, None, list or dict): write {form}."
            )
            return InvalidPiece(text, reason, name)
    return CallPiece(name, arguments, text, "pythonic")


def _attribute_call(
    tag: _Tag, raw: str, schemas: Mapping[str, Mapping[str, Any]]
) -> CallPiece | InvalidPiece:
    """``<name key="value" …/>``: the attributes are the arguments, typed by the schema."""
    name = tag.open[1:].rstrip(" />")
    body = raw[len(tag.open) :].removesuffix(">").rstrip().removesuffix("/")
    properties = schemas.get(name, {}).get("properties", {})
    arguments: dict[str, Any] = {}
    pos = 0
    for attribute in _ATTRIBUTE.finditer(body):
        if attribute.start() != pos:
            break
        key, value = attribute.group(1), html.unescape(attribute.group(2) or attribute.group(3))
        arguments[key] = _coerce(value, properties.get(key))
        pos = attribute.end()
    if body[pos:].strip():
        reason = f'the attributes of <{name}> cannot be read: write <{name} key="value"/>.'
        return InvalidPiece(raw, reason, name)
    return CallPiece(name, arguments, raw, "xml_attributes")


def _deepseek_call(body: str, raw: str) -> CallPiece | InvalidPiece:
    """``function<｜tool▁sep｜>NAME`` then a fenced JSON object (V3, R1), or
    ``NAME<｜tool▁sep｜>{…}`` (V3.1)."""
    head, found, rest = body.partition(_DEEPSEEK_SEP)
    name, arguments = head.strip(), rest
    if name == "function":  # the call's type, then the name on its own line
        name, _, arguments = rest.partition("\n")
        name = name.strip()
    if not found or not name or _NON_NAME.search(name):
        reason = f"a tool call needs its name and {_DEEPSEEK_SEP}: write {_DEEPSEEK_FORM}."
        return InvalidPiece(raw, reason)
    text = arguments.strip()
    if text.startswith("```"):
        text = text.removeprefix("```").removeprefix("json").removesuffix("```")
    return _arguments_call(name, text, raw, "deepseek", _DEEPSEEK_FORM)


def _kimi_call(body: str, raw: str) -> CallPiece | InvalidPiece:
    """``functions.NAME:IDX<|tool_call_argument_begin|>{…}`` (prefix and index optional)."""
    head, found, arguments = body.partition(_KIMI_ARGUMENTS)
    named = _KIMI_NAME.fullmatch(head.strip())
    if not found or named is None:
        reason = f"a tool call needs its name and {_KIMI_ARGUMENTS}: write {_KIMI_FORM}."
        return InvalidPiece(raw, reason)
    return _arguments_call(named.group(1), arguments, raw, "kimi_k2", _KIMI_FORM)


def _arguments_call(
    name: str, text: str, raw: str, fmt: CallFormat, form: str
) -> CallPiece | InvalidPiece:
    """A call whose arguments are a JSON object (none when blank)."""
    try:
        arguments = load_object(text) if text.strip() else {}
    except JSONProblem as exc:
        reason = f"the arguments of {name} are not a JSON object: {exc}. Write {form}."
        return InvalidPiece(raw, reason, name)
    return CallPiece(name, arguments, raw, fmt)


def _invoke_call(
    body: str, raw: str, schemas: Mapping[str, Mapping[str, Any]]
) -> CallPiece | InvalidPiece:
    """MiniMax's ``<invoke name="NAME">`` body: ``<parameter name="K">V</parameter>`` elements,
    typed by the tool's schema like Qwen3-Coder's."""
    head = _INVOKE_HEAD.match(body)
    if head is None:
        reason = f'an <invoke> names its tool as name="NAME": write {_MINIMAX_FORM}.'
        return InvalidPiece(raw, reason)
    name = head.group(1) or head.group(2)
    properties = schemas.get(name, {}).get("properties", {})
    arguments: dict[str, Any] = {}
    pos = head.end()
    while pos < len(body):
        parameter = _INVOKE_PARAMETER.match(body, pos)
        if parameter is None:
            reason = (
                f"the arguments of {name} must be <parameter> elements, and "
                f"{body[pos : pos + 40]!r} is not one: write {_MINIMAX_FORM}."
            )
            return InvalidPiece(raw, reason, name)
        key = parameter.group(1) or parameter.group(2)
        arguments[key] = _coerce(parameter.group(3), properties.get(key))
        pos = parameter.end()
    return CallPiece(name, arguments, raw, "minimax")


def _harmony_call(body: str, raw: str) -> CallPiece | InvalidPiece:
    """A harmony message to ``functions.NAME``: its header, ``<|message|>``, a JSON body."""
    header, found, message = body.partition("<|message|>")
    recipient = _RECIPIENT.search(header)
    if not found or recipient is None:
        reason = f"a tool call needs a recipient and a message: write {_HARMONY_FORM}."
        return InvalidPiece(raw, reason)
    name = recipient.group(1)
    try:
        arguments = load_object(message) if message.strip() else {}
    except JSONProblem as exc:
        reason = f"the message to {name} is not a JSON object: {exc}. Write {_HARMONY_FORM}."
        return InvalidPiece(raw, reason, name)
    return CallPiece(name, arguments, raw, "harmony")
