"""Writing imported sessions: threads, batches through ``services.messages_store``, generation boundaries.

``import_paths`` is the one entry point of the command and of API uploads:
each file is read from a byte offset, complete lines only, in constant
memory (one open API message and one batch at a time), and every message
carries its source id, so importing a file again, or a longer version of
it, adds only what is new.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction

from threadmem import services
from threadmem.errors import DomainError, InvalidInput
from threadmem.imports import claude_code, codex, openai_chat, restore
from threadmem.imports.generations import (
    generation_close_imported,
    generation_summary_imported,
    message_grow_imported,
)
from threadmem.imports.records import (
    CODEX,
    FORMATS,
    THREADMEM,
    Boundary,
    Item,
    Line,
    Msg,
    Problem,
    Summary,
    detect_format,
    is_subagent_file,
    read_complete_lines,
    session_files,
)
from threadmem.imports.threads import subagent_fork_point, thread_for_import
from threadmem.models import Thread
from threadmem.redaction import text_redacted

BATCH_SIZE = 500
# A transaction per this much of a file (FileImport.step).
COMMIT_BYTES = 8 * 1024 * 1024
# The tables a bulk import fills, analyzed once per run (``statistics_refresh``).
ANALYZED_TABLES = ("threadmem_message", "threadmem_toolargument")
MAX_REPORTED_PROBLEMS = 100
# The bad lines a refused export's one-line reason quotes (an upload's error answer, the command's error).
REFUSAL_QUOTED = 5
CLAUDE_CODE = "claude-code"
OPENAI = "openai"
# Formats of one session a file, read by a parser that keeps state across lines (the others: a conversation a line).
SESSION_FORMATS = (CLAUDE_CODE, CODEX)


@dataclass
class ImportReport:
    files: int = 0
    lines: int = 0
    bytes: int = 0
    skipped: int = 0
    messages_new: int = 0
    messages_known: int = 0
    messages_grown: int = 0
    channels: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # "file:line: reason", the first MAX_REPORTED_PROBLEMS
    # What was imported otherwise than the file holds (a restored fork without its parent), "file:line: note".
    notes: list[str] = field(default_factory=list)
    # The threadmem exports refused whole (nothing of them stored): "file: why", with its kind (the HTTP status).
    refusals: list[DomainError] = field(default_factory=list)
    refused_lines: int = 0  # of ``skipped``: the lines of the refused exports

    def problem(self, where: str, line: int, reason: str) -> str:
        self.skipped += 1
        text = f"{where}:{line}: {text_redacted(reason)}"  # a reason may quote what the line held
        if len(self.problems) < MAX_REPORTED_PROBLEMS:
            self.problems.append(text)
        return text

    def note(self, where: str, line: int, text: str) -> None:
        if len(self.notes) < MAX_REPORTED_PROBLEMS:
            self.notes.append(f"{where}:{line}: {text_redacted(text)}")  # a note quotes what the export named

    def channel(self, channel: str) -> None:
        if channel not in self.channels:
            self.channels.append(channel)


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

    def add(self, item: Item) -> None:
        if isinstance(item, Msg):
            if item.message.source_id in self._batch_ids:
                self.flush()
            self._batch.append(item.message)
            self._batch_ids.add(item.message.source_id)
            if len(self._batch) >= BATCH_SIZE:
                self.flush()
        elif isinstance(item, Boundary):
            self.flush()
            self._count(generation_close_imported(thread=self._thread(), event=item.event))
        elif isinstance(item, Summary):
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
        if fmt not in FORMATS:
            raise InvalidInput(f"format must be one of {', '.join(FORMATS)}", field="format")
        if fmt == THREADMEM:
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
            codex.CodexParser(path) if fmt == CODEX else claude_code.ClaudeCodeParser()
        )
        factory = self._codex_thread if fmt == CODEX else self._claude_thread
        self.writer = ThreadWriter(report=report, thread_factory=factory, origin=fmt)
        report.files += 1

    def start_at(self, *, offset: int, line_number: int) -> None:
        """Read from ``offset`` (a line start) on, as a capture does after an earlier one."""
        self.offset = self.resume_offset = offset
        self.line_number = self.resume_line = line_number
        if offset and isinstance(self.parser, codex.CodexParser):
            # Only a rollout's first record names its session: read it again.
            with self.path.open("rb") as handle:
                first = next(read_complete_lines(handle, offset=0, line_number=0, final=True), None)
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
            lines = read_complete_lines(handle, offset=self.offset, line_number=self.line_number, final=final)
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

    def _resume_after(self, line: Line, before: tuple[int, int]) -> None:
        opened = self.parser.open_line if self.fmt in SESSION_FORMATS else 0
        if not opened:
            self.resume_offset, self.resume_line = line.end_offset, line.number
        elif opened == line.number:
            self.resume_offset, self.resume_line = before

    def _take(self, items: list[Item], writer: ThreadWriter) -> None:
        for item in items:
            if isinstance(item, Problem):
                text = self.report.problem(self.source_path, item.line, item.reason)
                if self.on_problem is not None:
                    self.on_problem(text)
            else:
                writer.add(item)
                self.last_source_id = (item.event if isinstance(item, Boundary) else item.message).source_id

    def _conversation(self, line: Line, hooks_due: dict[int, Thread]) -> None:
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
            source_format=CODEX,
            source_path=self.source_path,
            session_id=session_id,
            title=prompt or f"Codex session {session_id[:8]}",
            cwd=parser.cwd,
            project=self.project,
        )

    def _claude_thread(self) -> Thread:
        session_id = self.parser.session_id or self.path.stem
        title = self.parser.slug or f"Claude Code session {session_id[:8]}"
        if not is_subagent_file(self.path):
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


def import_paths(
    *,
    paths: list[Path],
    fmt: str | None,
    owner: AbstractBaseUser,
    channel: str | None = None,
    source_path: str | None = None,
    on_problem: Callable[[str], None] | None = None,
    progress: Callable[[int], None] | None = None,
    restore_isolation: bool | None = None,
) -> ImportReport:
    """Import every session file under ``paths`` once (a one-off import: see ``follow`` for tailing).

    Without ``fmt``, each file's format is read from its first record (``records.detect_format``).
    threadmem exports are restored first, each parent before its forks;
    ``restore_isolation`` (default: whether the owner may isolate) lets them restore ``isolated``.
    """
    report = ImportReport()
    files = [f for p in paths for f in session_files(p, fmt=fmt)]
    if channel and fmt != OPENAI and sum(1 for f in files if not is_subagent_file(f)) > 1:
        raise InvalidInput("--channel names one thread: give it with one session file only", field="channel")
    formats = {path: fmt or detect_format(path) or CLAUDE_CODE for path in files}
    exports = restore.restore_order([path for path in files if formats[path] == THREADMEM])
    if restore_isolation is None:
        restore_isolation = services.can_isolate(owner)
    for path in exports:
        _restore(
            path,
            owner=owner,
            report=report,
            channel=channel,
            where=source_path or str(path),
            restore_isolation=restore_isolation,
            on_problem=on_problem,
            progress=progress,
        )
    for path in files:
        if formats[path] == THREADMEM:
            continue
        FileImport(
            path=path,
            fmt=formats[path],
            owner=owner,
            report=report,
            channel=channel,
            source_path=source_path,
            on_problem=on_problem,
        ).step(final=True, progress=progress)
    if report.messages_new:
        statistics_refresh()
    return report


def _restore(
    path: Path,
    *,
    owner: AbstractBaseUser,
    report: ImportReport,
    channel: str | None,
    where: str,
    restore_isolation: bool,
    on_problem: Callable[[str], None] | None,
    progress: Callable[[int], None] | None,
) -> None:
    """Restore one threadmem export (``restore``) and count it in the report."""
    report.files += 1
    restored = restore.thread_restore(
        path=path, owner=owner, channel=channel, restore_isolation=restore_isolation, progress=progress
    )
    report.lines += restored.lines
    report.bytes += restored.bytes
    report.messages_new += restored.messages_new
    report.messages_known += restored.messages_known
    if restored.refusal is not None:
        why = restored.refusal.message
        lines = [f"line {p.line}: {p.reason}" for p in restored.problems if p.reason != why]
        if lines:  # the bad lines, the first of them quoted: the import's errors list them all
            why += (
                ": "
                + "; ".join(lines[:REFUSAL_QUOTED])
                + (f"; {len(lines) - REFUSAL_QUOTED} more" if len(lines) > REFUSAL_QUOTED else "")
            )
        report.refusals.append(type(restored.refusal)(f"{where}: {text_redacted(why)}"))
    elif restored.channel:
        report.channel(restored.channel)
    for problem in restored.problems:
        text = report.problem(where, problem.line, problem.reason)
        if restored.refused:
            report.refused_lines += 1
        elif on_problem is not None:
            on_problem(text)
    for note in restored.notes:
        report.note(where, note.line, note.reason)


def statistics_refresh() -> None:
    """PostgreSQL: ANALYZE the tables an import filled, so the planner sees the new rows.

    Global search picks its plan from these statistics; autovacuum would
    catch up only after its threshold and naptime. Once per import run (or
    per ``--follow`` catch-up), never per batch: it samples the whole table.
    """
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {', '.join(ANALYZED_TABLES)}")
