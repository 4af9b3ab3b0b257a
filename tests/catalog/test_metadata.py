"""The tool registry: metadata as data, checked against the live tools and the capability map."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from agentrt import Workspace, WorkspaceError
from agentrt.catalog.builtins import BUILTINS
from agentrt.catalog.metadata import CapabilityMap
from tests.helpers import TEST_WORKSPACE


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return Path(shutil.copytree(TEST_WORKSPACE, tmp_path / "ws"))


def edit_metadata(ws: Path, change: object) -> Path:
    path = ws / "registry" / "tools" / "testing.yaml"
    entries = yaml.safe_load(path.read_text())
    change(entries)  # type: ignore[operator]
    path.write_text(yaml.safe_dump(entries))
    return path


class TestDefaultWorkspace:
    def test_every_tool_has_metadata(self) -> None:
        w = Workspace()
        assert set(w.registry.tools) == set(w.tools) - set(BUILTINS)

    def test_every_capability_is_mapped(self) -> None:
        """Every capability a tool declares resolves through the versioned map, every
        requirement maps to declared capabilities, and the core set is covered. A new label or
        capability without its map entry fails here (and at load)."""
        w = Workspace()
        caps = w.registry.capabilities
        for meta in w.registry.tools.values():
            for capability in meta.capabilities:
                assert caps.resolve(capability) is not None, (meta.name, capability)
        for requirement, satisfying in caps.requirements.items():
            assert satisfying, requirement
            assert all(c in caps.capabilities for c in satisfying), requirement
        for capability in caps.core:
            assert w.registry.tools_with(capability), capability

    def test_documents_for_retrieval(self) -> None:
        """The compact document embedded per tool: name, description, capabilities, params,
        outputs."""
        meta = Workspace().registry.tools["days_between"]
        assert meta.document() == (
            "days_between: The number of days from one date to another.. "
            "capabilities: date_math. params: start, end. outputs: number. tags: time, calendar"
        )


class TestLoadErrors:
    def test_tool_without_metadata(self, ws: Path) -> None:
        edit_metadata(ws, lambda entries: entries.pop(0))
        with pytest.raises(WorkspaceError, match=r"tool 'echo' \(.*\) has no metadata in .*tools"):
            Workspace(ws)

    def test_metadata_without_tool(self, ws: Path) -> None:
        path = edit_metadata(
            ws,
            lambda entries: entries.append(
                {"name": "teleport", "description": "Go far.", "capabilities": ["search"]}
            ),
        )
        with pytest.raises(WorkspaceError) as info:
            Workspace(ws)
        assert str(info.value) == (
            f"{path}: metadata for 'teleport', but the workspace has no tool of that name"
        )

    def test_param_not_in_the_schema(self, ws: Path) -> None:
        path = edit_metadata(ws, lambda entries: entries[1]["params"].append("c"))
        with pytest.raises(WorkspaceError) as info:
            Workspace(ws)
        assert str(info.value) == (
            f"{path}: 'add' lists param 'c', which tool 'add' does not take (it takes: a, b)"
        )

    def test_unknown_capability(self, ws: Path) -> None:
        path = edit_metadata(ws, lambda entries: entries[0]["capabilities"].append("telepathy"))
        with pytest.raises(WorkspaceError, match=r"'echo' has capability 'telepathy', which "):
            Workspace(ws)
        assert path.exists()

    def test_an_alias_is_accepted(self, ws: Path) -> None:
        """`math` is an alias of `arithmetic` in the test map: metadata may use either."""
        meta = Workspace(ws).registry.tools["add"]
        assert meta.capabilities == ["math"]
        assert Workspace(ws).registry.tools_with("arithmetic") == ["add"]

    def test_metadata_twice(self, ws: Path) -> None:
        (ws / "registry" / "tools" / "more.yaml").write_text(
            "- {name: echo, description: Again., capabilities: [echo]}\n"
        )
        with pytest.raises(
            WorkspaceError, match=r"testing\.yaml: metadata for 'echo' is also in .*more\.yaml"
        ):
            Workspace(ws)

    def test_bad_field(self, ws: Path) -> None:
        path = edit_metadata(ws, lambda entries: entries[0].update(capabilities="arithmetic"))
        with pytest.raises(WorkspaceError) as info:
            Workspace(ws)
        assert str(info.value).startswith(f"{path}: entry 0: field 'capabilities': ")

    def test_uncovered_core_capability(self, ws: Path) -> None:
        caps = ws / "registry" / "capabilities.yaml"
        caps.write_text(
            caps.read_text()
            .replace("core: [arithmetic]", "core: [arithmetic, count, lookup]")
            .replace("  count: count calls\n", "  count: count calls\n  lookup: look up\n")
        )
        with pytest.raises(
            WorkspaceError, match=r"core capability 'lookup' is not provided by any"
        ):
            Workspace(ws)


class TestCapabilityMap:
    def test_everything_it_names_is_declared(self) -> None:
        """A requirement, alias or core entry naming an undeclared capability is refused."""
        with pytest.raises(ValueError, match=r"capability of requirement 'r': 'ghost'"):
            CapabilityMap(
                version=1, capabilities={"a": "A"}, core=[], requirements={"r": ["ghost"]}
            )
        with pytest.raises(ValueError, match=r"alias target 'ghost'"):
            CapabilityMap(
                version=1, capabilities={"a": "A"}, aliases={"b": "ghost"}, core=[], requirements={}
            )

    def test_many_to_many(self) -> None:
        caps = Workspace().registry.capabilities
        assert caps.requirements["analysis.compare"] == ["aggregate", "segment"]
        assert "aggregate" in caps.requirements["group_by"]
        assert caps.resolve("groupby") == "aggregate"
