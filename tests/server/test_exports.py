"""`agentrt.server` exports what its `__all__` says, no more, no less."""

from __future__ import annotations

import agentrt.server


def test_all_is_what_is_exported() -> None:
    public = {n for n in dir(agentrt.server) if not n.startswith("_")}
    # Submodules appear as attributes once imported; they are not re-exports.
    modules = {n for n in public if type(getattr(agentrt.server, n)).__name__ == "module"}
    assert public - modules == set(agentrt.server.__all__)
