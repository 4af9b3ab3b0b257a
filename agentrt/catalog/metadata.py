"""The tool registry: compact metadata for every tool, and the requirement→capability map.

    registry/
        tools/*.yaml         one file per tool pack: a list of ToolMetadata
        capabilities.yaml    CapabilityMap: capabilities, aliases, core set, requirements
        cues.yaml            (optional) words a question must hold for an analysis label

Metadata is data, checked against the live tools when a workspace loads: a tool without
metadata, metadata without a tool, a param the tool does not take, or a capability the map
does not know is an error naming both sides. The metadata is what retrieval embeds and what a
deterministic coverage check reads; it is not what the model sees (that is the tool's schema).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentrt._validation import load_yaml, load_yaml_model
from agentrt.catalog.builtins import BUILTINS
from agentrt.exceptions import WorkspaceError
from agentrt.tool import Tool

__all__ = [
    "CapabilityMap",
    "Registry",
    "ToolMetadata",
    "derive_metadata",
    "load_registry",
    "schema_metadata",
]


class ToolMetadata(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    name: str
    description: str = Field(min_length=1)
    """One or two lines: what it does, in the words a request would use."""
    capabilities: list[str] = []
    """What it can do, in the capability map's vocabulary (or an alias). A tool with none is
    offered and retrieved, but the `pipeline` planner never plans with it."""
    inputs: list[str] = []
    """Data it consumes (a dataframe handle, a document, …)."""
    params: list[str] = []
    """Its key parameters; each must be a parameter of the tool."""
    outputs: list[str] = []
    """What it produces (a table, a chart, a number, …)."""
    tags: list[str] = []

    def document(self) -> str:
        """The compact text embedded for retrieval."""
        parts = [
            f"{self.name}: {self.description}",
        ]
        if self.capabilities:
            parts.append("capabilities: " + ", ".join(self.capabilities))
        if self.params:
            parts.append("params: " + ", ".join(self.params))
        if self.outputs:
            parts.append("outputs: " + ", ".join(self.outputs))
        if self.tags:
            parts.append("tags: " + ", ".join(self.tags))
        return ". ".join(parts)


class CapabilityMap(BaseModel):
    """Which capabilities satisfy which requirement; versioned, many-to-many."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    version: int = Field(ge=1)
    capabilities: dict[str, str]
    """Every capability, with what it means."""
    aliases: dict[str, str] = {}
    """Other names for capabilities (old or common ones), each to a capability."""
    core: list[str]
    """The minimal set a workspace should always cover, so planning never has nothing."""
    requirements: dict[str, list[str]]
    """Requirement label → the capabilities any one of which satisfies it."""

    @model_validator(mode="after")
    def _closed(self) -> CapabilityMap:
        unknown = [
            f"{where} {name!r}"
            for where, names in (
                ("alias target", self.aliases.values()),
                ("core capability", self.core),
                *((f"capability of requirement {r!r}:", c) for r, c in self.requirements.items()),
            )
            for name in names
            if name not in self.capabilities
        ]
        if unknown:
            msg = f"not declared under 'capabilities': {'; '.join(unknown)}"
            raise ValueError(msg)
        return self

    def resolve(self, capability: str) -> str | None:
        """The capability a name stands for (itself, or the alias's target); None if unknown."""
        if capability in self.capabilities:
            return capability
        return self.aliases.get(capability)


class Registry:
    """The metadata of a workspace's tools and its capability map, checked against each other."""

    def __init__(
        self,
        tools: Mapping[str, ToolMetadata],
        capabilities: CapabilityMap,
        cues: Mapping[str, list[str]] | None = None,
    ) -> None:
        self.tools = dict(tools)
        self.capabilities = capabilities
        self.cues = dict(cues or {})
        """Analysis label → words a question must hold for the label to be read into it."""
        self.fingerprint = hashlib.sha256(
            "".join(self.tools[n].model_dump_json() for n in sorted(self.tools)).encode()
            + capabilities.model_dump_json().encode()
        ).hexdigest()[:16]
        """Changes whenever any metadata or the map changes."""

    def tools_with(self, capability: str) -> list[str]:
        """Tools declaring `capability` (or an alias of it)."""
        return [
            name
            for name, meta in self.tools.items()
            if any(self.capabilities.resolve(c) == capability for c in meta.capabilities)
        ]

    def serves(self, tool: str, requirement: str) -> bool:
        """Whether `tool` has a capability that satisfies the requirement label (False for an
        unknown tool or label)."""
        meta = self.tools.get(tool)
        wanted = self.capabilities.requirements.get(requirement)
        if meta is None or wanted is None:
            return False
        return any(self.capabilities.resolve(c) in wanted for c in meta.capabilities)


def derive_metadata(tool: Tool) -> ToolMetadata:
    """Metadata read from the tool itself: its description's first paragraph, its parameters
    (for tools given in code, which have no registry entry)."""
    return ToolMetadata(
        name=tool.name,
        description=_summary(tool.description),
        params=list(tool.args_model.model_fields),
    )


def schema_metadata(name: str, description: str, parameters: Mapping[str, Any]) -> ToolMetadata:
    """Metadata read from a tool known by its schema alone (an MCP server's, a function-calling
    spec's): its description's first paragraph, its parameters' names as the JSON schema of
    its arguments (`parameters`) spells them."""
    return ToolMetadata(
        name=name,
        description=_summary(description),
        params=list(parameters.get("properties", {})),
    )


def _summary(description: str) -> str:
    """What retrieval reads of a description: its first paragraph."""
    return description.split("\n\n", 1)[0]


def load_registry(
    folder: Path, tools: Mapping[str, Tool], derived: Iterable[Tool] = ()
) -> Registry:
    """Load `folder` (a workspace's `registry/`) and check it against the live `tools`.

    The engine's built-in tools need no metadata, nor do the `derived` tools (given in code):
    theirs is read from them unless the folder has an entry.
    """
    capabilities = load_yaml_model(folder / "capabilities.yaml", CapabilityMap)
    metadata = _load_packs(folder / "tools")
    for tool in derived:
        metadata.setdefault(tool.name, (derive_metadata(tool), folder / "tools"))
    for name, tool in tools.items():
        if name not in BUILTINS and name not in metadata:
            msg = (
                f"tool {name!r} ({tool.fn.__module__}) has no metadata in {folder / 'tools'}: "
                f"add an entry with its description, capabilities and params"
            )
            raise WorkspaceError(msg)
    for name, (meta, path) in metadata.items():
        _check_entry(meta, path, tools.get(name), capabilities, folder)
    cues = _load_cues(folder, capabilities)
    metadata_only = {name: meta for name, (meta, _) in metadata.items()}
    return Registry(metadata_only, capabilities, cues)


def _load_packs(folder: Path) -> dict[str, tuple[ToolMetadata, Path]]:
    """Every tool's metadata in `folder/*.yaml`, with the file it is in."""
    metadata: dict[str, tuple[ToolMetadata, Path]] = {}
    for path in sorted(folder.glob("*.yaml")):
        entries = load_yaml(path)
        if not isinstance(entries, list):
            msg = f"{path}: expected a list of tool metadata, got {type(entries).__name__}"
            raise WorkspaceError(msg)
        for i, entry in enumerate(entries):
            meta = load_yaml_model(path, ToolMetadata, data=entry, where=f"entry {i}")
            if meta.name in metadata:
                msg = f"{path}: metadata for {meta.name!r} is also in {metadata[meta.name][1]}"
                raise WorkspaceError(msg)
            metadata[meta.name] = (meta, path)
    return metadata


def _check_entry(
    meta: ToolMetadata,
    path: Path,
    live: Tool | None,
    capabilities: CapabilityMap,
    folder: Path,
) -> None:
    """`meta` (from `path`) describes `live`, the tool of its name, in declared capabilities."""
    name = meta.name
    if live is None:
        msg = f"{path}: metadata for {name!r}, but the workspace has no tool of that name"
        raise WorkspaceError(msg)
    schema_params = set(live.args_model.model_fields)
    for param in meta.params:
        if param not in schema_params:
            msg = (
                f"{path}: {name!r} lists param {param!r}, which tool {name!r} does not "
                f"take (it takes: {', '.join(sorted(schema_params)) or 'nothing'})"
            )
            raise WorkspaceError(msg)
    for capability in meta.capabilities:
        if capabilities.resolve(capability) is None:
            msg = (
                f"{path}: {name!r} has capability {capability!r}, which "
                f"{folder / 'capabilities.yaml'} does not declare (nor as an alias)"
            )
            raise WorkspaceError(msg)


def _load_cues(folder: Path, capabilities: CapabilityMap) -> dict[str, list[str]]:
    """`folder/cues.yaml` (optional): per analysis label, lower-cased words."""
    cues_file = folder / "cues.yaml"
    if not cues_file.is_file():
        return {}
    loaded = load_yaml(cues_file)
    if not isinstance(loaded, dict) or not all(
        isinstance(v, list) and all(isinstance(w, str) for w in v) for v in loaded.values()
    ):
        msg = f"{cues_file}: expected a mapping of analysis label → list of words"
        raise WorkspaceError(msg)
    cues = {str(k): [w.lower() for w in v] for k, v in loaded.items()}
    for label in cues:
        if f"analysis.{label}" not in capabilities.requirements:
            msg = (
                f"{cues_file}: cues for {label!r}, but {folder / 'capabilities.yaml'} "
                f"has no requirement 'analysis.{label}'"
            )
            raise WorkspaceError(msg)
    return cues
