"""Adapters that put the guard in front of an MCP framework whose ASGI app the author never
holds (it is built and served inside the framework): one module per framework."""
