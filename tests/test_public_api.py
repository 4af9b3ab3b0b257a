"""The public API is what `agentrt.__all__` says, no more, no less."""

from __future__ import annotations

import agentrt


def test_all_names_exist() -> None:
    for name in agentrt.__all__:
        assert hasattr(agentrt, name), name


def test_no_public_name_left_out() -> None:
    public = {n for n in dir(agentrt) if not n.startswith("_")}
    # Submodules appear as attributes once imported; they are not re-exports.
    modules = {n for n in public if type(getattr(agentrt, n)).__name__ == "module"}
    assert public - modules == set(agentrt.__all__) - {"__version__"}
