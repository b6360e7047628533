"""The tool-call log: one ToolCall row for every memory-tool call the service answers.

Refused calls (bad input, unknown ids) are logged too, with their status
code: an operator reading the log sees what the model tried, not only what
worked.
"""

from __future__ import annotations

import time
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from threadmem.errors import DomainError
from threadmem.models import ToolCall

# A refused call may carry a huge argument; the log keeps a readable prefix.
LOGGED_ARGUMENT_MAX_CHARS = 2_000


def _loggable(value: Any) -> Any:
    if isinstance(value, str):
        # PostgreSQL's jsonb cannot hold NUL; the log shows where it was.
        value = value.replace("\x00", "\\u0000")
        if len(value) > LOGGED_ARGUMENT_MAX_CHARS:
            value = value[:LOGGED_ARGUMENT_MAX_CHARS] + "…[truncated]"
        return value
    if isinstance(value, int | float | bool) or value is None:
        return value
    return _loggable(repr(value))


def tool_call_log(
    *,
    tool: str,
    user: AbstractBaseUser | None,
    surface: str,
    arguments: dict[str, Any],
    thread_id: int | None = None,
    hits_total: int = 0,
    hits_shown: int = 0,
    chars_returned: int = 0,
    truncated: bool = False,
    latency_ms: float = 0.0,
    status_code: int = 200,
) -> ToolCall:
    if surface not in ToolCall.Surface.values:
        raise ValueError(f"unknown surface {surface!r}; one of {', '.join(ToolCall.Surface.values)}")
    caller = user if user is not None and user.is_authenticated else None
    return ToolCall.objects.create(
        tool=tool,
        caller=caller,
        surface=surface,
        thread_id=thread_id,
        arguments={key: _loggable(value) for key, value in arguments.items()},
        hits_total=hits_total,
        hits_shown=hits_shown,
        chars_returned=chars_returned,
        truncated=truncated,
        latency_ms=round(latency_ms, 3),
        status_code=status_code,
    )


def tool_call_refused(
    *,
    tool: str,
    user: AbstractBaseUser | None,
    surface: str,
    arguments: dict[str, Any],
    thread_id: int | None,
    started: float,
    error: DomainError,
) -> ToolCall:
    """Log a call answered with an error: the error text is what came back."""
    return tool_call_log(
        tool=tool,
        user=user,
        surface=surface,
        arguments=arguments,
        thread_id=thread_id,
        chars_returned=len(error.message),
        latency_ms=(time.perf_counter() - started) * 1000,
        status_code=error.status_code,
    )
