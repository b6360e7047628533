"""One session file imported step by step: its cursor, its parser, and the writer batching its threads' messages.

Each file is read from a byte offset, complete lines only, in constant memory (one open API message and one
batch at a time), and every message carries its source id, so importing a file again, or a longer version of
it, adds only what is new.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from threadmem.domain import services
from threadmem.domain.redaction import text_redacted
from threadmem.errors import InvalidInput
from threadmem.features.imports import claude_code, codex, openai_chat, records
from threadmem.features.imports.generations import (
    generation_close_imported,
    generation_summary_imported,
    message_grow_imported,
)
from threadmem.features.imports.import_threads import subagent_fork_point, thread_for_import
from threadmem.features.imports.report import ImportReport
from threadmem.models import Thread

BATCH_SIZE = 500
# A transaction per this much of a file (FileImport.step).
COMMIT_BYTES = 8 * 1024 * 1024
CLAUDE_CODE = "claude-code"
OPENAI = "openai"
# Formats of one session a file, read by a parser that keeps state across lines (the others: a conversation a line).
SESSION_FORMATS = (CLAUDE_CODE, records.CODEX)


class ThreadWriter:
    """Batches one thread's items into ``messages_store``; boundaries and summaries go to their services."""

    def __init__(self, *, report: ImportReport, thread_factory: Callable[[], Thread], origin: str) -> None:
        self.report = report
        self._thread_factory = thread_factory
        self.thread: Thread | None = None
        self.origin = origin
        self._batch: list[services.MessageIn] = []
        self._batch_ids: set[str] = set()

    def _thread(self) -> Thread:
        if self.thread is None:
            self.thread = self._thread_factory()
            self.report.channel(self.thread.channel)
        return self.thread

    def add(self, item: records.Item) -> None:
        if isinstance(item, records.Msg):
            if item.message.source_id in self._batch_ids:
                self.flush()
            self._batch.append(item.message)
            self._batch_ids.add(item.message.source_id)
            if len(self._batch) >= BATCH_SIZE:
                self.flush()
        elif isinstance(item, records.Boundary):
            self.flush()
            self._count(generation_close_imported(thread=self._thread(), event=item.event))
        elif isinstance(item, records.Summary):
            self.flush()
            stored = generation_summary_imported(thread=self._thread(), summary=item.message, origin=self.origin)
            self._count(stored is not None)

    def _count(self, new: bool) -> None:
        if new:
            self.report.messages_new += 1
        else:
            self.report.messages_known += 1

    def flush(self) -> None:
        if not self._batch:
            return
        thread = self._thread()
        batch, self._batch, self._batch_ids = self._batch, [], set()
        next_seq = Thread.objects.values_list("next_seq", flat=True).get(pk=thread.pk)
        stored = services.messages_store(thread=thread, messages=batch, run_hooks=False)
        for message_in, row in zip(batch, stored, strict=True):
            if row.seq >= next_seq:
                self.report.messages_new += 1
                continue
            self.report.messages_known += 1
            if _grown(row.content, row.tool_calls, message_in):
                message_grow_imported(thread=thread, message_id=row.id, message=message_in)
                self.report.messages_grown += 1

    def finish(self, hooks_due: dict[int, Thread]) -> None:
        """Store what is left; the thread's after-append hooks are due once the transaction commits."""
        self.flush()
        if self.thread is not None:
            hooks_due[self.thread.pk] = self.thread


def _grown(content: str, tool_calls: list, message: services.MessageIn) -> bool:
    """The stored message is a beginning of ``message``: a streamed message only gains blocks.

    A shorter version (a file cut back, then imported again) never shrinks what is stored.
    """
    if content == message.content and tool_calls == message.tool_calls:
        return False
    calls = message.tool_calls or []
    return message.content.startswith(content) and calls[: len(tool_calls or [])] == (tool_calls or [])


class FileImport:
    """One file being imported: its cursor (byte offset, line number), its parser and its writer(s)."""

    def __init__(
        self,
        *,
        path: Path,
        fmt: str,
        owner: AbstractBaseUser,
        report: ImportReport,
        channel: str | None = None,
        source_path: str | None = None,
        on_problem: Callable[[str], None] | None = None,
        project: str = "",
    ) -> None:
        if fmt not in records.FORMATS:
            raise InvalidInput(f"format must be one of {', '.join(records.FORMATS)}", field="format")
        if fmt == records.THREADMEM:
            raise InvalidInput(
                f"{path}: a threadmem export is restored whole (import_sessions), not followed or captured"
            )
        self.path, self.fmt, self.owner, self.report = path, fmt, owner, report
        self.channel = channel
        # The project a remote hook resolved on its own host; empty: the session's cwd, resolved here if it exists.
        self.project = project
        self.source_path = source_path or str(path)
        self.on_problem = on_problem
        self.offset = 0
        self.line_number = 0
        # Where a later, separate run must start again (a capture): the end of the last line consumed, or the
        # first line of an API message still open, so that its records are all read again and it grows whole.
        self.resume_offset = 0
        self.resume_line = 0
        self.last_source_id = ""
        self.parser: claude_code.ClaudeCodeParser | codex.CodexParser = (
            codex.CodexParser(path) if fmt == records.CODEX else claude_code.ClaudeCodeParser()
        )
        factory = self._codex_thread if fmt == records.CODEX else self._claude_thread
        self.writer = ThreadWriter(report=report, thread_factory=factory, origin=fmt)
        report.files += 1

    def start_at(self, *, offset: int, line_number: int) -> None:
        """Read from ``offset`` (a line start) on, as a capture does after an earlier one."""
        self.offset = self.resume_offset = offset
        self.line_number = self.resume_line = line_number
        if offset and isinstance(self.parser, codex.CodexParser):
            # Only a rollout's first record names its session: read it again.
            with self.path.open("rb") as handle:
                first = next(records.read_complete_lines(handle, offset=0, line_number=0, final=True), None)
            if first is not None:
                self.parser.prime(first)

    def step(self, *, final: bool, progress: Callable[[int], None] | None = None) -> int:
        """Import the complete lines written since the last step; answer the bytes consumed.

        The writes go in one transaction per COMMIT_BYTES of the file (the
        thread, its batches, boundaries and summary commit together: a
        commit per batch made small sessions pay a WAL flush per batch), and
        the after-append hooks run once each has committed.
        """
        start = reported = self.offset
        hooks_due: dict[int, Thread] = {}
        with self.path.open("rb") as handle:
            lines = records.read_complete_lines(handle, offset=self.offset, line_number=self.line_number, final=final)
            more = True
            while more:
                window, more = self.offset, False
                with transaction.atomic():
                    for line in lines:
                        self.report.lines += 1
                        before = (self.offset, self.line_number)
                        if self.fmt in SESSION_FORMATS:
                            self._take(self.parser.feed(line), self.writer)
                        else:
                            self._conversation(line, hooks_due)
                        self.offset, self.line_number = line.end_offset, line.number
                        self._resume_after(line, before)
                        if progress is not None and line.number % 256 == 0:
                            progress(self.offset - reported)
                            reported = self.offset
                        if self.offset - window >= COMMIT_BYTES:
                            more = True
                            break
                    if self.fmt in SESSION_FORMATS:
                        if not more:
                            self._take(self.parser.flush(), self.writer)
                        self.writer.finish(hooks_due)
                for thread in hooks_due.values():
                    # Embeddings and the automatic compaction check: once per file and transaction, not per batch.
                    services.after_append(thread)
                hooks_due.clear()
        if progress is not None:
            progress(self.offset - reported)
        self.report.bytes += self.offset - start
        return self.offset - start

    def _resume_after(self, line: records.Line, before: tuple[int, int]) -> None:
        opened = self.parser.open_line if self.fmt in SESSION_FORMATS else 0
        if not opened:
            self.resume_offset, self.resume_line = line.end_offset, line.number
        elif opened == line.number:
            self.resume_offset, self.resume_line = before

    def _take(self, items: list[records.Item], writer: ThreadWriter) -> None:
        for item in items:
            if isinstance(item, records.Problem):
                text = self.report.problem(self.source_path, item.line, item.reason)
                if self.on_problem is not None:
                    self.on_problem(text)
            else:
                writer.add(item)
                self.last_source_id = (item.event if isinstance(item, records.Boundary) else item.message).source_id

    def _conversation(self, line: records.Line, hooks_due: dict[int, Thread]) -> None:
        items = openai_chat.conversation_items(line)
        if not items:
            return
        base = self.channel or f"openai:{Path(self.source_path).stem}"

        def thread() -> Thread:
            return thread_for_import(
                owner=self.owner,
                channel=f"{base}:{line.number}",
                source_format=OPENAI,
                source_path=self.source_path,
                title=f"{Path(self.source_path).name} line {line.number}",
            )

        writer = ThreadWriter(report=self.report, thread_factory=thread, origin=OPENAI)
        self._take(items, writer)
        writer.finish(hooks_due)

    # --- session threads -----------------------------------------------------

    def _codex_thread(self) -> Thread:
        parser = self.parser
        session_id = parser.session_id or getattr(parser, "fallback_session_id", "") or self.path.stem
        # The title is the first prompt's start: stored text, redacted as the prompt is.
        prompt = " ".join(text_redacted(parser.first_user_text or "").split())[:80]
        return thread_for_import(
            owner=self.owner,
            channel=self.channel or f"{codex.CHANNEL_PREFIX}:{session_id}",
            source_format=records.CODEX,
            source_path=self.source_path,
            session_id=session_id,
            title=prompt or f"Codex session {session_id[:8]}",
            cwd=parser.cwd,
            project=self.project,
        )

    def _claude_thread(self) -> Thread:
        session_id = self.parser.session_id or self.path.stem
        title = self.parser.slug or f"Claude Code session {session_id[:8]}"
        if not records.is_subagent_file(self.path):
            channel = self.channel or f"{CLAUDE_CODE}:{session_id}"
            return thread_for_import(
                owner=self.owner,
                channel=channel,
                source_format=CLAUDE_CODE,
                source_path=self.source_path,
                session_id=session_id,
                title=title,
                cwd=self.parser.cwd,
                project=self.project,
            )
        agent = self.path.stem  # agent-<agentId>
        parent_session = self.path.parent.parent.name
        parent_channel = self.channel or f"{CLAUDE_CODE}:{parent_session}"
        parent = Thread.objects.filter(channel=parent_channel, owner=self.owner).first()
        # The parent's Task call holds the prompt as it was stored: redacted.
        prompt = text_redacted(self.parser.first_user_text or "") or None
        fork = subagent_fork_point(parent=parent, prompt=prompt, agent=agent) if parent else None
        return thread_for_import(
            owner=self.owner,
            channel=f"{parent_channel}:{agent}",
            source_format=CLAUDE_CODE,
            source_path=self.source_path,
            session_id=session_id,
            title=f"{title} · {agent}",
            fork_from=fork,
            cwd=self.parser.cwd,
            project=self.project,
        )
