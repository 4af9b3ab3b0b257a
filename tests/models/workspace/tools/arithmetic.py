"""The one tool of the real-model tests' workspace: a short prompt keeps a CPU model fast."""

from agentrt import tool


@tool
async def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b
