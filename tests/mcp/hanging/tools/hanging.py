"""Tools named as the demo model calls them, which never return: a run stays in progress until
it is cancelled."""

import anyio

from agentrt import tool


@tool
async def days_between(start: str, end: str) -> int:
    """Days from one date to another.

    Args:
        start: The first date.
        end: The second date.
    """
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


@tool
async def calculate(expression: str) -> float:
    """Evaluate an arithmetic expression.

    Args:
        expression: The expression.
    """
    await anyio.sleep_forever()
    raise AssertionError("unreachable")
