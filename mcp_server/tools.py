"""The MCP tools: threadmem.tools' two schemas with MCP's names, hints and output schemas.

The input schemas are derived from the OpenAI function schemas agent turns
send, so an argument added there (SPEC §9's ``cursor``) reaches MCP clients
with no change here. MCP names the message argument ``messageId`` (SPEC §10);
it is renamed to the tools' ``message_id`` on the way in, and back in the
messages of refused calls.
"""

from __future__ import annotations

import copy
from typing import Any

import mcp_types as types
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from threadmem.models import ToolCall
from threadmem.search.answers import AUDIT_READ_SCHEMA, SEARCH_RESULT_SCHEMA
from threadmem.search.bounded import GLOBAL_CHANNEL
from threadmem.tools import (
    MESSAGE_CONTEXT_READ,
    MESSAGE_CONTEXT_READ_TOOL,
    SEARCH_MEMORY_TOOL,
    tool_answer,
)

MESSAGE_ID = "messageId"
TOOL_MESSAGE_ID = "message_id"

# Every tool only reads stored history: nothing changes, the same call answers the same, no outside world.
READ_ONLY_HINTS: dict[str, bool] = {
    "read_only_hint": True,
    "destructive_hint": False,
    "idempotent_hint": True,
    "open_world_hint": False,
}


def _search_input_schema() -> dict[str, Any]:
    schema = copy.deepcopy(SEARCH_MEMORY_TOOL["function"]["parameters"])
    # An MCP client has no current thread: no channel is the global scope.
    schema["properties"]["channel"]["description"] = (
        "The thread to search (its channel, as a compaction summary's search hint names it). Omit it, or pass "
        f'"{GLOBAL_CHANNEL}", to search every thread you may read (that needs 3+ letters or digits in a row).'
    )
    return schema


def _read_input_schema() -> dict[str, Any]:
    schema = copy.deepcopy(MESSAGE_CONTEXT_READ_TOOL["function"]["parameters"])
    schema["properties"] = {
        (MESSAGE_ID if name == TOOL_MESSAGE_ID else name): spec for name, spec in schema["properties"].items()
    }
    schema["required"] = [MESSAGE_ID if name == TOOL_MESSAGE_ID else name for name in schema["required"]]
    return schema


def _mcp_tool(
    tool: dict[str, Any], *, title: str, input_schema: dict[str, Any], output_schema: dict[str, Any] | None
) -> types.Tool:
    """One of threadmem.tools' function schemas as an MCP tool: its name and description, a title, read-only hints."""
    function = tool["function"]
    return types.Tool(
        name=function["name"],
        title=title,
        description=function["description"],
        input_schema=input_schema,
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
            SEARCH_MEMORY_TOOL,
            title="Search memory",
            input_schema=_search_input_schema(),
            output_schema=SEARCH_RESULT_SCHEMA if structured else None,
        ),
        _mcp_tool(
            MESSAGE_CONTEXT_READ_TOOL,
            title="Read a stored message",
            input_schema=_read_input_schema(),
            output_schema=AUDIT_READ_SCHEMA if structured else None,
        ),
    ]


def _tool_arguments(name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
    arguments = dict(arguments or {})
    if name == MESSAGE_CONTEXT_READ and MESSAGE_ID in arguments and TOOL_MESSAGE_ID not in arguments:
        arguments[TOOL_MESSAGE_ID] = arguments.pop(MESSAGE_ID)
    return arguments


def _mcp_names(text: str) -> str:
    return text.replace(TOOL_MESSAGE_ID, MESSAGE_ID)


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
