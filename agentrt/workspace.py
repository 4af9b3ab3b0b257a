"""A workspace: the data an agent runs on — strategies, tool packs, prompts.

    my-workspace/
        strategies/*.yaml    one file per query type (see `agentrt.strategy`)
        strategies/templates/*.yaml   plan templates of the `pipeline` planner
        tools/*.py           tool packs (see `agentrt.catalog.packs`)
        registry/            tool metadata and the capability map (see `agentrt.catalog.metadata`);
                             pipeline.yaml, the `pipeline` planner's vocabulary
        prompts/*.j2         jinja2 templates: the engine's prompts and strategy instructions
        contexts.yaml        (optional) knowledge bases (see `agentrt.contexts`)
        mcp.yaml             (optional) MCP servers whose tools join the catalog once the agent
                             starts them (see `agentrt.mcp.config`)

The default workspace is the one this repository ships (inside the wheel once installed). A
user's workspace may leave out `prompts/` entries: the default's are used for any it lacks.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrt.catalog.metadata import (
    CapabilityMap,
    Registry,
    ToolMetadata,
    derive_metadata,
    load_registry,
)
from agentrt.catalog.packs import ToolCatalog, load_tool_packs
from agentrt.contexts import KnowledgeConfig, load_knowledge_config
from agentrt.exceptions import UserError, WorkspaceError
from agentrt.mcp.config import MCPServer, load_mcp_servers
from agentrt.strategy import (
    PipelineStrategy,
    PipelineVocabulary,
    ReactStrategy,
    Strategy,
    Template,
    VmStrategy,
    load_strategies,
    load_templates,
    load_vocabulary,
)
from agentrt.tool import Tool

if TYPE_CHECKING:
    import jinja2

__all__ = ["Workspace", "default_workspace_path"]

_PACKAGE = Path(__file__).resolve().parent

_CODE_INSTRUCTIONS = "<instructions>"
"""The template name of instructions given in code (`Workspace.from_code`)."""

_SERVED_ALL = 16
"""A code-first agent offers its MCP servers' tools all when they are at most this many..."""
_SERVED_RETRIEVED = 8
"""...else this many of them: those retrieved for the query (a prompt listing hundreds of
tools is long, and a model picks worse among them)."""


def default_workspace_path() -> Path:
    """Where the default workspace is: inside the installed package, or the repository root."""
    installed = _PACKAGE / "_workspace"
    return installed if installed.is_dir() else _PACKAGE.parent


class Workspace:
    """Loads and checks a workspace folder. Errors name the file and the field at fault."""

    def __init__(self, root: str | Path | None = None, *, tools: Iterable[Tool] = ()) -> None:
        """
        :param root: the workspace folder; None takes the default workspace
        :param tools: tools given in code, beside the folder's tool packs: every strategy
            offers them, their metadata derived from their signatures and docstrings
        """
        root = Path(root).resolve() if root is not None else default_workspace_path()
        if not root.is_dir():
            msg = f"workspace {root} is not a folder"
            raise WorkspaceError(msg)
        strategies_dir = root / "strategies"
        if not strategies_dir.is_dir():
            msg = f"workspace {root} has no strategies/ folder"
            raise WorkspaceError(msg)
        strategies = load_strategies(strategies_dir)
        if not strategies:
            msg = f"{strategies_dir}: no strategy files (*.yaml)"
            raise WorkspaceError(msg)
        templates_dir = strategies_dir / "templates"
        tools_dir = root / "tools"
        code_tools = list(tools)
        catalog = ToolCatalog(
            [*(load_tool_packs(tools_dir) if tools_dir.is_dir() else ()), *code_tools]
        )
        vocabulary = root / "registry" / "pipeline.yaml"
        self._assemble(
            root,
            strategies,
            load_templates(templates_dir) if templates_dir.is_dir() else {},
            catalog,
            load_registry(root / "registry", catalog, derived=code_tools),
            code_tools,
            pipeline=load_vocabulary(vocabulary) if vocabulary.is_file() else None,
        )

    @classmethod
    def from_code(
        cls, tools: Iterable[Tool] = (), instructions: str | None = None, *, min_fit: float = 0.0
    ) -> Workspace:
        """A workspace held in memory, no folder: `tools`, and one `react` strategy (`agent`)
        offering them all, with `instructions` (a jinja2 template: it may use `tools`), or
        none when retrieval's fit for the query is below `min_fit` (see `ReactStrategy`)."""
        import jinja2

        code_tools = list(tools)
        catalog = ToolCatalog(code_tools)
        loader = jinja2.DictLoader({_CODE_INSTRUCTIONS: instructions}) if instructions else None
        strategy = ReactStrategy(
            name="agent",
            description="Every query.",
            step_budget=10,
            instructions=_CODE_INSTRUCTIONS if instructions else "agent.j2",
            min_fit=min_fit,
        )
        workspace = cls.__new__(cls)
        workspace._assemble(
            None,
            {strategy.name: strategy},
            {},
            catalog,
            # A workspace held in memory declares no capabilities: its tools are offered, not
            # planned.
            Registry(
                {t.name: derive_metadata(t) for t in code_tools},
                CapabilityMap(version=1, capabilities={}, core=[], requirements={}),
            ),
            code_tools,
            loader=loader,
        )
        return workspace

    def with_tools(self, tools: Iterable[Tool]) -> Workspace:
        """This workspace folder loaded again with `tools` added to those given in code.

        :raises UserError: the workspace is held in memory: give its tools to `from_code`
        """
        if self.root is None:
            msg = "a workspace held in memory takes its tools in Workspace.from_code(tools=...)"
            raise UserError(msg)
        return Workspace(self.root, tools=[*(self.tools[n] for n in self.code_tools), *tools])

    def with_served_tools(
        self, servers: Mapping[str, Sequence[Tool]], metadata: Sequence[ToolMetadata]
    ) -> Workspace:
        """This workspace with the tools of MCP servers (server name → its tools) in its
        catalog, retrieval finding them by `metadata`. A folder's strategies offer them through
        `retrieve:` (or `tools: all`); a code-first agent's strategy offers them all when they
        are at most 16, else the 8 retrieved for the query, beside its own tools.

        :raises WorkspaceError: a tool's name is taken
        """
        tools = [t for served in servers.values() for t in served]
        workspace = copy.copy(self)
        workspace.__dict__.pop("fingerprint", None)
        base = [self.tools[n] for n in self.tools if n not in self.served_tools]
        workspace.tools = ToolCatalog([*base, *tools])
        described = {n: m for n, m in self.registry.tools.items() if n not in self.served_tools}
        workspace.registry = Registry(
            {**described, **{m.name: m for m in metadata}},
            self.registry.capabilities,
            self.registry.cues,
        )
        workspace.served = {
            server: {t.name: t.schema_hash for t in served} for server, served in servers.items()
        }
        if self.root is None and len(tools) > _SERVED_ALL:
            (only,) = self.strategies.values()
            narrowed = only.model_copy(
                update={
                    "tools": [],
                    "retrieve": _SERVED_RETRIEVED,
                    "max_tools": len(self.code_tools) + _SERVED_RETRIEVED,
                }
            )
            workspace.strategies = {only.name: narrowed}
        return workspace

    @property
    def served_tools(self) -> list[str]:
        """The names of the tools of MCP servers."""
        return [name for tools in self.served.values() for name in tools]

    def _assemble(
        self,
        root: Path | None,
        strategies: dict[str, Strategy],
        templates: dict[str, Template],
        tools: ToolCatalog,
        registry: Registry,
        code_tools: list[Tool],
        *,
        pipeline: PipelineVocabulary | None = None,
        loader: jinja2.BaseLoader | None = None,
    ) -> None:
        """Keep the workspace's parts and check them against each other."""
        import jinja2

        self.root = root
        """The workspace folder; None for one held in memory (`from_code`)."""
        self.strategies = strategies
        self.templates = templates
        self.tools = tools
        self.code_tools = [t.name for t in code_tools]
        """The tools given in code: every strategy offers them."""
        self.served: dict[str, dict[str, str]] = {}
        """The tools of MCP servers (`with_served_tools`): server name → tool name → schema
        hash, as a trajectory's header records them."""
        self.mcp_servers: list[MCPServer] = load_mcp_servers(root) if root else []
        """The MCP servers `mcp.yaml` declares: an agent starts them."""
        self.registry = registry
        self.pipeline = pipeline
        """The `pipeline` planner's vocabulary, if the workspace has one."""
        for capability in self.registry.capabilities.core:
            if not self.registry.tools_with(capability):
                msg = (
                    f"{self._path('registry', 'capabilities.yaml')}: core capability "
                    f"{capability!r} is not provided by any tool of the workspace"
                )
                raise WorkspaceError(msg)
        folders = [default_workspace_path() / "prompts"]
        if root is not None:
            folders.insert(0, root / "prompts")
        loaders: list[jinja2.BaseLoader] = [
            jinja2.FileSystemLoader([str(d) for d in folders if d.is_dir()])
        ]
        self.prompts: jinja2.Environment = jinja2.Environment(
            loader=jinja2.ChoiceLoader([loader, *loaders] if loader else loaders),
            undefined=jinja2.StrictUndefined,
            keep_trailing_newline=True,
            autoescape=False,  # prompts are plain text for a model, not HTML
        )
        # jinja2's own `tojson` escapes <, > and & for HTML; a model should see plain JSON.
        self.prompts.filters["json"] = functools.partial(json.dumps, ensure_ascii=False)
        self.knowledge: KnowledgeConfig | None = load_knowledge_config(root) if root else None
        """The contexts (knowledge bases) the workspace declares in `contexts.yaml`, if any."""
        # Every prompt may list them: the classifier suggests among them, instructions name them.
        self.prompts.globals["contexts"] = self.knowledge.contexts if self.knowledge else []
        self._check_strategies()
        self._check_templates()

    def _path(self, *parts: str) -> str:
        """Where a part of the workspace is, for an error message."""
        return str(Path(self.root, *parts)) if self.root is not None else "/".join(parts)

    def _check_strategies(self) -> None:
        import jinja2

        for s in self.strategies.values():
            path = self._path("strategies", f"{s.name}.yaml")
            safety = [] if isinstance(s, PipelineStrategy) else s.safety
            builtins = s.vm.builtins if isinstance(s, VmStrategy) else []
            after = {} if isinstance(s, PipelineStrategy) else s.after
            needs = [] if isinstance(s, PipelineStrategy) else s.answer_needs
            requested = [] if isinstance(s, PipelineStrategy) else list(s.on_request)
            first = [c.tool for c in s.first_calls] if isinstance(s, ReactStrategy) else []
            for field, names in (
                ("tools", [] if s.tools == "all" else s.tools),
                ("safety", safety),
                ("vm.builtins", builtins),
                ("after", [*after, *(t for needed in after.values() for t in needed)]),
                ("answer_needs", needs),
                ("on_request", requested),
                ("first_calls", first),
            ):
                missing = [t for t in names if t not in self.tools]
                if missing:
                    msg = (
                        f"{path}: field '{field}': no tool named "
                        f"{', '.join(map(repr, missing))} in the workspace "
                        f"(it has: {', '.join(self.tools)})"
                    )
                    raise WorkspaceError(msg)
            unoffered = [t for t in first if s.tools != "all" and t not in s.tools]
            if unoffered:
                msg = (
                    f"{path}: field 'first_calls': {', '.join(map(repr, unoffered))} is not "
                    "among the strategy's tools"
                )
                raise WorkspaceError(msg)
            if not isinstance(s, PipelineStrategy) and s.retrieve and s.tools == "all":
                msg = f"{path}: field 'retrieve': with tools: all, every tool is offered already"
                raise WorkspaceError(msg)
            try:
                self.prompts.get_template(s.instructions)
            except jinja2.TemplateNotFound:
                msg = f"{path}: field 'instructions': no prompt file {s.instructions!r} in prompts/"
                raise WorkspaceError(msg) from None
            except jinja2.TemplateSyntaxError as exc:
                msg = f"{path}: field 'instructions': {s.instructions}:{exc.lineno}: {exc.message}"
                raise WorkspaceError(msg) from None

    def _check_templates(self) -> None:
        for t in self.templates.values():
            path = self._path("strategies", "templates", f"{t.name}.yaml")
            missing = [n for n in t.tools if n not in self.tools]
            if missing:
                msg = f"{path}: field 'tools': no tool named {', '.join(map(repr, missing))}"
                raise WorkspaceError(msg)
            for i, step in enumerate(t.steps):
                if step.tool not in t.tools:
                    msg = (
                        f"{path}: field 'steps.{i}.tool': {step.tool!r} is not one of the "
                        f"template's tools ({', '.join(t.tools)})"
                    )
                    raise WorkspaceError(msg)
        self._check_vocabulary()
        for s in self.strategies.values():
            if s.planner == "pipeline" and s.pipeline.fallback_template not in self.templates:
                path = self._path("strategies", f"{s.name}.yaml")
                msg = (
                    f"{path}: field 'pipeline.fallback_template': no template "
                    f"{s.pipeline.fallback_template!r} in strategies/templates/"
                )
                raise WorkspaceError(msg)

    def _check_vocabulary(self) -> None:
        path = self._path("registry", "pipeline.yaml")
        if self.pipeline is None:
            users = [s.name for s in self.strategies.values() if s.planner == "pipeline"]
            if users:
                msg = f"{path}: missing; the pipeline strategy {users[0]!r} needs its vocabulary"
                raise WorkspaceError(msg)
            return
        for field, names in (
            ("dataset.tool", [self.pipeline.dataset.tool]),
            ("safety", self.pipeline.safety),
        ):
            missing = [n for n in names if n not in self.tools]
            if missing:
                msg = f"{path}: field '{field}': no tool named {', '.join(map(repr, missing))}"
                raise WorkspaceError(msg)

    def render(self, template: str, **variables: Any) -> str:
        """Render a prompt template; a missing variable is an error, not an empty string."""
        return self.prompts.get_template(template).render(**variables)

    @cached_property
    def fingerprint(self) -> str:
        """A hash of the strategy files and tool schemas, recorded in every trajectory."""
        h = hashlib.sha256()
        for s in self.strategies.values():
            h.update(s.model_dump_json().encode())
            h.update(self.prompts.loader.get_source(self.prompts, s.instructions)[0].encode())  # type: ignore[union-attr]
        for t in self.tools.values():
            h.update(t.schema_hash.encode())
        h.update(self.registry.fingerprint.encode())
        return h.hexdigest()[:16]
