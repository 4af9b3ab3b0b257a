"""Internal. Whether the answer of a run that ended `ok` is one: `run_finished.doubt`.

A small model ends runs normally with answers that are none: the text of a tool call the run
never read as one, a guard's refusal repeated as if it were the result, or figures written
after every call failed. Each looks like success to a status check; evaluation and UIs need to
tell them apart (see `AnswerDoubt`). The judgement reads only what the run recorded: its answer
and how its tool calls ended (`CallTally`, fed by `RunContext.emit`).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field

from agentrt.events import AnswerDoubt, ToolCallInvalidEvent, ToolFinishedEvent
from agentrt.parsing import CallPiece, InvalidPiece, ToolCallParser

__all__ = ["CallTally", "holds_tool_call"]

_CALL_MARKS = re.compile(
    r"<tool_call>|<function=|\[TOOL_CALLS\]|<\|python_tag\|>|<invoke\s"
    r'|"(?:name|tool|function)"\s*:\s*"[^"]*"\s*,\s*"(?:arguments|parameters|args)"\s*:'
)
"""What a call looks like wherever it stands, also where the parser leaves it as text (an
object in mid-line naming no tool on offer): the tokens of the call formats, and a JSON object
that starts with a name and goes on to its arguments."""

_ERROR_PREFIX = 80
"""How much of a failed call's error an answer must repeat to be taken for that error..."""
_ERROR_MIN = 20
"""...and the least: shorter errors ("timeout") are words an answer may well use."""


def holds_tool_call(text: str) -> bool:
    """Whether `text` holds a tool call: one the parser reads in any of its formats (with no
    tool on offer, so only the shapes that need no known name), or the marks of one."""
    if _CALL_MARKS.search(text):
        return True
    if "<" not in text and "{" not in text and "[" not in text:
        return False  # every shape the parser reads opens with one of these (its diagram)
    parser = ToolCallParser()
    pieces = [*parser.feed(text), *parser.close()]
    return any(isinstance(p, CallPiece | InvalidPiece) for p in pieces)


def _flat(text: str) -> str:
    return " ".join(text.split()).casefold()


_EXCEPTION_NAME = re.compile(r"^[a-z_][\w.]*(?:error|exception): ")
"""How the executor prefixes an unexpected exception's message (`OperationalError: …`), which
a model repeating the message leaves out."""


def _repeats(answer: str, error: str) -> bool:
    """Whether the (flattened) `answer` repeats `error`, as much of it as says something."""
    said = _EXCEPTION_NAME.sub("", _flat(error))[:_ERROR_PREFIX]
    return len(said) >= _ERROR_MIN and said in answer


@dataclass(slots=True)
class CallTally:
    """How a run's tool calls ended, in order: enough to judge its answer."""

    outcomes: list[tuple[str, str | None]] = field(default_factory=list)
    """Each call that returned a result (with None) or failed (with its error, or its refusal's
    reason): refused as invalid, or ended in an error or a timeout."""

    def see(self, event: ToolFinishedEvent | ToolCallInvalidEvent) -> None:
        if isinstance(event, ToolCallInvalidEvent):
            self.outcomes.append((event.name or "", event.reason))
        elif event.status == "ok":
            self.outcomes.append((event.name, None))
        elif event.status != "cancelled":  # a call stopped with its run: no result was due
            self.outcomes.append((event.name, event.error or event.status))

    def doubt(
        self, answer: str | None, *, ending: Collection[str] = (), needed: Collection[str] = ()
    ) -> AnswerDoubt | None:
        """Why `answer` is not taken for one, or None.

        :param answer: the answer's text; None for a typed output (validated, so neither a call
            nor an error message): only whether it rests on a result is judged
        :param ending: the tools whose call ends the run or asks the user (a `finish`): their
            calls give the answer, not results for it to rest on, and are not counted
        :param needed: the tools an answer must rest on (a strategy's `answer_needs`): with
            none of their calls successful, the answer is in doubt whatever else succeeded
        """
        if answer is not None and holds_tool_call(answer):
            return "raw_tool_call"
        results = [error for name, error in self.outcomes if name not in ending]
        ok = [i for i, error in enumerate(results) if error is None]
        if answer is not None:
            flat = _flat(answer)
            last_failures = results[ok[-1] + 1 :] if ok else results
            if any(error is not None and _repeats(flat, error) for error in last_failures):
                return "tool_error"
        if needed and not any(n in needed and e is None for n, e in self.outcomes):
            return "tools_failed"
        if results and not ok:
            return "tools_failed"
        return None
