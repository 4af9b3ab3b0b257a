"""The public API is what `agentrt.__all__` says, no more, no less."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path

import pytest

import agentrt


def test_all_names_exist() -> None:
    for name in agentrt.__all__:
        assert hasattr(agentrt, name), name


def test_no_public_name_left_out() -> None:
    public = {n for n in dir(agentrt) if not n.startswith("_")}
    # Submodules appear as attributes once imported; they are not re-exports.
    modules = {n for n in public if type(getattr(agentrt, n)).__name__ == "module"}
    assert public - modules == set(agentrt.__all__) - {"__version__"}


ROOT = Path(__file__).parents[1]


def readme_modules() -> set[str]:
    """The modules the README's "Public API" section lists."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Public API\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`(agentrt(?:\.[a-z]\w*)*)`", section))


def package_modules() -> list[tuple[str, Path]]:
    """Every module of the package, by name, found on disk (importing none of them)."""
    found = [("agentrt", Path(agentrt.__file__))]
    for info in pkgutil.walk_packages(agentrt.__path__, "agentrt.", onerror=lambda _: None):
        spec = importlib.util.find_spec(info.name)
        assert spec is not None
        assert spec.origin is not None
        found.append((info.name, Path(spec.origin)))
    return found


def docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def defines_nothing(path: Path) -> bool:
    """A package whose __init__ is only its docstring: a folder that maps its modules."""
    return path.name == "__init__.py" and len(ast.parse(path.read_text()).body) <= 1


PUBLIC = readme_modules()


def test_the_readme_lists_modules_that_exist() -> None:
    names = {name for name, _ in package_modules()}
    assert PUBLIC
    assert PUBLIC - names == set()


@pytest.mark.parametrize(("name", "path"), package_modules(), ids=lambda v: str(v))
def test_every_module_is_public_or_says_it_is_internal(name: str, path: Path) -> None:
    """A listed module has an `__all__` whose names exist; any other is `_`-prefixed, says
    "Internal" on its docstring's first line, or is a folder that defines nothing."""
    if name in PUBLIC:
        module = importlib.import_module(name)
        assert isinstance(module.__all__, list), name
        assert [n for n in module.__all__ if not hasattr(module, n)] == [], name
        assert not docstring(path).startswith("Internal"), name
    elif not any(part.startswith("_") for part in name.split(".")) and not defines_nothing(path):
        first = docstring(path).splitlines()[0] if docstring(path) else ""
        assert first.startswith("Internal"), f"{name}: neither in the README nor 'Internal …'"


def test_every_public_module_has_a_reference_page() -> None:
    """Each module the README lists is rendered on a page of docs/reference/ (`::: name`)."""
    pages = "".join(
        p.read_text(encoding="utf-8") for p in (ROOT / "docs" / "reference").glob("*.md")
    )
    rendered = set(re.findall(r"^::: (agentrt(?:\.\w+)*)$", pages, re.MULTILINE))
    assert PUBLIC - rendered == set()
