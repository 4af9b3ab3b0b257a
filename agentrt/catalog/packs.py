"""The tool catalog: the tools a workspace offers, discovered from its tool packs.

A tool pack is a Python file in the workspace's `tools/` folder; every `Tool` at its module
level (usually made with `@tool`) joins the catalog. Packs are loaded by path, not imported
as a package, so a workspace needs no installation.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from agentrt.catalog.builtins import builtin_tools
from agentrt.exceptions import WorkspaceError
from agentrt.tool import Tool

__all__ = ["ToolCatalog", "load_tool_packs"]


class ToolCatalog(Mapping[str, Tool]):
    """Tools by name. The built-in tools (`agentrt.catalog.builtins`) are always present."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = dict(builtin_tools())
        for t in tools:
            if t.name in self._tools and self._tools[t.name] is not t:
                msg = f"two tools are named {t.name!r}: {self._tools[t.name].fn!r} and {t.fn!r}"
                raise WorkspaceError(msg)
            self._tools[t.name] = t

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)


def load_tool_packs(folder: Path) -> list[Tool]:
    """Import every `*.py` in `folder` (skipping `_`-prefixed files) and collect its tools."""
    found: dict[str, tuple[Tool, Path]] = {}
    # A name unique to the folder keeps two workspaces' packs of the same file name apart.
    prefix = "agentrt_pack_" + hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:10]
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        module_name = f"{prefix}_{path.stem}"
        module = sys.modules.get(module_name)
        if module is None:
            spec = importlib.util.spec_from_file_location(module_name, path)
            if spec is None or spec.loader is None:
                msg = f"{path}: cannot be loaded as a Python module"
                raise WorkspaceError(msg)
            module = importlib.util.module_from_spec(spec)
            # Registered before it runs, as an import would be: dataclasses and pickle look
            # the module up while it executes.
            sys.modules[module_name] = module
            try:
                spec.loader.exec_module(module)
            except Exception as exc:
                del sys.modules[module_name]
                msg = f"{path}: tool pack failed to import: {type(exc).__name__}: {exc}"
                raise WorkspaceError(msg) from exc
        for value in vars(module).values():
            if not isinstance(value, Tool):
                continue
            if value.name in found and found[value.name][0] is not value:
                msg = f"tool {value.name!r} is defined in both {found[value.name][1]} and {path}"
                raise WorkspaceError(msg)
            found[value.name] = (value, path)
    return [t for t, _ in found.values()]
