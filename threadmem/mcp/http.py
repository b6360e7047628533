"""Streamable HTTP at /mcp/: stateless, JSON answers, behind the caller's DRF token.

Every request is authenticated before the SDK sees it: no token or a wrong
one answers 401 with REST's message (and so no tool list). The caller rides
in the ASGI scope to the tool handlers. The Host header is checked against
Django's ``ALLOWED_HOSTS``, as Django checks it for the rest of the site.
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

from threadmem.mcp.auth import Unauthenticated, token_from_header, user_for_token
from threadmem.mcp.server import build_server

Scope = dict[str, Any]
USER_KEY = "threadmem.user"


def _user_of(ctx: ServerRequestContext[Any]) -> AbstractBaseUser:
    # Set by MCPHTTPApp for every request that reaches the SDK.
    return ctx.request.scope[USER_KEY]


def _authenticate(header: str | None) -> AbstractBaseUser:
    close_old_connections()
    try:
        return user_for_token(token_from_header(header))
    finally:
        close_old_connections()


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


class MCPHTTPApp:
    """The ASGI app for /mcp/. ``running()`` must wrap its life (the ASGI lifespan does)."""

    def __init__(self) -> None:
        self.server = build_server(user_of=_user_of)
        self.manager = StreamableHTTPSessionManager(
            app=self.server,
            stateless=True,
            json_response=True,
            # Host is checked against ALLOWED_HOSTS below, and a DNS-rebinding page has no token to send.
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
        try:
            user = await sync_to_async(_authenticate, thread_sensitive=False)(_header(scope, b"authorization"))
        except Unauthenticated as err:
            await _answer(send, 401, err.message, ((b"www-authenticate", b'Bearer realm="threadmem"'),))
            return
        scope[USER_KEY] = user
        await self.manager.handle_request(scope, receive, send)
