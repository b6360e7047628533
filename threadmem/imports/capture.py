"""Capture: import what a session file gained since the last capture, nothing twice (SPEC §11, Capture).

An agent's hook calls it after each turn (``manage.py capture``, or the
remote hook script through ``POST /api/v1/imports/`` with ``offset``). Each
file has a ``CaptureCursor``: the next capture reads from its offset, only
the lines completed since (a half-written last line waits), and resumes at
the first record of an API message still streaming, so the message grows
whole instead of splitting. A file rewritten or shrunk since (its bytes
before the offset no longer match) is imported whole again, which adds only
what is new (source ids).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from threadmem.imports.records import FORMATS, detect_format, is_subagent_file
from threadmem.imports.service import FileImport, ImportReport
from threadmem.models import CaptureCursor
from threadmem.services import create_unless_conflicting

# The hook events that import; SessionStart prints the catalogue (imports/catalogue.py).
CAPTURE_EVENTS = ("Stop", "SubagentStop", "PreCompact", "SessionEnd")
# The bytes before a cursor's offset that tell a file appended to from one rewritten.
TAIL_BYTES = 256


@dataclass
class CaptureReport:
    report: ImportReport = field(default_factory=ImportReport)
    files_read: int = 0  # files that had new bytes
    rewritten: list[str] = field(default_factory=list)  # files imported whole again


def tail_sha1(path: Path, offset: int) -> str:
    """The SHA-1 of the (up to) TAIL_BYTES bytes before ``offset``; empty at 0."""
    if offset <= 0:
        return ""
    start = max(0, offset - TAIL_BYTES)
    with path.open("rb") as handle:
        handle.seek(start)
        return hashlib.sha1(handle.read(offset - start), usedforsecurity=False).hexdigest()


def session_capture_files(transcript: Path) -> list[Path]:
    """The session file and its subagents' files (``<sessionId>/subagents/agent-*.jsonl``), main first."""
    files = [transcript]
    subagents = transcript.with_suffix("") / "subagents"
    if subagents.is_dir():
        files += sorted(p for p in subagents.glob("agent-*.jsonl") if p.is_file())
    return files


def capture_files(
    *, owner: AbstractBaseUser, files: list[Path], fmt: str | None = None, key_of: dict[Path, str] | None = None
) -> CaptureReport:
    """Capture each file (the main session before its subagents); ``key_of`` names a file's cursor (its path)."""
    result = CaptureReport()
    keys = {path: (key_of or {}).get(path, str(path)) for path in files}
    known = {c.path: c for c in CaptureCursor.objects.filter(owner=owner, path__in=list(keys.values()))}
    for path in sorted(files, key=is_subagent_file):
        size = path.stat().st_size
        cursor = known.get(keys[path])
        if cursor is not None and size == cursor.offset:
            continue  # nothing new: one stat, no read, no lock
        capture_file(owner=owner, path=path, key=keys[path], fmt=fmt, result=result)
    return result


def capture_file(
    *, owner: AbstractBaseUser, path: Path, key: str, result: CaptureReport, fmt: str | None = None
) -> CaptureCursor:
    """Import what ``path`` gained since its cursor, under the cursor's row lock (two hooks at once take turns)."""
    with transaction.atomic():
        cursor = _cursor_locked(owner=owner, key=key, path=path, fmt=fmt)
        size = path.stat().st_size
        if cursor.offset and (size < cursor.offset or tail_sha1(path, cursor.offset) != cursor.tail_sha1):
            result.rewritten.append(key)
            cursor.offset = cursor.line_number = 0
        if size == cursor.offset:
            return cursor
        result.files_read += 1
        reader = FileImport(path=path, fmt=cursor.format, owner=owner, report=result.report, source_path=key)
        reader.start_at(offset=cursor.offset, line_number=cursor.line_number)
        reader.step(final=False)
        cursor.offset, cursor.line_number = reader.resume_offset, reader.resume_line
        cursor.tail_sha1 = tail_sha1(path, cursor.offset)
        cursor.last_source_id = (reader.last_source_id or cursor.last_source_id)[:255]
        cursor.save(update_fields=["offset", "line_number", "tail_sha1", "last_source_id", "updated_at"])
    return cursor


def _cursor_locked(*, owner: AbstractBaseUser, key: str, path: Path, fmt: str | None) -> CaptureCursor:
    found = CaptureCursor.objects.select_for_update().filter(owner=owner, path=key).first()
    if found is not None:
        return found
    chosen = fmt or detect_format(path)
    if chosen not in FORMATS:
        chosen = FORMATS[0]
    create_unless_conflicting(CaptureCursor, owner=owner, path=key, format=chosen)
    return CaptureCursor.objects.select_for_update().get(owner=owner, path=key)
