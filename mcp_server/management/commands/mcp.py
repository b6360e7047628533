"""Serve the MCP tools over stdio: one process per client, as the owner of THREADMEM_TOKEN.

    THREADMEM_TOKEN=<api token> manage.py mcp

The token is checked before anything is served: without a valid one the
command exits at once with a message naming the problem, and no client ever
sees a tool list.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from mcp.server.stdio import stdio_server

from mcp_server.auth import Unauthenticated, user_for_token
from mcp_server.server import build_server

TOKEN_VARIABLE = "THREADMEM_TOKEN"


class Command(BaseCommand):
    help = f"Serve threadmem's memory tools over MCP stdio, as the owner of the API token in ${TOKEN_VARIABLE}."

    def handle(self, *args: Any, **options: Any) -> None:
        key = os.environ.get(TOKEN_VARIABLE, "")
        if not key.strip():
            raise CommandError(
                f"{TOKEN_VARIABLE} is not set: pass your threadmem API token in it "
                "(manage.py drf_create_token USERNAME makes one)"
            )
        try:
            user = user_for_token(key)
        except Unauthenticated as err:
            raise CommandError(f"{TOKEN_VARIABLE} was refused: {err.message}") from None
        finally:
            connections.close_all()
        server = build_server(user_of=lambda ctx: user)

        async def serve() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(serve)
