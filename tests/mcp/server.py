"""A small MCP server for the tests, written with the SDK's `MCPServer`.

    python server.py [--http PORT] [--many N] [--variant] [--exit-at-start] [--pid-file F]

Over stdio by default, over streamable HTTP at `http://127.0.0.1:PORT/mcp` with `--http`.
`--many N` adds N generated tools (domains × actions), `--variant` changes `add`'s schema.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

DOMAINS = [
    "invoice",
    "calendar event",
    "weather forecast",
    "stock quote",
    "flight booking",
    "hotel reservation",
    "support ticket",
    "email message",
    "contact",
    "spreadsheet",
    "git repository",
    "docker container",
    "database table",
    "customer order",
    "playlist",
    "recipe",
    "bank transfer",
    "shipping label",
    "blog post",
    "expense report",
]
ACTIONS = [
    ("create", "Create a new {d}."),
    ("delete", "Delete an existing {d} permanently."),
    ("list", "List every {d} you have."),
    ("search", "Search {d}s by keyword."),
    ("update", "Change the fields of a {d}."),
    ("export", "Export a {d} as a PDF file."),
    ("archive", "Move a {d} to the archive."),
    ("share", "Share a {d} with another person."),
    ("summarize", "Summarize a {d} in a few lines."),
    ("translate", "Translate a {d} into another language."),
]


class Sum(BaseModel):
    total: int


def build(many: int, variant: bool) -> MCPServer:
    server = MCPServer("agentrt-test", log_level="WARNING")

    if variant:

        @server.tool(annotations=ToolAnnotations(read_only_hint=True))
        def add(a: int, b: int, c: int = 0) -> int:
            """Add two (or three) integers."""
            return a + b + c

    else:

        @server.tool(annotations=ToolAnnotations(read_only_hint=True))
        def add(a: int, b: int) -> int:
            """Add two integers.

            Returns their sum.
            """
            return a + b

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool()
    def hang(seconds: float) -> str:
        """Wait, blocking the server, for a number of seconds."""
        time.sleep(seconds)
        return "done"

    inflight = [0, 0]  # calls of `overlap` running now, and the most ever at once

    @server.tool()
    async def overlap(n: int) -> int:
        """Work a moment on `n`; the most calls of this tool ever running at once."""
        inflight[0] += 1
        inflight[1] = max(inflight)
        await anyio.sleep(0.2)  # the work: other calls may start meanwhile, if let in
        inflight[0] -= 1
        return inflight[1]

    @server.tool()
    def header(key: str, ctx: Context) -> str:
        """The value of an HTTP request header (empty over stdio)."""
        request = ctx.request_context.request
        return request.headers.get(key, "") if request is not None else ""

    @server.tool()
    def crash() -> str:
        """End the server's process at once."""
        os._exit(3)

    @server.tool()
    def fail() -> str:
        """Raise an error."""
        raise ValueError("the disk is full")

    @server.tool()
    def bad_sum() -> Sum:
        """A result whose structured content does not match the tool's output schema."""
        return CallToolResult(  # type: ignore[return-value]
            content=[TextContent(type="text", text="oops")], structured_content={"total": "x"}
        )

    @server.tool()
    async def grow(tool: str, ctx: Context) -> str:
        """Add a tool named `tool` and tell the client the tool list changed."""

        def added() -> str:
            return f"I am {tool}"

        server.add_tool(added, name=tool, description=f"The tool {tool}, added at run time.")
        await ctx.session.send_tool_list_changed()
        return "added"

    for domain in DOMAINS[: max(0, many) // len(ACTIONS) + 1]:
        for action, text in ACTIONS:
            if many <= 0:
                break
            many -= 1
            tool_name = f"{domain.replace(' ', '_')}_{action}"

            def generated(item_id: str = "", tool_name: str = tool_name) -> str:
                return f"{tool_name}({item_id})"

            server.add_tool(generated, name=tool_name, description=text.format(d=domain))
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("--many", type=int, default=0)
    parser.add_argument("--variant", action="store_true")
    parser.add_argument("--exit-at-start", action="store_true")
    parser.add_argument("--pid-file", help="write the process id here once started")
    options = parser.parse_args()
    if options.pid_file:
        Path(options.pid_file).write_text(str(os.getpid()))
    if options.exit_at_start:
        print("cannot open the database: no such file", file=sys.stderr)
        sys.exit(2)
    server = build(options.many, options.variant)
    if options.http is None:
        server.run()
        return
    uvicorn.run(
        server.streamable_http_app(), host="127.0.0.1", port=options.http, log_level="error"
    )


if __name__ == "__main__":
    main()
