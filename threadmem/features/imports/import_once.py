"""Importing every session file under some paths once (``import_paths``: the command's and API uploads' entry
point; ``follow`` tails files instead): threadmem exports restored first, then each file by ``FileImport``, then
the tables' statistics refreshed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection

from threadmem.domain import services
from threadmem.domain.redaction import text_redacted
from threadmem.errors import InvalidInput
from threadmem.features.imports import restore
from threadmem.features.imports.file_import import CLAUDE_CODE, OPENAI, FileImport
from threadmem.features.imports.records import THREADMEM, detect_format, is_subagent_file, session_files
from threadmem.features.imports.report import ImportReport

# The tables a bulk import fills, analyzed once per run (``statistics_refresh``).
ANALYZED_TABLES = ("threadmem_message", "threadmem_toolargument")
# The bad lines a refused export's one-line reason quotes (an upload's error answer, the command's error).
REFUSAL_QUOTED = 5


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
