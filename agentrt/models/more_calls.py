"""Internal. Whether a call a model was asked for after its last one serves the question.

Asked for several independent things ("the weather in Paris and in Madrid"), a small model
writes the first call and stops: the embedded 0.5B did so for 9 of 12 such questions (issue
18). So when a constrained turn of the embedded model ends after its calls, the model is asked
for one more, its reply opened for it (`LocalModel.probe_calls`). The call it then writes is
kept only when it serves a part of the question the earlier calls left out:

- it is not one of them;
- it differs from each earlier call of its own tool in an argument both give (not the same
  call with an optional argument added, or one the earlier call left null);
- one of its values is in the question's own words, and is none of the earlier calls' values
  nor holds one or is held in one (the question itself, as a text to translate, after a
  call on its city, is no new part of it).

Anything else is dropped before anyone sees it, and the model is asked for no more. Only a
turn that answers the user's message is asked (one on tool results follows from them), and a
call the conversation has made already counts as an earlier one. So a
call the model writes in place of an answer (`finish`) is kept only in the rare case that its
answer is words of the question.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from agentrt.models.base import Message

__all__ = ["Call", "made_calls", "serves_more", "written_calls"]

Call = tuple[str, dict[str, Any]]

_TAG = re.compile(r"</?tool_call>")
_NOT_SPACE = re.compile(r"\S")


def written_calls(text: str) -> list[Call]:
    """The calls of a turn the call grammar held (objects, bare or in `<tool_call>` tags), or
    none if it holds anything else (an answer in text)."""
    body = _TAG.sub(" ", text)
    decoder = json.JSONDecoder()
    calls: list[Call] = []
    at = 0
    while (start := _NOT_SPACE.search(body, at)) is not None:
        try:
            value, at = decoder.raw_decode(body, start.start())
        except json.JSONDecodeError:
            return []
        if not (
            isinstance(value, dict)
            and isinstance(value.get("name"), str)
            and isinstance(value.get("arguments"), dict)
        ):
            return []
        calls.append((value["name"], value["arguments"]))
    return calls


def made_calls(messages: list[Message]) -> list[Call]:
    """The calls a conversation's tool results answer: a call made before is no new one."""
    calls: list[Call] = []
    for message in messages:
        if message.role == "tool" and message.name is not None:
            try:
                arguments = json.loads(message.arguments or "{}")
            except json.JSONDecodeError:
                continue
            if isinstance(arguments, dict):
                calls.append((message.name, arguments))
    return calls


def serves_more(call: Call, earlier: list[Call], question: str) -> bool:
    """Whether `call`, written after `earlier`, asks for something of `question` they do not
    (the rules in the module docstring)."""
    name, arguments = call
    for other_name, other in earlier:
        if other_name == name and not any(
            _given(value) and _given(other.get(key)) and not _same(value, other[key])
            for key, value in arguments.items()
        ):
            return False
    used = [value for _, other in earlier for value in _scalars(other)]
    return any(
        _in_words(value, question) and not any(_overlap(value, u) for u in used)
        for value in _scalars(arguments)
    )


def _scalars(value: Any) -> Iterator[str | int | float]:
    """The strings and numbers of an argument value. Booleans and nulls are no one's words."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _scalars(item)
    elif isinstance(value, list):
        for item in value:
            yield from _scalars(item)
    elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
        yield value


def _given(value: Any) -> bool:
    """An argument written null was not given: filling it in asks nothing new."""
    return value is not None


def _key(value: str | int | float) -> str:
    if isinstance(value, str):
        return value.strip().casefold()
    return f"{value:g}" if isinstance(value, float) else str(value)


def _same(one: Any, other: Any) -> bool:
    if isinstance(one, str) and isinstance(other, str):
        return _key(one) == _key(other)
    return bool(one == other)


def _overlap(value: str | int | float, used: str | int | float) -> bool:
    """Whether two values name the same part of the question: equal, or one written in the
    other ("What's the population of Canada?" as a text to translate, after `place: Canada`)."""
    if isinstance(value, str) and isinstance(used, str):
        return _in_words(value, used) or _in_words(used, value)
    return _key(value) == _key(used)


def _in_words(value: str | int | float, question: str) -> bool:
    """Whether the value is written in the question, as a whole word or number."""
    text = value.strip() if isinstance(value, str) else _key(value)
    if not text:
        return False
    pattern = rf"(?<![\w.]){re.escape(text)}(?![\w])"
    return re.search(pattern, question, re.IGNORECASE) is not None
