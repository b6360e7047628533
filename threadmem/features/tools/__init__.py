"""The two memory tools: each declared once (``requests``, on ``declare``'s machinery), run through ``calls``."""

from __future__ import annotations

from threadmem.features.tools.calls import (
    MESSAGE_CONTEXT_READ,
    MESSAGE_CONTEXT_READ_TOOL,
    SEARCH_MEMORY,
    SEARCH_MEMORY_TOOL,
    TOOL_NAMES,
    TOOLS,
    BadToolCall,
    ToolAnswer,
    run_tool,
    tool_answer,
)
from threadmem.features.tools.declare import Arg, ToolRequest
from threadmem.features.tools.requests import REQUESTS, MessageContextReadRequest, SearchMemoryRequest

__all__ = [
    "MESSAGE_CONTEXT_READ",
    "MESSAGE_CONTEXT_READ_TOOL",
    "REQUESTS",
    "SEARCH_MEMORY",
    "SEARCH_MEMORY_TOOL",
    "TOOLS",
    "TOOL_NAMES",
    "Arg",
    "BadToolCall",
    "MessageContextReadRequest",
    "SearchMemoryRequest",
    "ToolAnswer",
    "ToolRequest",
    "run_tool",
    "tool_answer",
]
