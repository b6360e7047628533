"""The MCP server (contract §10): threadmem's two memory tools for any MCP client.

A surface beside the REST API and the console: it calls the same domain
functions (through ``threadmem.features.tools``) and imports neither of them.

- ``tools.py``: the tool list (fixed order, annotations, schemas) and one call → ``CallToolResult``.
- ``server.py``: the SDK's low-level ``Server``, handlers that run the sync domain in a worker thread.
- ``auth.py``: a DRF token → the caller, with REST's rules and messages.
- ``http.py``: Streamable HTTP (stateless) behind token auth; ``config/asgi.py`` mounts it at ``/mcp/``.
- ``manage.py mcp``: stdio, the token from ``THREADMEM_TOKEN``.
"""
