"""The URLs of the authorization server and of the one resource it issues tokens for: the MCP endpoint.

Every URL starts from ``THREADMEM_PUBLIC_URL`` when it is set (behind a
proxy the request's own scheme and host may be the proxy's view, not the
client's), else from the request.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest

MCP_PATH = "/mcp/"
RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"


def base_url(scheme: str, host: str) -> str:
    """The server's public origin, ``scheme://host[:port]``, without a trailing slash."""
    return settings.THREADMEM_PUBLIC_URL or f"{scheme}://{host}"


def base_url_of(request: HttpRequest) -> str:
    return base_url(request.scheme, request.get_host())


def mcp_resource(base: str) -> str:
    """The resource identifier (RFC 8707) tokens are issued for."""
    return base + MCP_PATH


def resource_metadata_url(base: str, path: str = MCP_PATH) -> str:
    """Where the protected-resource metadata (RFC 9728) of the resource at ``path`` is: its path-suffixed form."""
    return base + RESOURCE_METADATA_PATH + path


def same_resource(value: str, resource: str) -> bool:
    """Whether a client's resource indicator names ``resource``: ``…/mcp`` and ``…/mcp/`` are the same endpoint."""
    return isinstance(value, str) and value.rstrip("/") == resource.rstrip("/")
