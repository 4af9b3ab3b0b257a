"""MCP, the Model Context Protocol, on the official `mcp` SDK (the `mcp` extra).

    config.py    MCPServer: a server declared in code or in a workspace's `mcp.yaml`
    client.py    MCP servers' tools as agentrt tools (MCPConnection, MCPTools)
    server.py    agentrt as an MCP server (`agentrt mcp`, `/mcp` on `agentrt serve`)

This file imports nothing: the engine imports `client` and `config`, and `server` imports the
agent, so it must not be loaded with them.
"""
