"""Sections 1-9 without a model: a deterministic summarizer, so compaction works offline.

It also fills any section a model's answer left out (``summary.py``).
"""

from __future__ import annotations

import json
from collections import Counter

from threadmem.features.compaction import catalogue
from threadmem.features.compaction.sections import (
    GenerationInput,
    call_text,
    clip,
    one_line,
    own_messages,
    split_sections,
)

# Offline summarizer limits: one quoted message, and the user-message list.
QUOTE_CHARS = 600
USER_MESSAGES_MAX_CHARS = 8_000
LISTED_ERRORS = 15
LISTED_FILES = 30


def offline_sections(data: GenerationInput) -> dict[int, str]:
    """Sections 1-9 from the messages alone: first request, user messages, errors seen, last state."""
    previous, messages = own_messages(data)
    previous_sections = split_sections(previous.content) if previous is not None else {}
    users = [m for m in messages if m.role == "user" and m.kind == "message"]
    assistants = [m for m in messages if m.role == "assistant"]
    results = [m for m in messages if m.role == "tool"]
    calls = [(m, call) for m in assistants for call in (m.tool_calls or [])]
    results_by_call = {m.tool_call_id: m for m in results if m.tool_call_id}
    errors = [m for m in results if catalogue.result_is_error(m.content)]
    call_of = {call.get("id"): (m, call) for m, call in calls if call.get("id")}
    resources = catalogue.collect_resources(messages)
    # Positions, not seqs, order events: a fork's inherited messages carry its parent's seqs.
    pos = {m.id: index for index, m in enumerate(messages)}
    sections: dict[int, str] = {}

    # 1 Primary request and intent
    parts = []
    if previous_sections.get(1):
        parts.append("From earlier generations:\n" + clip(previous_sections[1], 2_000))
    if users:
        first = users[0]
        parts.append(f"First request in this generation (messageId={first.id}):\n{clip(first.content, 1_500)}")
    elif not parts:
        parts.append("No user message in this generation.")
    if data.title:
        parts.append(f"Thread title: {data.title}")
    sections[1] = "\n\n".join(parts)

    # 2 Key technical concepts
    tool_counts = Counter(call.get("name", "tool") for _, call in calls)
    kind_counts = Counter(r.kind for r in resources)
    lines = []
    if tool_counts:
        lines.append("Tools used: " + ", ".join(f"{name} ×{n}" for name, n in tool_counts.most_common()))
    if kind_counts:
        lines.append(
            "Resources touched: "
            + ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in sorted(kind_counts.items()))
            + " (section 10)"
        )
    sessions = sorted({m.session_id for m in messages if m.session_id})
    if sessions:
        lines.append("Sessions: " + ", ".join(sessions[:10]) + (" …" if len(sessions) > 10 else ""))
    sections[2] = "\n".join(lines) or "No tools were used in this generation."

    # 3 Files and code sections
    files = [r for r in resources if r.kind == "file"]
    files.sort(key=lambda r: -len(r.accesses))
    lines = [
        f"- `{one_line(r.name, 160)}`: {len(r.accesses)} access{'es' if len(r.accesses) != 1 else ''}, "
        f"latest messageId={r.latest.message_id}"
        for r in files[:LISTED_FILES]
    ]
    if len(files) > LISTED_FILES:
        lines.append(f"- … {len(files) - LISTED_FILES} more in section 10")
    sections[3] = "\n".join(lines) or "No files were touched through tools in this generation."

    # 4 Errors and fixes
    lines = []
    for error in errors[:LISTED_ERRORS]:
        origin = call_of.get(error.tool_call_id)
        what = f" ({one_line(call_text(origin[1]), 160)})" if origin else ""
        fixed = ""
        if origin:
            same = [
                m
                for m, call in calls
                if pos[m.id] > pos[origin[0].id]
                and call_text(call) == call_text(origin[1])
                and (r := results_by_call.get(call.get("id"))) is not None
                and not catalogue.result_is_error(r.content)
            ]
            if same:
                fixed = f"; the same call succeeded later at messageId={same[0].id}"
        lines.append(f"- messageId={error.id}{what}: {one_line(error.content, 240)}{fixed}")
    if len(errors) > LISTED_ERRORS:
        lines.append(f"- … {len(errors) - LISTED_ERRORS} more errors")
    sections[4] = "\n".join(lines) or "No tool errors were recorded in this generation."

    # 5 Problem solving
    if messages:
        seqs = [m.seq for m in messages]
        lines = [
            f"{len(messages)} messages (seq {min(seqs)}–{max(seqs)}): {len(users)} from the user, "
            f"{len(assistants)} from the assistant, {len(results)} tool results; {len(calls)} tool calls, "
            f"{len(errors)} of them failed."
        ]
    else:
        lines = ["No messages in this generation."]
    conclusions = [m for m in assistants if m.content.strip()][-3:]
    if conclusions:
        lines.append("Latest assistant conclusions:")
        lines += [f"- messageId={m.id}: {one_line(m.content, 300)}" for m in conclusions]
    sections[5] = "\n".join(lines)

    # 6 All user messages
    lines, size = [], 0
    for index, message in enumerate(users):
        line = f"- messageId={message.id}: {one_line(message.content, QUOTE_CHARS)}"
        if size + len(line) > USER_MESSAGES_MAX_CHARS:
            channel = json.dumps(data.channel, ensure_ascii=False)
            lines.append(
                f"- … {len(users) - index} more user messages; search_memory(channel={channel}, query=…) finds them"
            )
            break
        lines.append(line)
        size += len(line) + 1
    sections[6] = "\n".join(lines) or "No user messages in this generation."

    # 7 Pending tasks, 8 Current work, 9 Optional next step
    last_user = users[-1] if users else None
    answered = last_user is not None and any(pos[m.id] > pos[last_user.id] and m.content.strip() for m in assistants)
    if last_user is None:
        sections[7] = "No user request in this generation."
    elif answered:
        sections[7] = (
            f"No open request was recorded after the assistant's last answer; the latest user request was "
            f"messageId={last_user.id}: {one_line(last_user.content, 300)}"
        )
    else:
        sections[7] = f"Unanswered user request (messageId={last_user.id}): {one_line(last_user.content, QUOTE_CHARS)}"
    lines = []
    last_text = next((m for m in reversed(assistants) if m.content.strip()), None)
    if last_text is not None:
        lines.append(f"Last assistant message (messageId={last_text.id}): {one_line(last_text.content, 1_000)}")
    if calls:
        message, call = calls[-1]
        result = results_by_call.get(call.get("id"))
        state = "no result yet"
        if result is not None:
            state = f"result messageId={result.id}, {'error' if catalogue.result_is_error(result.content) else 'ok'}"
        lines.append(f"Last tool call (messageId={message.id}): {one_line(call_text(call), 300)} ({state})")
    sections[8] = "\n".join(lines) or "Nothing recorded."
    last_result = results[-1] if results else None
    if last_result is not None and pos[last_result.id] > max((pos[m.id] for m in assistants), default=-1) and errors:
        if errors[-1].id == last_result.id:
            sections[9] = f"Resolve the error in messageId={last_result.id} before going on."
        else:
            sections[9] = f"Read the latest tool result (messageId={last_result.id}) and go on."
    elif last_user is not None and not answered:
        sections[9] = f"Answer the user's latest request (messageId={last_user.id})."
    else:
        sections[9] = "None recorded: wait for the user's next request."
    return sections
