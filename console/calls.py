"""Tool calls and their results as the console pages show them, matched by ``tool_call_id``.

A call's result is the nearest tool message after it with its id; a result's
call is the assistant message before it whose ``tool_calls`` hold the id.
Arguments too large to show are described from the ToolArgument rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import reduce
from operator import or_
from typing import Any

from django.db.models import Case, CharField, Q, TextField, Value, When
from django.db.models.functions import Cast, Length, Substr

from threadmem.models import Message, Thread, ToolArgument

# Tool-call arguments larger than this are summarised on the thread page
# (name, id, size per argument) instead of pretty-printed; the audit page
# shows them whole.
TOOL_ARGS_INLINE_CHARS = 20_000


@dataclass
class CallView:
    """One tool call as the console shows it."""

    call_id: str
    name: str
    arguments: Any = None  # the parsed arguments, when small enough to show inline
    argument_chars: int = 0
    argument_leaves: list[dict[str, Any]] = field(default_factory=list)  # for large arguments
    result_id: int | None = None
    result_chars: int | None = None
    pretty_head: str = ""  # the audit page's pretty-printed arguments, cut at CONTENT_PAGE_CHARS
    pretty_chars: int = 0

    @property
    def pretty_arguments(self) -> str:
        return json.dumps(self.arguments, indent=2, ensure_ascii=False)

    @property
    def inline_arguments(self) -> str:
        """``{"command": "ls -la"}`` on one line, cut for the collapsed row."""
        if self.arguments is None:
            return f"{self.argument_chars:,} chars"
        text = json.dumps(self.arguments, ensure_ascii=False)
        return text if len(text) <= 160 else text[:159] + "…"


def attach_tool_calls(*, thread: Thread, messages: list[Message], lookahead: int | None = None) -> None:
    """Give each assistant message ``calls``: its tool calls, each with the size of its result.

    Small arguments are read whole (one query for the page); large ones are
    described from the ToolArgument rows (name, path and size of each string
    leaf) so a 2 MB ``write_file`` never lands on the thread page. Results are
    matched by ``tool_call_id``: the nearest tool message after the call.
    """
    with_calls = [m for m in messages if m.tool_calls_chars and m.tool_calls_chars > 2]
    for message in messages:
        message.calls = []
    if not with_calls:
        return
    small = [m.id for m in with_calls if m.tool_calls_chars <= TOOL_ARGS_INLINE_CHARS]
    large = [m.id for m in with_calls if m.tool_calls_chars > TOOL_ARGS_INLINE_CHARS]
    whole = dict(Message.objects.filter(id__in=small).values_list("id", "tool_calls")) if small else {}
    leaves: dict[int, dict[int, CallView]] = {}
    if large:
        argument_rows = (
            ToolArgument.objects.filter(message_id__in=large)
            .annotate(chars=Length("value"), head=Substr("value", 1, 200))
            .values("message_id", "call_index", "tool_call_id", "tool_name", "path", "chars", "head")
            .order_by("message_id", "call_index", "id")
        )
        for row in argument_rows:
            calls = leaves.setdefault(row["message_id"], {})
            call = calls.setdefault(row["call_index"], CallView(call_id=row["tool_call_id"], name=row["tool_name"]))
            call.argument_chars += row["chars"]
            call.argument_leaves.append({"path": row["path"], "chars": row["chars"], "head": row["head"]})
    for message in with_calls:
        if message.id in whole:
            message.calls = [
                CallView(
                    call_id=call.get("id", ""),
                    name=call.get("name", ""),
                    arguments=call.get("arguments", {}),
                    argument_chars=len(json.dumps(call.get("arguments", {}), ensure_ascii=False)),
                )
                for call in whole[message.id]
            ]
        else:
            message.calls = [leaves[message.id][i] for i in sorted(leaves.get(message.id, {}))]
    attach_results(thread=thread, messages=with_calls, lookahead=lookahead)


def attach_results(*, thread: Thread, messages: list[Message], lookahead: int | None = None) -> None:
    call_ids = {call.call_id for m in messages for call in m.calls if call.call_id}
    if not call_ids:
        return
    first_seq = min(m.seq for m in messages)
    window = Q(seq__lte=max(m.seq for m in messages) + lookahead) if lookahead is not None else Q()
    results = list(
        Message.objects.filter(
            window, thread=thread, role=Message.Role.TOOL, tool_call_id__in=call_ids, seq__gt=first_seq
        )
        .annotate(chars=Length("content"))
        .values_list("id", "seq", "tool_call_id", "chars")
        .order_by("seq")
    )
    for message in messages:
        for call in message.calls:
            match = next((r for r in results if r[2] == call.call_id and r[1] > message.seq), None)
            if match is not None:
                call.result_id, call.result_chars = match[0], match[3]


def attach_calls_of_results(*, thread: Thread, messages: list[Message], lookback: int | None = None) -> None:
    """Give each tool result ``call_message_id`` and ``call_name``: the assistant message that made the call.

    The call is usually on the same page; the ones that are not are found with
    one query matching the id inside the stored ``tool_calls`` JSON text (both
    databases render it as ``"id": "<id>"``).
    """
    known: dict[str, tuple[int, int, str]] = {}  # call id -> (message id, seq, tool name)
    for message in messages:
        for call in getattr(message, "calls", []):
            known.setdefault(call.call_id, (message.id, message.seq, call.name))
    results = [m for m in messages if m.role == Message.Role.TOOL and m.tool_call_id]
    for message in results:
        message.call_message_id = None
        message.call_name = ""
    missing = sorted({m.tool_call_id for m in results if m.tool_call_id not in known})
    if missing:
        last_seq = max(m.seq for m in results)
        window = Q(seq__gte=min(m.seq for m in results) - lookback) if lookback is not None else Q()
        needles = {call_id: f'"id": {json.dumps(call_id, ensure_ascii=False)}' for call_id in missing}
        matched = Case(
            *[When(calls_text__contains=needle, then=Value(call_id)) for call_id, needle in needles.items()],
            default=Value(""),
            output_field=CharField(),
        )
        candidates = (
            Message.objects.filter(window, thread=thread, role=Message.Role.ASSISTANT, seq__lt=last_seq)
            .annotate(calls_text=Cast("tool_calls", TextField()))
            .filter(reduce(or_, [Q(calls_text__contains=needle) for needle in needles.values()]))
            .annotate(matched_call=matched)
            .values_list("id", "seq", "matched_call")
            .order_by("-seq")
        )
        for message_id, seq, call_id in candidates:
            known.setdefault(call_id, (message_id, seq, ""))
    for message in results:
        found = known.get(message.tool_call_id)
        if found is not None and found[1] < message.seq:
            message.call_message_id, _, message.call_name = found
