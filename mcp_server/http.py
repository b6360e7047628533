"""Streamable HTTP at /mcp/: stateless, JSON answers, behind the caller's DRF token or OAuth access token.

Every request is authenticated before the SDK sees it: no token or a wrong
one answers 401 with REST's message (and so no tool list) and, for OAuth
clients, the URL of the resource's metadata (oauth/). The caller rides
in the ASGI scope to the tool handlers. The Host header is checked against
Django's ``ALLOWED_HOSTS``, as Django checks it for the rest of the site, and
an ``Origin`` header against ``THREADMEM_MCP_ALLOWED_ORIGINS`` (the MCP
specification's defence against DNS rebinding: a page a browser loaded from
elsewhere sends its own origin). Only POST is served: stateless, the server
has no stream to offer a GET (the specification allows 405), and the SDK's
GET stream never ended.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from mcp_server.auth import Unauthenticated, token_from_header, user_for_token
from mcp_server.server import build_server
from oauth.resource import MCP_PATH, base_url, mcp_resource, resource_metadata_url
from oauth.tokens import TokenRefused, access_token_user

Scope = dict[str, Any]
USER_KEY = "threadmem.user"


def _user_of(ctx: ServerRequestContext[Any]) -> AbstractBaseUser:
    # Set by MCPHTTPApp for every request that reaches the SDK.
    return ctx.request.scope[USER_KEY]


def _authenticate(header: str | None, resource: str) -> AbstractBaseUser:
    """The caller: the owner of an API token, else of an OAuth access token issued for ``resource``."""
    close_old_connections()
    try:
        key = token_from_header(header)
        try:
            return user_for_token(key)
        except Unauthenticated as not_api_token:
            try:
                user = access_token_user(key, resource=resource)
            except TokenRefused as err:
                raise Unauthenticated(err.message) from None
            if user is None:
                raise not_api_token from None
            return user
    finally:
        close_old_connections()


def _base_url(scope: Scope) -> str:
    scheme = scope.get("scheme", "http")
    # Behind a proxy that ends TLS, as Django reads it (THREADMEM_PROXY_SSL_HEADER).
    if getattr(settings, "SECURE_PROXY_SSL_HEADER", None) and _header(scope, b"x-forwarded-proto") == "https":
        scheme = "https"
    return base_url(scheme, _header(scope, b"host") or "")


def _challenge(base: str, path: str, *, token_sent: bool) -> bytes:
    """RFC 9728 §5.1: the 401 points the client at the resource's metadata, which names the authorization server."""
    # The resource as the client spelled its URL, /mcp or /mcp/: the metadata names it back exactly.
    metadata = resource_metadata_url(base, path if path == MCP_PATH.rstrip("/") else MCP_PATH)
    error = ', error="invalid_token"' if token_sent else ""
    return f'Bearer realm="threadmem", resource_metadata="{metadata}"{error}'.encode("latin-1")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


async def _answer(send: Any, status: int, detail: str, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


def origin_allowed(origin: str, allowed: list[str]) -> bool:
    """Whether ``origin`` is one of ``allowed``: exact, or ``scheme://host:*`` for any port of that host.

    The same patterns as the SDK's ``TransportSecuritySettings.allowed_origins``.
    """
    origin = origin.lower()
    for pattern in allowed:
        pattern = pattern.lower()
        if origin == pattern:
            return True
        if pattern.endswith(":*"):
            port = origin.removeprefix(pattern[:-1])
            if port != origin and port.isascii() and port.isdigit():
                return True
    return False


class MCPHTTPApp:
    """The ASGI app for /mcp/. ``running()`` must wrap its life (the ASGI lifespan does)."""

    def __init__(self) -> None:
        self.server = build_server(user_of=_user_of)
        self.manager = StreamableHTTPSessionManager(
            app=self.server,
            stateless=True,
            json_response=True,
            # Host and Origin are checked below, before the token is looked up, and answered in JSON like the
            # rest of the site; the SDK's own check would need its own list of hosts and answers plain text.
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        domain, _ = split_domain_port(_header(scope, b"host") or "")
        allowed = settings.ALLOWED_HOSTS or ([".localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else [])
        if not domain or not validate_host(domain, allowed):
            await _answer(send, 400, "the Host header is not one of ALLOWED_HOSTS")
            return
        origin = _header(scope, b"origin")
        if origin is not None and not origin_allowed(origin, settings.THREADMEM_MCP_ALLOWED_ORIGINS):
            await _answer(send, 403, f"the Origin {origin!r} is not one of THREADMEM_MCP_ALLOWED_ORIGINS")
            return
        if scope["method"] != "POST":
            await _answer(send, 405, "the MCP endpoint is stateless: send JSON-RPC with POST", ((b"allow", b"POST"),))
            return
        base = _base_url(scope)
        authorization = _header(scope, b"authorization")
        try:
            user = await sync_to_async(_authenticate, thread_sensitive=False)(authorization, mcp_resource(base))
        except Unauthenticated as err:
            sent = bool(authorization and authorization.strip())
            challenge = _challenge(base, scope.get("path", ""), token_sent=sent)
            await _answer(send, 401, err.message, ((b"www-authenticate", challenge),))
            return
        scope[USER_KEY] = user
        await self.manager.handle_request(scope, receive, send)
