"""An MCP server that breaks the protocol on purpose, which no SDK server can be made to do.

python broken_server.py --protocol 2099-01-01   answers `initialize` with that version
python broken_server.py --invalid-result        lists `add`, and answers every call with
                                                a result that is not a `CallToolResult`
"""

from __future__ import annotations

import argparse
import json
import sys

TOOL = {
    "name": "add",
    "description": "Add two integers.",
    "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}},
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--protocol", default="2025-11-25")
    parser.add_argument("--invalid-result", action="store_true")
    parser.add_argument("--silent", action="store_true")
    options = parser.parse_args()
    results = {
        "initialize": {
            "protocolVersion": options.protocol,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "broken", "version": "0"},
        },
        "tools/list": {"tools": [TOOL]},
        "tools/call": {"content": "not a list of content blocks", "isError": "maybe"},
    }
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or options.silent:
            continue  # a notification, or a server that hangs
        result = results.get(message["method"], {})
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
