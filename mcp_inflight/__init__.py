"""mcp-inflight: the request lifecycle of MCP servers as one verified state machine."""

__version__ = "0.1.0"
