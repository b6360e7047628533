"""``python -m tests.support.project_server PORT``: an MCP server over Streamable HTTP at ``/mcp/`` whose
``search_memory`` declares a ``project`` argument, as threadmem's does once search takes one; each call answers
the arguments it got and the Authorization header it came with, as JSON text. The bridge's tests start it.
"""

from __future__ import annotations

import contextvars
import json
import sys
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "project": {"type": "string"}},
    "required": ["query"],
}
authorization: contextvars.ContextVar[str] = contextvars.ContextVar("authorization", default="")


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[types.Tool(name="search_memory", input_schema=SCHEMA)])


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    echo = {"arguments": params.arguments, "authorization": authorization.get()}
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(echo))])


server = Server("echo", on_list_tools=list_tools, on_call_tool=call_tool)
manager = StreamableHTTPSessionManager(
    app=server,
    stateless=True,
    json_response=True,
    security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
)


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await receive()
        async with manager.run():
            await send({"type": "lifespan.startup.complete"})
            await receive()
        await send({"type": "lifespan.shutdown.complete"})
        return
    headers = dict(scope.get("headers") or [])
    authorization.set(headers.get(b"authorization", b"").decode())
    await manager.handle_request(scope, receive, send)


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
