import anyio

from agentrt import tool


@tool
async def sleep_ms(ms: int, node: str) -> str:
    """Wait, then say which node waited.

    Args:
        ms: How long, in milliseconds.
        node: The plan node (keeps every call distinct).
    """
    await anyio.sleep(ms / 1000)
    return node
