"""MCP, the Model Context Protocol, on the official `mcp` SDK (the `mcp` extra).

    config.py    MCPServer: a server declared in code or in a workspace's `mcp.yaml`
    client.py    MCP servers' tools as agentrt tools (MCPConnection, MCPTools)

This file imports nothing: the engine imports `client` and `config`, and a module of this
package that imports the agent must not be loaded with them.
"""
