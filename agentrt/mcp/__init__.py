"""MCP: agentrt as an MCP server (`agentrt.mcp.server`)."""
