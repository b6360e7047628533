"""`threadmem mcp` with THREADMEM_URL: a stdio MCP server that forwards to a threadmem server's `/mcp/`.

A stdio client (Claude Code's plugin, Claude Desktop) starts it in the project it works in, which an HTTP MCP
server never learns: the bridge lists the server's tools, saying in ``search_memory``'s ``project`` argument that
``"."`` is this project, and replaces a ``"."`` by the working directory's git root (or the directory itself). A
search that names no project is the server's as it is: every project, as the tool says. No Django here: it starts
in the time Python and the MCP SDK take.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

SEARCH_TOOL = "search_memory"
PROJECT_ARGUMENT = "project"
# What a model passes for "the project I am working in".
THIS_PROJECT = (".", "./")
# A search answers within the server's own deadline; this only bounds a server that stopped answering.
CALL_SECONDS = 120


def project_of(directory: Path) -> str:
    """The git root holding ``directory`` (a `.git` folder, or a worktree's `.git` file), else the directory."""
    directory = directory.resolve()
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return str(candidate)
    return str(directory)


def _takes_project(tool: types.Tool | None) -> bool:
    return (
        tool is not None
        and tool.name == SEARCH_TOOL
        and PROJECT_ARGUMENT in (tool.input_schema or {}).get("properties", {})
    )


def with_project(tool: types.Tool | None, arguments: dict[str, Any] | None, project: str) -> dict[str, Any]:
    """A search's arguments with ``project: "."`` (this project) replaced by the project's path."""
    arguments = dict(arguments or {})
    if _takes_project(tool) and arguments.get(PROJECT_ARGUMENT) in THIS_PROJECT:
        arguments[PROJECT_ARGUMENT] = project
    return arguments


def as_listed(tool: types.Tool, project: str) -> types.Tool:
    """The server's tool, its ``project`` argument saying what ``"."`` stands for here."""
    if not _takes_project(tool):
        return tool
    schema = dict(tool.input_schema)
    properties = dict(schema["properties"])
    described = dict(properties[PROJECT_ARGUMENT])
    described["description"] = (
        f'{described.get("description", "")} Pass "." for the project this session works in ({project}).'
    ).strip()
    properties[PROJECT_ARGUMENT] = described
    schema["properties"] = properties
    return tool.model_copy(update={"input_schema": schema})


async def _bridge(url: str, token: str, project: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=CALL_SECONDS) as http,
        Client(streamable_http_client(f"{url}/mcp/", http_client=http)) as remote,
    ):
        listed = [as_listed(tool, project) for tool in (await remote.list_tools()).tools]
        by_name = {tool.name: tool for tool in listed}

        async def list_tools(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return types.ListToolsResult(tools=listed)

        async def call_tool(
            ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            arguments = with_project(by_name.get(params.name), params.arguments, project)
            return await remote.call_tool(params.name, arguments)

        server = Server(
            "threadmem",
            version="1.0.0",
            title="threadmem memory",
            instructions=remote.instructions,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def bridge(*, url: str, token: str, cwd: Path) -> int:
    """Serve until the client closes standard input; a server that cannot be reached ends it with one line."""
    try:
        anyio.run(_bridge, url.rstrip("/"), token, project_of(cwd))
    except Exception as exc:  # the client shows this line as the server's failure
        reason = " ".join(str(exc).split()) or type(exc).__name__
        sys.stderr.write(f"threadmem mcp: cannot reach {url}/mcp/: {reason}\n")
        return 1
    return 0
