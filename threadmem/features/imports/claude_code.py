"""Claude Code transcripts (``~/.claude/projects/<project>/<sessionId>.jsonl``) as threadmem items (contract §11).

One file is one session. What each record becomes:

- ``user`` with text → a ``user`` message (source id: the record's uuid);
  its ``tool_result`` blocks → ``tool`` messages with their ``tool_call_id``
  (source id: uuid and block index); ``isMeta`` user records (caveats,
  injected reminders) → machine events; ``isCompactSummary`` → Claude Code's
  summary, opening the next generation.
- ``assistant``: the records of one streamed API message (same
  ``message.id``) → one ``assistant`` message, its text blocks joined by a
  blank line and its ``tool_use`` blocks as ``tool_calls`` (source id: the
  API message id); its ``thinking`` blocks → one assistant message with
  ``model_visible=false`` before it (source id: ``<id>:thinking``).
- ``system``: ``compact_boundary`` → a generation boundary (kept as a
  machine event closing the old generation); any other system record with
  text (``local_command``, ``informational``, ``api_error``…) → a machine
  event; those without text (``turn_duration``, ``stop_hook_summary``) are
  skipped.
- Skipped: ``progress`` (hook, tool and subagent progress: the subagent's
  own file holds its messages), ``file-history-snapshot``,
  ``queue-operation`` (a queued prompt arrives later as a user record),
  ``summary`` and ``custom-title`` (titles); Claude Code 2.1.3xx's
  ``attachment`` (context it injects: hook output, file snapshots, listings,
  what isMeta records held before) and its bookkeeping (``last-prompt``,
  ``atis-latch``, ``api-request``, ``api-request-blob``,
  ``api-request-shape``, ``tools-used``, ``cost-state``). Any other type, or a
  record without one, is reported with its line number and skipped.
"""

from __future__ import annotations

from typing import Any

from threadmem.domain.services import message_parse
from threadmem.errors import DomainError
from threadmem.features.imports.records import (
    Boundary,
    Item,
    Line,
    Msg,
    Problem,
    Summary,
    load_record,
    session_text_problem,
)
from threadmem.models import Message

# What a record says of its session that its thread keeps (or a query looks up): text a database must hold.
SESSION_FIELDS = ("sessionId", "slug", "cwd")
SKIPPED_TYPES = frozenset(
    {
        *("progress", "file-history-snapshot", "queue-operation", "summary", "custom-title"),
        # Claude Code 2.1.3xx: injected context (never a message of the conversation), then bookkeeping.
        *("attachment", "last-prompt", "atis-latch", "api-request", "api-request-blob", "api-request-shape"),
        *("tools-used", "cost-state"),
    }
)
THINKING_SUFFIX = ":thinking"


class ClaudeCodeParser:
    """Feeds on a session file's lines; keeps the open API message until a record shows it is complete.

    ``flush`` emits the open message as it stands and keeps it open: a live
    session (``--follow``) may stream more blocks of it, and ``file_import``
    then grows the stored message (same source id) instead of adding one.
    """

    def __init__(self) -> None:
        self.session_id = ""
        self.slug = ""
        self.first_user_text: str | None = None
        self.cwd = ""
        self._open_id = ""
        self._open_line = 0
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._calls: list[dict[str, Any]] = []
        self._open_session = ""
        self._results: list[Item] = []  # tool results that arrived while the message streamed

    def feed(self, line: Line) -> list[Item]:
        record = load_record(line)
        if record is None:
            return []
        if isinstance(record, Problem):
            return [record]
        kind = record.get("type")
        if kind in SKIPPED_TYPES:
            return []
        problem = session_text_problem(record, SESSION_FIELDS)
        if problem:
            return [Problem(line.number, problem)]
        self.session_id = self.session_id or str(record.get("sessionId") or "")
        self.slug = self.slug or str(record.get("slug") or "")
        self.cwd = self.cwd or str(record.get("cwd") or "")
        if kind == "assistant":
            return self._assistant(line, record)
        if kind == "user":
            return self._user(line, record)
        if kind == "system":
            return self._close() + self._system(line, record)
        return [Problem(line.number, f"unknown record type {kind!r}")]

    @property
    def open_line(self) -> int:
        """The line of the API message still open (its first record), 0 if none: a capture resumes there."""
        return self._open_line if self._open_id else 0

    def flush(self) -> list[Item]:
        """Everything held so far; the open API message stays open (see the class docstring)."""
        return self._held(closing=False)

    def _held(self, *, closing: bool) -> list[Item]:
        items = self._message_items(closing=closing)
        items += self._results
        self._results = []
        return items

    # --- assistant -----------------------------------------------------------

    def _assistant(self, line: Line, record: dict[str, Any]) -> list[Item]:
        message = record.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            return [Problem(line.number, "assistant record without message.content blocks")]
        message_id = str(message.get("id") or record.get("uuid") or f"line-{line.number}")
        items: list[Item] = []
        if message_id != self._open_id:
            items = self._close()
            self._open_id, self._open_line = message_id, line.number
            self._open_session = str(record.get("sessionId") or self.session_id)
        for block in message["content"]:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                self._text.append(str(block.get("text") or ""))
            elif kind == "thinking":
                self._thinking.append(str(block.get("thinking") or ""))
            elif kind == "tool_use":
                self._calls.append({"id": block.get("id"), "name": block.get("name"), "arguments": block.get("input")})
            elif kind == "redacted_thinking":
                continue
            else:
                items.append(Problem(line.number, f"unknown assistant block {kind!r}"))
        return items

    def _message_items(self, *, closing: bool) -> list[Item]:
        if not self._open_id:
            return []
        session = self._open_session
        items: list[Item] = []
        if self._thinking:
            data = {"role": "assistant", "content": "\n\n".join(self._thinking), "model_visible": False}
            items.append(self._parsed(data, self._open_line, f"{self._open_id}{THINKING_SUFFIX}", session))
        # Claude Code may write a blank text block before the thinking: an open message with nothing else yet
        # waits, so that its thinking is stored before it (as when the whole file is read).
        blank = not self._calls and not "".join(self._text).strip()
        if (self._text or self._calls) and (closing or not blank):
            data = {"role": "assistant", "content": "\n\n".join(self._text), "tool_calls": self._calls}
            items.append(self._parsed(data, self._open_line, self._open_id, session))
        return items

    def _close(self) -> list[Item]:
        items = self._held(closing=True)
        self._open_id = ""
        self._text, self._thinking, self._calls = [], [], []
        return items

    # --- user ----------------------------------------------------------------

    def _user(self, line: Line, record: dict[str, Any]) -> list[Item]:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        uuid = str(record.get("uuid") or f"line-{line.number}")
        session = str(record.get("sessionId") or self.session_id)
        if isinstance(content, str):
            texts, results = [content], []
        elif isinstance(content, list):
            texts, results = [], []
            for index, block in enumerate(content):
                kind = block.get("type") if isinstance(block, dict) else None
                if kind == "tool_result":
                    results.append((index, block))
                elif kind == "text":
                    texts.append(str(block.get("text") or ""))
                elif kind in ("image", "document"):
                    texts.append(f"[{kind}]")
                else:
                    return [Problem(line.number, f"unknown user block {kind!r}")]
        else:
            return [Problem(line.number, "user record without message.content")]
        if record.get("isCompactSummary"):
            items = self._close()
            summary = self._parsed({"role": "user", "content": "\n".join(texts)}, line.number, uuid, session)
            return [*items, Summary(summary.message) if isinstance(summary, Msg) else summary]
        tool_items = [
            self._parsed(
                {
                    "role": "tool",
                    "content": _result_text(block.get("content")),
                    "tool_call_id": block.get("tool_use_id"),
                },
                line.number,
                f"{uuid}:{index}",
                session,
            )
            for index, block in results
        ]
        if results and not texts and self._open_id:
            # Results of the streaming message's calls: they follow it once it is complete.
            self._results += tool_items
            return []
        items = self._close() + tool_items
        if texts:
            data = {"role": "user", "content": "\n".join(texts)}
            if record.get("isMeta"):
                data["kind"] = Message.Kind.MACHINE_EVENT
            elif self.first_user_text is None:
                self.first_user_text = data["content"]
            items.append(self._parsed(data, line.number, uuid, session))
        return items

    # --- system --------------------------------------------------------------

    def _system(self, line: Line, record: dict[str, Any]) -> list[Item]:
        uuid = str(record.get("uuid") or f"line-{line.number}")
        session = str(record.get("sessionId") or self.session_id)
        if record.get("subtype") == "compact_boundary":
            meta = record.get("compactMetadata") or {}
            text = str(record.get("content") or "Conversation compacted")
            if isinstance(meta, dict) and meta:
                text += f" (trigger: {meta.get('trigger', '?')}, tokens before: {meta.get('preTokens', '?')})"
            data = {"role": "system", "content": text, "kind": Message.Kind.MACHINE_EVENT}
            parsed = self._parsed(data, line.number, uuid, session)
            return [Boundary(parsed.message) if isinstance(parsed, Msg) else parsed]
        content = record.get("content")
        if not isinstance(content, str) or not content.strip():
            return []
        return [
            self._parsed({"role": "system", "content": content, "kind": "machine_event"}, line.number, uuid, session)
        ]

    @staticmethod
    def _parsed(data: dict[str, Any], line_number: int, source_id: str, session: str) -> Msg | Problem:
        data["source_id"] = source_id
        data["session_id"] = session
        try:
            return Msg(message_parse(data, position=f"line {line_number}"))
        except DomainError as exc:
            return Problem(line_number, exc.message)


EMPTY_RESULT = "(no output)"


def _result_text(content: Any) -> str:
    """A tool_result's content: a string as is, a list of blocks as their texts (images as a marker).

    An empty result becomes ``(no output)``: a stored message needs content.
    """
    if content is None or content == "" or content == []:
        return EMPTY_RESULT
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text") or ""))
            elif isinstance(block, dict):
                parts.append(f"[{block.get('type', 'block')}]")
        return "\n".join(parts)
    return str(content)
