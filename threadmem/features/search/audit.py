"""message_context_read: one message as stored, paged (contract §3).

Every caller reads as a model would (the read is model-facing for everyone,
operators included): exactly the messages search may show it; any other id,
an isolated message's too, answers NotFound, the same as an id that does not
exist. An operator's path to isolated content is the console's own message
view, not this read. The text is at most ``AUDIT_READ_MAX_CHARS``
characters: the message's metadata, its tool calls (an assistant's calls name
the messageIds of their results; a result names its call), and a page of
content from ``offset``, followed by ``next offset: <n>`` when more remains.

Tool-call arguments are shown as JSON up to ``TOOL_CALLS_MAX_CHARS``; content
is what pages (tool results, the large fields, live there). A longer argument
is still reachable: search_memory windows every argument leaf by its path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from threadmem.domain.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.domain.selectors import message_get_for
from threadmem.errors import InvalidInput
from threadmem.features.search.answer_caps import AUDIT_READ_MAX_CHARS, TAIL_MARK
from threadmem.features.search.hit_entries import one_line
from threadmem.features.search.log import logged_call
from threadmem.features.search.shared_sql import searchable_sql
from threadmem.models import Message, ToolCall

TOOL_CALLS_MAX_CHARS = 4_000
VIEWS = ("audit",)
HEADER = "[message_context_read] messageId={id} view=audit"


@dataclass
class AuditRead:
    message: Message
    content: str  # the page of content from ``offset``
    text: str  # exactly what the model reads
    offset: int
    next_offset: int | None
    result_message_ids: list[int] = field(default_factory=list)  # an assistant's tool calls -> their results
    call_message_id: int | None = None  # a tool result -> the message holding its call
    call_tool: str | None = None  # a tool result -> its call's tool name
    calls: list[dict[str, Any]] = field(default_factory=list)  # an assistant's calls: id, tool, their results


def _check_view(view: Any) -> str:
    if view not in VIEWS:
        raise InvalidInput(f"view must be one of: {', '.join(VIEWS)}", field="view")
    return view


def _check_offset(offset: Any) -> int:
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidInput("offset must be a non-negative integer", field="offset")
    return offset


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _result_ids(message: Message) -> dict[str, list[int]]:
    """Tool-call id -> ids of the tool results answering it, in thread order."""
    call_ids = [call.get("id") for call in message.tool_calls if call.get("id")]
    if not call_ids:
        return {}
    results = Message.objects.filter(
        thread_id=message.thread_id, role=Message.Role.TOOL, tool_call_id__in=call_ids
    ).searchable()
    by_call: dict[str, list[int]] = {}
    for result_id, call_id in results.order_by("seq").values_list("id", "tool_call_id"):
        by_call.setdefault(call_id, []).append(result_id)
    return by_call


def _call_of(message: Message) -> tuple[int | None, str | None]:
    """(id, tool name) of the assistant message in the same thread whose tool calls include this result's call."""
    if message.role != Message.Role.TOOL or not message.tool_call_id:
        return None, None
    if connection.vendor == "postgresql":
        holds_call = "m.tool_calls @> CAST(%s AS jsonb)"
        call_param: Any = json.dumps([{"id": message.tool_call_id}])
    else:
        holds_call = "EXISTS (SELECT 1 FROM json_each(m.tool_calls) j WHERE json_extract(j.value, '$.id') = %s)"
        call_param = message.tool_call_id
    searchable, params = searchable_sql("m")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.id, m.tool_calls FROM threadmem_message m WHERE m.thread_id = %s AND m.role = %s "
            f"AND {holds_call} AND {searchable} ORDER BY m.seq DESC LIMIT 1",
            [message.thread_id, Message.Role.ASSISTANT, call_param, *params],
        )
        row = cursor.fetchone()
    if not row:
        return None, None
    call_message_id, calls = row
    if isinstance(calls, str | bytes):
        calls = json.loads(calls)
    names = [
        call.get("name") for call in calls or () if isinstance(call, dict) and call.get("id") == message.tool_call_id
    ]
    return call_message_id, (names[0] or None) if names else None


def _tool_calls_block(message: Message, results: dict[str, list[int]]) -> str:
    if not message.tool_calls:
        return ""
    lines = ["tool calls:"]
    for call in message.tool_calls:
        result_ids = results.get(call.get("id") or "", [])
        named = ", ".join(f"messageId={result_id}" for result_id in result_ids) or "none stored"
        lines.append(f"- id={one_line(call.get('id') or '-')} name={one_line(call.get('name') or '')} results: {named}")
        lines.append(f"  arguments: {json.dumps(call.get('arguments', {}), ensure_ascii=False)}")
    block = "\n".join(lines)
    if len(block) > TOOL_CALLS_MAX_CHARS:
        block = block[: TOOL_CALLS_MAX_CHARS - len(TAIL_MARK)] + TAIL_MARK
    return block


def _page(message: Message, *, prefix: str, offset: int) -> tuple[str, str, int | None]:
    """``(text, page, next_offset)`` with the text at most AUDIT_READ_MAX_CHARS characters."""
    content = message.content
    total = len(content)
    # Reserve the two lines around the page at their longest, then fill the rest.
    longest = len(f"content (characters {total} to {total} of {total}):") + len(f"next offset: {total}")
    room = AUDIT_READ_MAX_CHARS - len(prefix) - longest - 3  # three newlines
    page = content[offset : offset + max(room, 0)]
    end = offset + len(page)
    next_offset = end if end < total else None
    text = f"{prefix}\ncontent (characters {offset} to {end} of {total}):\n{page}"
    if next_offset is not None:
        text += f"\nnext offset: {next_offset}"
    return text, page, next_offset


def message_context_read(
    *,
    user: AbstractBaseUser,
    message_id: Any,
    view: str = "audit",
    offset: int = 0,
    surface: str = "api",
) -> AuditRead:
    arguments = {"message_id": message_id, "view": view, "offset": offset}
    with logged_call(tool=ToolCall.Tool.MESSAGE_CONTEXT_READ, user=user, surface=surface, arguments=arguments) as call:
        _check_view(view)
        offset = _check_offset(offset)
        message = message_get_for(user=user, message_id=message_id, model_facing=True)
        call.thread_id = message.thread_id
        if offset > len(message.content):
            raise InvalidInput(
                f"offset {offset} is past the end of the content ({len(message.content)} characters)", field="offset"
            )
        results = _result_ids(message)
        call_message_id, call_tool = _call_of(message)
        lines = [
            HEADER.format(id=message.id),
            f"channel: {one_line(message.thread.channel)} · sessionId: {one_line(message.session_id) or '-'} · "
            f"generation: {message.generation} · seq: {message.seq} · role: {message.role} · kind: {message.kind}",
            f"created: {message.created_at.isoformat()} · flags: model_visible={_flag(message.model_visible)} "
            f"isolated={_flag(message.isolated)} superseded_by={message.superseded_by_id or '-'} "
            f"thread_isolated={_flag(message.thread.isolated)}",
        ]
        block = _tool_calls_block(message, results)
        if block:
            lines.append(block)
        if message.role == Message.Role.TOOL and message.tool_call_id:
            holder = f"messageId={call_message_id}" if call_message_id else "not stored in this thread"
            tool = f" tool={one_line(call_tool)}" if call_tool else ""
            lines.append(f"result of tool call: id={one_line(message.tool_call_id)}{tool} in {holder}")
        text, page, next_offset = _page(message, prefix="\n".join(lines), offset=offset)
    call.log(hits_total=1, hits_shown=1, chars_returned=len(text), truncated=next_offset is not None)
    return AuditRead(
        message=message,
        content=page,
        text=text,
        offset=offset,
        next_offset=next_offset,
        result_message_ids=[result_id for ids in results.values() for result_id in ids],
        call_message_id=call_message_id,
        call_tool=call_tool,
        calls=[
            {
                "id": call.get("id") or "",
                "tool": call.get("name") or "",
                "result_message_ids": results.get(call.get("id") or "", []),
            }
            for call in message.tool_calls
            if isinstance(call, dict)
        ],
    )
