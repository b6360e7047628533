"""The one dispatcher every runtime (agent turns, MCP, tests) calls the memory tools through."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from threadmem.errors import DomainError, InvalidInput
from threadmem.features.search import AuditRead, SearchResult, message_context_read, search_memory
from threadmem.features.search.answers import audit_read_data, search_result_data
from threadmem.features.search.log import LoggedCall
from threadmem.features.tools.declare import ToolRequest
from threadmem.features.tools.requests import MessageContextReadRequest, SearchMemoryRequest
from threadmem.infrastructure import replicas

SEARCH_MEMORY = SearchMemoryRequest.name
MESSAGE_CONTEXT_READ = MessageContextReadRequest.name
SEARCH_MEMORY_TOOL: dict[str, Any] = SearchMemoryRequest.function()
MESSAGE_CONTEXT_READ_TOOL: dict[str, Any] = MessageContextReadRequest.function()
TOOLS: list[dict[str, Any]] = [SEARCH_MEMORY_TOOL, MESSAGE_CONTEXT_READ_TOOL]
TOOL_NAMES = (SEARCH_MEMORY, MESSAGE_CONTEXT_READ)


class BadToolCall(InvalidInput):
    """A call refused by run_tool itself, before a tool ran (the tools log their own refusals)."""


def _parse_arguments(arguments: dict[str, Any] | str | None) -> dict[str, Any]:
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise BadToolCall(f"arguments are not valid JSON: {exc.msg}") from None
    if not isinstance(arguments, dict):
        raise BadToolCall("arguments must be a JSON object")
    return arguments


def _request(request: type[ToolRequest], arguments: dict[str, Any]) -> Any:
    return request.from_call(
        arguments,
        unknown_message="unknown arguments: {unknown}; allowed: {allowed}",
        unknown_field=None,
        error=BadToolCall,
        integer=_integer,
    )


def _integer(value: Any, name: str) -> int:
    """The model may send an integer as a JSON string; accept it, refuse anything else."""
    if isinstance(value, bool):
        raise BadToolCall(f"{name} must be an integer", field=name)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value.strip())
    raise BadToolCall(f"{name} must be an integer", field=name)


def _run_search(
    arguments: dict[str, Any], *, user: AbstractBaseUser, default_channel: str | None, surface: str
) -> SearchResult:
    request = _request(SearchMemoryRequest, arguments)
    if request.channel is None:
        request = replace(request, channel=default_channel)
    return search_memory(user=user, **request.keywords(), surface=surface)


def _run_read(arguments: dict[str, Any], *, user: AbstractBaseUser, surface: str) -> AuditRead:
    request = _request(MessageContextReadRequest, arguments)
    return message_context_read(user=user, **request.keywords(), surface=surface)


@dataclass(frozen=True)
class ToolAnswer:
    """One memory-tool call's answer: the text the model reads and, beside it, the REST JSON."""

    text: str  # what the model reads; for a refused call, the message REST answers with
    result: SearchResult | AuditRead | None = None
    is_error: bool = False
    field: str | None = None  # a refused call: the argument at fault, as REST names it

    @property
    def model_text(self) -> str:
        """What a model reads: the answer, or for a refused call ``error: `` and the message."""
        return f"error: {self.text}" if self.is_error else self.text

    def data(self) -> dict[str, Any]:
        """The JSON REST answers with: the result, or ``{"detail", "field"?}`` for a refused call.

        A method, not a field: the audit read's JSON names the channel, one more
        query a caller that only wants the text (the agent-turn loop) never pays.
        """
        if isinstance(self.result, SearchResult):
            return search_result_data(self.result)
        if isinstance(self.result, AuditRead):
            return audit_read_data(self.result)
        return {"detail": self.text, **({"field": self.field} if self.field else {})}


def tool_answer(
    *,
    name: str,
    arguments: dict[str, Any] | str | None,
    user: AbstractBaseUser,
    default_channel: str | None = None,
    surface: str,
) -> ToolAnswer:
    """Run a memory tool and return its answer; bad calls answer ``is_error`` instead of raising.

    Every call of a known tool is logged, the refused ones with their status
    code. ``channel`` omitted (or null) means ``default_channel``, the thread the
    model works in when the runtime has one, else the global scope; ``"*"`` is
    always global.
    """
    if name not in TOOL_NAMES:
        return ToolAnswer(text=f"unknown tool {name!r}; the memory tools are {', '.join(TOOL_NAMES)}", is_error=True)
    parsed: dict[str, Any] | None = None
    try:
        parsed = _parse_arguments(arguments)
        if name == SEARCH_MEMORY:
            result = replicas.read(
                lambda: _run_search(parsed, user=user, default_channel=default_channel, surface=surface), user.pk
            )
            return ToolAnswer(text=result.text, result=result)
        read = replicas.read(lambda: _run_read(parsed, user=user, surface=surface), user.pk)
        return ToolAnswer(text=read.text, result=read)
    except BadToolCall as err:
        refused = LoggedCall(
            tool=name,
            user=user,
            surface=surface,
            arguments=parsed if parsed is not None else {"raw": arguments if isinstance(arguments, str) else ""},
        )
        # Refused before a tool ran: no time worth measuring.
        refused.log(chars_returned=len(err.message) + len("error: "), status_code=err.status_code, latency_ms=0.0)
        return ToolAnswer(text=err.message, is_error=True, field=err.field)
    except DomainError as err:
        return ToolAnswer(text=err.message, is_error=True, field=err.field)


def run_tool(**call: Any) -> str:
    """Run a memory tool for a model (``tool_answer``'s keyword arguments) and return the text it reads.

    Bad calls do not raise: the model gets one line naming the problem
    (``error: ...``) and can correct itself (see ``tool_answer``).
    """
    return tool_answer(**call).model_text
