"""The MCP tools: the tools' declarations (threadmem.features.tools) with MCP's names, hints and output schemas.

The input schemas come from the same declaration as the OpenAI function schemas agent turns
send, so an argument declared there reaches MCP clients with no change here. MCP spells
some arguments its own way (contract §10: ``messageId``); they are renamed to the declared
names on the way in, and back in the messages of refused calls.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from threadmem.features.search.answers import AUDIT_READ_SCHEMA, SEARCH_RESULT_SCHEMA
from threadmem.features.tools import REQUESTS, MessageContextReadRequest, SearchMemoryRequest, ToolRequest, tool_answer
from threadmem.models import ToolCall

DECLARED: dict[str, type[ToolRequest]] = {request.name: request for request in REQUESTS}
# MCP's spelling of an argument -> the declared one, per tool.
MCP_NAMES: dict[str, dict[str, str]] = {
    name: {spec.mcp_name: key for key, spec in request.args().items() if spec.mcp_name}
    for name, request in DECLARED.items()
}

# Every tool only reads stored history: nothing changes, the same call answers the same, no outside world.
READ_ONLY_HINTS: dict[str, bool] = {
    "read_only_hint": True,
    "destructive_hint": False,
    "idempotent_hint": True,
    "open_world_hint": False,
}


def _mcp_tool(request: type[ToolRequest], *, title: str, output_schema: dict[str, Any] | None) -> types.Tool:
    """A declared tool as an MCP tool: its name and description, MCP's argument names, a title, read-only hints."""
    return types.Tool(
        name=request.name,
        title=title,
        description=request.description,
        input_schema=request.parameters(mcp=True),
        output_schema=output_schema,
        annotations=types.ToolAnnotations(title=title, **READ_ONLY_HINTS),
    )


def tools() -> list[types.Tool]:
    """The tools, in a fixed order: search first, then the read that expands its windows.

    Their ``outputSchema`` only with ``THREADMEM_MCP_STRUCTURED_CONTENT``:
    a client that reads ``structuredContent`` instead of the text (Claude
    Code 2.1) would hand the model every window twice.
    """
    structured = settings.THREADMEM_MCP_STRUCTURED_CONTENT
    return [
        _mcp_tool(
            SearchMemoryRequest, title="Search memory", output_schema=SEARCH_RESULT_SCHEMA if structured else None
        ),
        _mcp_tool(
            MessageContextReadRequest,
            title="Read a stored message",
            output_schema=AUDIT_READ_SCHEMA if structured else None,
        ),
    ]


def _tool_arguments(name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
    arguments = dict(arguments or {})
    for mcp_name, declared in MCP_NAMES.get(name, {}).items():
        if mcp_name in arguments and declared not in arguments:
            arguments[declared] = arguments.pop(mcp_name)
    return arguments


def _mcp_names(text: str) -> str:
    """A refused call's message and field with MCP's spellings (of any tool's arguments)."""
    for names in MCP_NAMES.values():
        for mcp_name, declared in names.items():
            text = text.replace(declared, mcp_name)
    return text


def call_tool(*, name: str, arguments: dict[str, Any] | None, user: AbstractBaseUser) -> types.CallToolResult:
    """One MCP tool call (sync: it runs the domain). Refused calls answer ``isError`` with REST's message."""
    answer = tool_answer(name=name, arguments=_tool_arguments(name, arguments), user=user, surface=ToolCall.Surface.MCP)
    structured = settings.THREADMEM_MCP_STRUCTURED_CONTENT
    if answer.is_error:
        data = answer.data()
        detail = _mcp_names(data["detail"])
        data = {**data, "detail": detail, **({"field": _mcp_names(data["field"])} if "field" in data else {})}
        return types.CallToolResult(
            content=[types.TextContent(text=detail)], structured_content=data if structured else None, is_error=True
        )
    # Without structuredContent every client hands the model the text: at most THREAD_SEARCH_MAX_CHARS.
    return types.CallToolResult(
        content=[types.TextContent(text=answer.text)], structured_content=answer.data() if structured else None
    )
