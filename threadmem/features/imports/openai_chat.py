"""OpenAI chat JSONL: one conversation a line, ``{"messages": [...]}`` as the Chat Completions API takes them.

Each line is one conversation and becomes one thread (``file_import``); its
messages keep their order, with source ids ``<line>:<index>`` so a
re-import adds nothing twice. ``developer`` is read as ``system``, the
legacy ``function`` role as ``tool``; content given as parts keeps its text
parts (other parts become a ``[type]`` marker).
"""

from __future__ import annotations

from typing import Any

from threadmem.domain.services import message_parse
from threadmem.errors import DomainError
from threadmem.features.imports.records import Item, Line, Msg, Problem, load_record

ROLE_ALIASES = {"developer": "system", "function": "tool"}


def conversation_items(line: Line) -> list[Item] | None:
    """The line's conversation as items (a Problem for the whole line if any message is bad); None if blank."""
    record = load_record(line)
    if record is None:
        return None
    if isinstance(record, Problem):
        return [record]
    messages = record.get("messages")
    if not isinstance(messages, list) or not messages:
        return [Problem(line.number, 'not a conversation: expected {"messages": [...]}')]
    items: list[Item] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            return [Problem(line.number, f"messages[{index}] is not an object")]
        data: dict[str, Any] = {
            "role": ROLE_ALIASES.get(message.get("role"), message.get("role")),
            "content": _content_text(message.get("content")),
            "source_id": f"{line.number}:{index}",
        }
        if message.get("tool_calls"):
            data["tool_calls"] = message["tool_calls"]
        if message.get("tool_call_id") or (message.get("name") and data["role"] == "tool"):
            data["tool_call_id"] = message.get("tool_call_id") or message.get("name")
        if data["role"] == "tool" and not data["content"]:
            data["content"] = "(no output)"
        try:
            items.append(Msg(message_parse(data, position=f"messages[{index}]")))
        except DomainError as exc:
            return [Problem(line.number, exc.message)]
    return items


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
                parts.append(str(part.get("text") or ""))
            elif isinstance(part, dict):
                parts.append(f"[{part.get('type', 'part')}]")
        return "\n".join(parts)
    return str(content)
