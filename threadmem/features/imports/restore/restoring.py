"""The entry points of a restore: a thread restored from an export file, and the order files are restored in."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from threadmem.domain import services
from threadmem.features.imports.records import Line, Problem, read_complete_lines
from threadmem.features.imports.restore.outcome import Refused, Restored
from threadmem.features.imports.restore.reading import ExportReader


def thread_restore(
    *,
    path: Path,
    owner: AbstractBaseUser,
    restore_isolation: bool,
    channel: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> Restored:
    """Restore the thread of one export file for ``owner``, under ``channel`` if given, whole or not at all."""
    restored = Restored()
    with path.open("rb") as handle:
        lines = read_complete_lines(handle, offset=0, line_number=0, final=True)
        run = ExportReader(owner=owner, channel=channel, restore_isolation=restore_isolation, restored=restored)
        try:
            with transaction.atomic():
                run.read(_counted(lines, restored, progress))
        except Refused as refused:
            # The bad lines are listed already; a refusal of the thread as a whole is its one problem.
            if not restored.problems:
                restored.problems.append(Problem(refused.line, refused.reason))
            restored.messages_new = restored.messages_known = 0
            restored.thread = None
            restored.refusal = refused.kind(refused.reason)
            restored.notes = []
    if restored.thread is not None and restored.messages_new:
        # After the commit, as other imports: embeddings, the automatic compaction check.
        services.after_append(restored.thread)
    return restored


def restore_order(paths: list[Path]) -> list[Path]:
    """Export files with each parent before its forks (a fork finds its parent restored), else as given."""
    headers: dict[Path, tuple[str, str]] = {}
    for path in paths:
        thread = _header_thread(path)
        parent = thread.get("parent") if isinstance(thread.get("parent"), dict) else {}
        headers[path] = (str(thread.get("channel") or ""), str(parent.get("channel") or ""))
    by_channel = {channel: path for path, (channel, _) in headers.items() if channel}
    ordered: list[Path] = []
    placed: set[Path] = set()

    def place(path: Path, seen: set[Path]) -> None:
        if path in placed or path in seen:
            return
        parent = by_channel.get(headers[path][1])
        if parent is not None:
            place(parent, seen | {path})
        placed.add(path)
        ordered.append(path)

    for path in paths:
        place(path, set())
    return ordered


def _header_thread(path: Path) -> dict[str, Any]:
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                try:
                    record = json.loads(raw)
                except ValueError:
                    return {}
                thread = record.get("thread") if isinstance(record, dict) else None
                return thread if isinstance(thread, dict) else {}
    return {}


def _counted(lines: Iterator[Line], restored: Restored, progress: Callable[[int], None] | None) -> Iterator[Line]:
    reported = 0
    for line in lines:
        restored.lines += 1
        restored.bytes = line.end_offset
        if progress is not None and line.number % 256 == 0:
            progress(line.end_offset - reported)
            reported = line.end_offset
        yield line
    if progress is not None:
        progress(restored.bytes - reported)
