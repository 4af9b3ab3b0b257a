from agentrt import tool


@tool
async def noop(i: int) -> int:
    """Do nothing and return the argument.

    Args:
        i: Any integer.
    """
    return i
