"""A run's events as UI protocols' frames: AG-UI and the Vercel AI SDK's UI message stream.

`agentrt serve` streams a run in either with `?protocol=ag-ui` or `?protocol=vercel` (SSE), a
live run or a recorded one, resumed after `Last-Event-ID` like its own stream; and `POST /ag-ui`
takes the `RunAgentInput` a stock AG-UI `HttpAgent` posts, and streams its run the same way.
The same translators serve an app of your own: feed one a run's events in order, from a live
`agent.run(…)` or from `Trajectory.read(path).events`, and send what it returns.

    translator = VercelTranslator()
    async for event in agent.run(query):
        for line in translator.frames(event):
            yield f"data: {line}\\n\\n"

A translator is the protocol's state and no more (the open message, the open step), so the
same events always give the same frames, whatever the transport.
"""

from __future__ import annotations

from typing import Literal, Protocol

from agentrt.events import Event
from agentrt.server.protocols.ag_ui import AgUiTranslator
from agentrt.server.protocols.vercel import VercelTranslator

__all__ = ["AgUiTranslator", "Translator", "UiProtocol", "VercelTranslator", "translator"]

UiProtocol = Literal["ag-ui", "vercel"]
"""The UI protocols a run can be streamed in, besides agentrt's own events."""


class Translator(Protocol):
    def frames(self, event: Event) -> list[str]:
        """The SSE `data:` lines `event` becomes, in order (none for some events)."""
        ...


def translator(protocol: UiProtocol) -> Translator:
    """A new translator for one run in `protocol`."""
    return AgUiTranslator() if protocol == "ag-ui" else VercelTranslator()
