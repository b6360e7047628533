from __future__ import annotations

from django.apps import AppConfig


class MCPConfig(AppConfig):
    """An app only so that the MCP surface owns its command (``manage.py mcp``)."""

    name = "mcp_server"
    label = "threadmem_mcp"
    verbose_name = "threadmem MCP server"
