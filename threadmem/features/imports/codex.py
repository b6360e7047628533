"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) as threadmem items (contract §11).

One file is one session; each line is ``{timestamp, type, payload}``. What each record becomes:

- ``session_meta`` → the session's id and working directory (the first one:
  a resumed or forked rollout repeats its ancestors').
- ``response_item`` by ``payload.type``:
  ``message``: ``user`` text → a ``user`` message, except the blocks Codex
  injects (``<environment_context>``, ``<user_instructions>``, AGENTS.md
  instructions) → machine events; ``assistant`` → an ``assistant`` message;
  ``developer`` and ``system`` → machine events. ``function_call``,
  ``custom_tool_call``, ``local_shell_call``, ``web_search_call`` and
  ``tool_search_call`` → an ``assistant`` message with the call in
  ``tool_calls`` (its ``call_id``); their ``*_output`` records → ``tool``
  messages answering that ``call_id``. ``reasoning`` → an assistant message
  with ``model_visible=false``: its summary and text, and its
  ``encrypted_content`` kept as it is. ``agent_message`` (between agents) →
  a machine event. Skipped: ``ghost_snapshot`` (a git snapshot) and
  ``image_generation_call`` (the image itself).
- ``compacted`` → a generation boundary; Codex's summary (``message``, or
  the texts of its ``replacement_history`` when the message is empty) opens
  the next generation, as Claude Code's compaction does.
- ``event_msg``: by Claude Code's rule for its system records, one with a
  text of its own (``error``, ``warning``, …) → a machine event; the rest
  are skipped (``user_message``, ``agent_message`` and ``agent_reasoning``
  repeat response items; ``token_count``, ``task_started`` and the like
  carry no text).
- Skipped: ``turn_context``, ``world_state`` and
  ``inter_agent_communication_metadata`` (per-turn settings), and
  ``token_usage_record`` (a request's token counts, Codex 0.171). Any other type,
  or a record without one, is reported with its line number and skipped.

Source ids are ``L<line>``: rollouts keep no id for most items, and a
call's ``call_id`` is not always unique in a file (a resumed session repeats
its history); the file only grows, so a line keeps its number.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from threadmem.domain.services import message_parse
from threadmem.errors import DomainError
from threadmem.features.imports import records
from threadmem.models import Message

CHANNEL_PREFIX = "codex"
# What session_meta says that the session's thread keeps: text a database must hold.
SESSION_FIELDS = ("id", "session_id", "cwd")
SKIPPED_TYPES = frozenset({"turn_context", "world_state", "inter_agent_communication_metadata", "token_usage_record"})
SKIPPED_ITEMS = frozenset({"ghost_snapshot", "image_generation_call"})
# event_msg types that repeat a response_item, or whose text is not a message of the session.
REPEATED_EVENTS = frozenset({"user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content"})
INJECTED_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<permissions")
CALLS = {  # item type -> (tool name, where its arguments are)
    "function_call": (None, "arguments"),
    "custom_tool_call": (None, "input"),
    "local_shell_call": ("local_shell", "action"),
    "web_search_call": ("web_search", "action"),
    "tool_search_call": ("tool_search", "arguments"),
}
OUTPUTS = frozenset(
    {"function_call_output", "custom_tool_call_output", "local_shell_call_output", "tool_search_output"}
)
SESSION_IN_NAME = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")
EMPTY_RESULT = "(no output)"
NO_SUMMARY = "(Codex compacted the conversation here; the rollout holds no summary text)"


class CodexParser:
    """Feeds on a rollout's lines; every item is complete on its line (nothing stays open)."""

    open_line = 0  # a capture resumes after the last line read

    def __init__(self, path: Path | None = None) -> None:
        match = SESSION_IN_NAME.search(path.stem) if path is not None else None
        self.session_id = ""
        self.fallback_session_id = match.group(1) if match else (path.stem if path is not None else "")
        self.slug = ""
        self.cwd = ""
        self.first_user_text: str | None = None

    def prime(self, line: records.Line) -> None:
        """Read the session's id and directory from the first line, before a capture starts further on."""
        record = records.load_record(line)
        if isinstance(record, dict) and record.get("type") == "session_meta":
            self._meta(record.get("payload"))

    def feed(self, line: records.Line) -> list[records.Item]:
        record = records.load_record(line)
        if record is None:
            return []
        if isinstance(record, records.Problem):
            return [record]
        kind, payload = record.get("type"), record.get("payload")
        if kind in SKIPPED_TYPES:
            return []
        if not isinstance(payload, dict):
            return [records.Problem(line.number, f"record {kind!r} without a payload object")]
        if kind == "session_meta":
            problem = records.session_text_problem(payload, SESSION_FIELDS)
            if problem:
                return [records.Problem(line.number, f"payload.{problem}")]
            self._meta(payload)
            return []
        if kind == "response_item":
            return self._item(line, payload)
        if kind == "compacted":
            return self._compacted(line, payload)
        if kind == "event_msg":
            return self._event(line, payload)
        return [records.Problem(line.number, f"unknown record type {kind!r}")]

    def flush(self) -> list[records.Item]:
        return []

    def _meta(self, payload: Any) -> None:
        if isinstance(payload, dict) and not self.session_id:
            self.session_id = str(payload.get("id") or payload.get("session_id") or "")
            self.cwd = str(payload.get("cwd") or "")

    # --- response items --------------------------------------------------------

    def _item(self, line: records.Line, item: dict[str, Any]) -> list[records.Item]:
        kind = item.get("type")
        source = f"L{line.number}"
        if kind == "message":
            return self._message(line, item, source)
        if kind in CALLS:
            return [self._call(line, item, kind)]
        if kind in OUTPUTS:
            data = {
                "role": "tool",
                "content": _output_text(item),
                "tool_call_id": str(item.get("call_id") or "") or None,
            }
            return [self._parsed(data, line, source)]
        if kind == "reasoning":
            text = _reasoning_text(item)
            if not text:
                return []
            return [self._parsed({"role": "assistant", "content": text, "model_visible": False}, line, source)]
        if kind == "agent_message":
            text = _parts_text(item.get("content"))
            author = item.get("author") or "an agent"
            data = {"role": "system", "content": f"{author}: {text}", "kind": Message.Kind.MACHINE_EVENT}
            return [self._parsed(data, line, source)]
        if kind in SKIPPED_ITEMS:
            return []
        return [records.Problem(line.number, f"unknown response item {kind!r}")]

    def _message(self, line: records.Line, item: dict[str, Any], source: str) -> list[records.Item]:
        role = item.get("role")
        text = _parts_text(item.get("content"))
        if role == "assistant":
            return [self._parsed({"role": "assistant", "content": text}, line, source)] if text.strip() else []
        if role == "user":
            if text.lstrip().startswith(INJECTED_PREFIXES):
                data = {"role": "user", "content": text, "kind": Message.Kind.MACHINE_EVENT}
                return [self._parsed(data, line, source)]
            if self.first_user_text is None:
                self.first_user_text = text
            return [self._parsed({"role": "user", "content": text or "[empty]"}, line, source)]
        if role in ("developer", "system"):
            data = {"role": "system", "content": text or "[empty]", "kind": Message.Kind.MACHINE_EVENT}
            return [self._parsed(data, line, source)]
        return [records.Problem(line.number, f"message with unknown role {role!r}")]

    def _call(self, line: records.Line, item: dict[str, Any], kind: str) -> records.Item:
        name, where = CALLS[kind]
        name = name or str(item.get("name") or kind)
        if item.get("namespace"):
            name = f"{item['namespace']}.{name}"
        call_id = str(item.get("call_id") or item.get("id") or f"L{line.number}")
        call = {"id": call_id, "name": name, "arguments": _arguments(item.get(where))}
        return self._parsed({"role": "assistant", "content": "", "tool_calls": [call]}, line, f"L{line.number}")

    # --- compaction and events ---------------------------------------------------

    def _compacted(self, line: records.Line, payload: dict[str, Any]) -> list[records.Item]:
        source = f"L{line.number}"
        event = {"role": "system", "content": "Conversation compacted by Codex", "kind": Message.Kind.MACHINE_EVENT}
        boundary = self._parsed(event, line, f"{source}:compacted")
        text = str(payload.get("message") or "").strip()
        if not text:
            kept = payload.get("replacement_history")
            if isinstance(kept, list):
                text = "\n\n".join(
                    t for t in (_parts_text(i.get("content")) for i in kept if isinstance(i, dict)) if t.strip()
                )
        summary = self._parsed({"role": "user", "content": text or NO_SUMMARY}, line, source)
        if not isinstance(boundary, records.Msg) or not isinstance(summary, records.Msg):
            return [p for p in (boundary, summary) if isinstance(p, records.Problem)]
        return [records.Boundary(boundary.message), records.Summary(summary.message)]

    def _event(self, line: records.Line, payload: dict[str, Any]) -> list[records.Item]:
        kind = payload.get("type")
        text = payload.get("message")
        if kind in REPEATED_EVENTS or not isinstance(text, str) or not text.strip():
            return []
        data = {"role": "system", "content": f"{kind}: {text}", "kind": Message.Kind.MACHINE_EVENT}
        return [self._parsed(data, line, f"L{line.number}")]

    def _parsed(self, data: dict[str, Any], line: records.Line, source_id: str) -> records.Msg | records.Problem:
        data["source_id"] = source_id
        data["session_id"] = self.session_id or self.fallback_session_id
        try:
            return records.Msg(message_parse(data, position=f"line {line.number}"))
        except DomainError as exc:
            return records.Problem(line.number, exc.message)


def _parts_text(content: Any) -> str:
    """A message's content parts as text: text parts as they are, others as a ``[type]`` marker."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif part.get("type"):
            parts.append(f"[{part['type']}]")
    return "\n".join(parts)


def _output_text(item: dict[str, Any]) -> str:
    output = item.get("output")
    if output is None and item.get("type") == "tool_search_output":
        output = json.dumps(item.get("tools"), ensure_ascii=False)
    if isinstance(output, dict):
        output = output.get("text") if isinstance(output.get("text"), str) else json.dumps(output, ensure_ascii=False)
    elif isinstance(output, list):
        output = _parts_text(output)
    text = "" if output is None else str(output)
    return text if text.strip() else EMPTY_RESULT


def _reasoning_text(item: dict[str, Any]) -> str:
    parts = [_parts_text(item.get("summary")), _parts_text(item.get("content"))]
    encrypted = item.get("encrypted_content")
    if isinstance(encrypted, str) and encrypted:
        parts.append(f"encrypted_content: {encrypted}")
    return "\n\n".join(p for p in parts if p.strip())


def _arguments(value: Any) -> dict[str, Any]:
    """A call's arguments as a JSON object: a JSON text of one as it is, anything else under ``input``."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return {"input": value}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    if isinstance(value, dict):
        return value
    return {} if value is None else {"input": value}
