"""The one ASGI app a deployment serves (uvicorn): MCP at /mcp/, Django everywhere else.

Django runs as WSGI under a2wsgi's thread pool, so sync views answer
concurrently (Django's own ASGI handler would run a process's sync views one
at a time). The MCP app is async and runs its tool calls in worker threads.
"""

from __future__ import annotations

import os
from typing import Any

from a2wsgi import WSGIMiddleware
from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

django_application = WSGIMiddleware(get_wsgi_application(), workers=settings.THREADMEM_WSGI_THREADS)

from mcp_server.http import MCPHTTPApp  # noqa: E402  (after Django is set up)
from threadmem.features.embeddings import choice  # noqa: E402
from threadmem.infrastructure.metrics import asgi_counted  # noqa: E402

choice.start_loading()  # MiniLM, when in force, loads beside the first requests (they rank by keyword meanwhile)

mcp_application = MCPHTTPApp()
MCP_PATH = "/mcp"
# Django counts its own requests (threadmem.infrastructure.metrics.request_metrics_middleware); MCP's are counted here.
mcp_counted = asgi_counted(mcp_application, "mcp")


async def _lifespan(receive: Any, send: Any) -> None:
    await receive()  # lifespan.startup
    started = False
    try:
        async with mcp_application.running():
            await send({"type": "lifespan.startup.complete"})
            started = True
            await receive()  # lifespan.shutdown
    except Exception as exc:
        if not started:
            await send({"type": "lifespan.startup.failed", "message": repr(exc)})
        raise
    await send({"type": "lifespan.shutdown.complete"})


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await _lifespan(receive, send)
        return
    path = scope.get("path", "")
    if path == MCP_PATH or path.startswith(MCP_PATH + "/"):
        await mcp_counted(scope, receive, send)
        return
    await django_application(scope, receive, send)
