"""Tools whose behaviour tests can steer: echo, sleep, fail, hang, and a split search."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import anyio

from agentrt import SessionTool, ToolContext, ToolError, tool


@dataclass
class Seen:
    """What the tools saw, for tests to assert on (the `seen` fixture resets it)."""

    threads: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    in_flight: list[str] = field(default_factory=list)
    max_in_flight: int = 0
    counter: int = 0
    scopes: list[object] = field(default_factory=list)
    unstuck: threading.Event = field(default_factory=threading.Event)
    """Set by a test to release `stuck` once it has seen the call time out."""


seen = Seen()


@tool
def echo(text: str) -> str:
    """Return the text unchanged.

    Args:
        text: Anything.
    """
    seen.threads.append(threading.current_thread().name)
    return text


@tool
async def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


@tool
async def nap(seconds: float, label: str = "") -> str:
    """Sleep, then say so. Records how many naps overlap.

    Args:
        seconds: How long.
        label: A name for this nap.
    """
    seen.in_flight.append(label)
    seen.max_in_flight = max(seen.max_in_flight, len(seen.in_flight))
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        seen.cancelled.append(label)
        raise
    finally:
        seen.in_flight.remove(label)
    return f"slept {seconds}"


@tool(timeout=0.2)
async def hang() -> str:
    """Never return (times out after 0.2 s)."""
    await anyio.sleep_forever()
    return "unreachable"


@tool
def fail(message: str) -> str:
    """Raise an error with this message.

    Args:
        message: What to complain about.
    """
    raise ToolError(message)


@tool
def crash() -> str:
    """Raise an unexpected exception."""
    return str(1 / 0)


@tool(split="|")
async def search(query: str) -> str:
    """Search for one query; write several as q1|q2 to run them in parallel.

    Args:
        query: What to look for.
    """
    return f"results for {query}"


@tool(cache=False)
async def counter() -> int:
    """Count calls (never cached)."""
    seen.counter += 1
    return seen.counter


@tool(timeout=0.1)
def stuck(seconds: float) -> str:
    """Block a worker thread until released (times out after 0.1 s).

    Args:
        seconds: How long to block at most, if nothing releases it.
    """
    seen.unstuck.wait(seconds)
    return "woke up"


@tool
async def read_page(item: str, page: int = 1) -> str:
    """Read one page of an item.

    Args:
        item: The item's id.
        page: The page number, from 1.
    """
    return f"{item}, page {page}"


@tool
async def open_item(ctx: ToolContext, item: str) -> str:
    """Open an item: afterwards its pages can be read with read_<item>.

    Args:
        item: The item's id.
    """
    ctx.add_session_tool(
        SessionTool(
            name=f"read_{item}",
            description=f"Read a page of {item}.",
            base="read_page",
            bind={"item": item},
        )
    )
    seen.scopes.append(ctx.scope)
    return f"opened {item} in session {ctx.session_id}"


@tool
async def profile(name: str) -> dict[str, object]:
    """A person's profile, as structured data.

    Args:
        name: The person's name.
    """
    return {"name": name, "city": {"name": f"{name}ville", "population": 1200}, "tags": ["a", "b"]}


@tool
async def vector_search(query: str, top_k: int = 3) -> list[str]:
    """Search documentation passages similar to a query.

    Args:
        query: What to look for.
        top_k: How many passages.
    """
    return [f"passage {i} about {query}" for i in range(1, top_k + 1)]


@tool
async def retrieve_knowledge_graph(query: str) -> dict[str, object]:
    """Entities and relations about a query, from a knowledge graph.

    Args:
        query: What to look for.
    """
    return {"entities": [query, f"{query} component"], "relations": [f"{query} has component"]}


@tool
async def remember(ctx: ToolContext, key: str, value: str) -> str:
    """Keep a value for later calls; write it to a file beside the trajectory too.

    Args:
        key: Its name.
        value: What to keep.
    """
    ctx.artifacts[key] = value
    ctx.output_dir.mkdir(parents=True, exist_ok=True)
    (ctx.output_dir / f"{key}.txt").write_text(value)
    return str(ctx.output_dir)


@tool
async def recall(ctx: ToolContext, key: str) -> str:
    """A value kept earlier.

    Args:
        key: Its name.
    """
    if key not in ctx.artifacts:
        raise ToolError(f"nothing kept as {key!r}")
    return str(ctx.artifacts[key])
