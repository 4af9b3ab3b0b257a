"""Internal. The tools one run offers: those narrowed for it, and its session's.

It is a mapping of tool name → `Tool`, like the workspace's catalog, but it can grow during the
run: a tool may create a session tool (see `agentrt.sessions.store`), kept in the session for its
later runs. The new tool is offered from the next turn on and announced by a fresh
`tools_narrowed` event; `version` changes, so planners know to show the model the new list.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from agentrt.events import NarrowedTool, ToolsNarrowedEvent
from agentrt.exceptions import ToolDefinitionError, ToolError
from agentrt.run import RunContext
from agentrt.sessions.store import Session, SessionTool
from agentrt.tool import Tool

__all__ = ["Toolbox"]


class Toolbox(Mapping[str, Tool]):
    """
    :param ctx: the run, to announce changes to
    :param workspace: every tool of the workspace (session tools are built on these)
    :param offered: the narrowed set, each with its source and score
    :param session: where new session tools are kept; None keeps them for this run only
    :param fit: retrieval's fit for the query, announced with the tools (`tools_narrowed`)
    :param no_fit: the fit was below the strategy's `min_fit`
    """

    def __init__(
        self,
        ctx: RunContext,
        workspace: Mapping[str, Tool],
        offered: list[NarrowedTool],
        session: Session | None,
        *,
        fit: float | None = None,
        no_fit: bool = False,
    ) -> None:
        self.ctx = ctx
        self.fit, self.no_fit = fit, no_fit
        self.workspace = workspace
        self.session = session
        self.offered = list(offered)
        self._tools = {t.name: workspace[t.name] for t in offered}
        self._specs: dict[str, SessionTool] = {}
        """The session tools offered (the session's and this run's), by name."""
        self.version = 0
        if session is not None:
            for spec in session.tools.values():
                try:
                    self._add(spec)
                except ToolError as exc:
                    # The workspace changed since the tool was made: the session goes on without.
                    ctx.log.warning("session tool dropped", tool=spec.name, reason=str(exc))
        self._announce()

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def add_session_tool(self, spec: SessionTool) -> None:
        """Offer `spec` from the next turn on, and keep it in the session.

        :raises ToolError: the base tool does not exist, the name is taken, or the fixed
            arguments do not fit the base tool (the calling tool's model sees the message)
        """
        if spec.name in self._tools and spec.name not in self._specs:
            msg = f"cannot add session tool {spec.name!r}: a tool of that name exists"
            raise ToolError(msg)
        if self._specs.get(spec.name) == spec:
            return  # offered already (two parallel searches may offer the same page)
        self._add(spec)
        if self.session is not None:
            self.session.tools[spec.name] = spec
        self._announce()

    def _announce(self) -> None:
        self.ctx.emit(ToolsNarrowedEvent, tools=self.offered, fit=self.fit, no_fit=self.no_fit)

    def _add(self, spec: SessionTool) -> None:
        base = self.workspace.get(spec.base)
        if base is None:
            msg = f"cannot add session tool {spec.name!r}: there is no tool {spec.base!r}"
            raise ToolError(msg)
        try:
            tool = base.bind(spec.name, spec.description, spec.bind)
        except ToolDefinitionError as exc:
            msg = f"cannot add session tool {spec.name!r}: {exc}"
            raise ToolError(msg) from None
        if spec.name not in self._tools:
            self.offered.append(NarrowedTool(name=spec.name, source="session"))
        self._tools[spec.name] = tool
        self._specs[spec.name] = spec
        self.version += 1
