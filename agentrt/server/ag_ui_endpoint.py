"""Internal. What `POST /ag-ui` makes of an AG-UI `RunAgentInput`: the run to start.

`@ag-ui/client`'s `HttpAgent` (and CopilotKit on it) posts the whole thread each time; agentrt
runs a question in a session. So:

    threadId         the session (created when new)
    runId            the run's id (it must be one a file can be named by, and new)
    messages         the last is the user's question; the earlier ones seed a new session
                     (its user questions and the assistant's last reply to each), and are
                     ignored once the session has messages of its own: the server's session
                     holds the tool calls and results the client may have dropped
    forwardedProps   {"strategy": …} skips classification, as on POST /runs; other keys are
                     the application's own and ignored
    tools, context,  refused when not empty: agentrt runs its tools on the server and has no
    resume           way to call a client's, take ambient context, or be resumed from an
                     interrupt (it never sends one); a client that sent them would be
                     silently misled
    state            ignored: agentrt's state is the typed output it streams, the server's to
                     write (HttpAgent sends back the last snapshot it was given)
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ag_ui.core import AssistantMessage, RunAgentInput, TextPart, UserMessage

from agentrt.models.base import Message
from agentrt.server.schemas import ID_PATTERN

__all__ = ["AgUiRun", "InputError", "read_input"]

MAX_QUERY = 20_000
"""The longest question, as on `POST /runs`."""

_ID = re.compile(ID_PATTERN)


class InputError(ValueError):
    """A `RunAgentInput` agentrt cannot run: where (as a request validation `loc`) and why."""

    def __init__(self, loc: tuple[str | int, ...], msg: str) -> None:
        super().__init__(msg)
        self.loc = ("body", *loc)
        self.msg = msg


@dataclass(frozen=True, slots=True)
class AgUiRun:
    """The run a `RunAgentInput` asks for."""

    query: str
    session_id: str
    run_id: str
    strategy: str | None
    history: list[Message]
    """What a new session starts from: the thread's questions and answers before the query."""


def read_input(body: RunAgentInput, strategies: Collection[str]) -> AgUiRun:
    """The run `body` asks for.

    :param strategies: the agent's strategies, which `forwardedProps.strategy` must name
    :raises InputError: the run cannot be started as asked
    """
    for name, value in (("threadId", body.thread_id), ("runId", body.run_id)):
        if not _ID.fullmatch(value):
            msg = (
                f"{value!r} cannot be an agentrt id: 1 to 128 letters, digits and `._:-`, "
                "starting with a letter or digit"
            )
            raise InputError((name,), msg)
    for name, given in (("tools", body.tools), ("context", body.context), ("resume", body.resume)):
        if given:
            raise InputError((name,), _UNSUPPORTED[name])
    if not body.messages:
        raise InputError(("messages",), "no user message: the last message is the question")
    last = len(body.messages) - 1
    asked = body.messages[last]
    if not isinstance(asked, UserMessage):
        msg = f"the last message is the question, a user's; this one's role is {asked.role!r}"
        raise InputError(("messages", last, "role"), msg)
    return AgUiRun(
        query=_query(asked, last),
        session_id=body.thread_id,
        run_id=body.run_id,
        strategy=_strategy(body.forwarded_props, strategies),
        history=_history(body.messages[:last]),
    )


_UNSUPPORTED = {
    "tools": "agentrt runs its own tools, on the server, and cannot call a client's: declare "
    "the tool on the agent instead (this client's tools would never be called)",
    "context": "agentrt takes no ambient context: put it in the question or the agent's "
    "instructions",
    "resume": "agentrt never interrupts a run, so there is nothing to resume",
}


def _query(message: UserMessage, index: int) -> str:
    if not isinstance(message.content, str):
        for part, content in enumerate(message.content):
            if not isinstance(content, TextPart):
                msg = f"agentrt takes text: this part is {content.type!r}"
                raise InputError(("messages", index, "content", part), msg)
    text = _text(message)
    if not text.strip():
        raise InputError(("messages", index, "content"), "the question is empty")
    if len(text) > MAX_QUERY:
        msg = f"the question is {len(text)} characters long; at most {MAX_QUERY}"
        raise InputError(("messages", index, "content"), msg)
    return text


def _strategy(props: object, strategies: Collection[str]) -> str | None:
    strategy = props.get("strategy") if isinstance(props, dict) else None
    if strategy is None:
        return None
    if not isinstance(strategy, str) or strategy not in strategies:
        msg = f"no strategy {strategy!r} (known: {', '.join(strategies)})"
        raise InputError(("forwardedProps", "strategy"), msg)
    return strategy


def _history(messages: Sequence[object]) -> list[Message]:
    """The questions and answers of a thread: each user message, and the last assistant text
    after it. Tool calls and results, reasoning and system messages are left out: their ids
    are the client's, and the model needs the conversation, not calls made again."""
    history: list[Message] = []
    answer: str | None = None
    for message in messages:
        if isinstance(message, UserMessage):
            if answer is not None:
                history.append(Message(role="assistant", content=answer))
                answer = None
            history.append(Message(role="user", content=_text(message)))
        elif isinstance(message, AssistantMessage) and message.content and history:
            answer = message.content
    if answer is not None:
        history.append(Message(role="assistant", content=answer))
    return history


def _text(message: UserMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(p.text for p in message.content if isinstance(p, TextPart))
