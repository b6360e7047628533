"""Capture: import what a session file gained since the last capture, nothing twice (contract §11, Capture).

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
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from threadmem.domain.services import create_unless_conflicting
from threadmem.errors import Conflict, InvalidInput
from threadmem.features.imports.file_import import FileImport
from threadmem.features.imports.records import FORMATS, detect_format, is_subagent_file
from threadmem.features.imports.report import ImportReport
from threadmem.infrastructure import replicas
from threadmem.models import CaptureCursor

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
    *,
    owner: AbstractBaseUser,
    path: Path,
    key: str,
    result: CaptureReport,
    fmt: str | None = None,
    source_path: str | None = None,
    locked: CaptureCursor | None = None,
    project: str = "",
) -> CaptureCursor:
    """Import what ``path`` gained since its cursor, under the cursor's row lock (two hooks at once take turns).

    ``locked``: the cursor, already locked by the caller's transaction. ``project``: a new thread's project, as the
    client resolved it (a remote hook); empty: resolved here from the session's working directory.
    """
    with transaction.atomic():
        cursor = locked or _cursor_locked(owner=owner, key=key)
        size = path.stat().st_size
        if cursor.offset and (size < cursor.offset or tail_sha1(path, cursor.offset) != cursor.tail_sha1):
            result.rewritten.append(source_path or key)
            cursor.offset = cursor.line_number = 0
        if size == cursor.offset:
            return cursor
        if not cursor.format:
            cursor.format = fmt or detect_format(path)
            if not cursor.format:
                return cursor  # the first record, which names the format, is still being written
        result.files_read += 1
        reader = FileImport(
            path=path,
            fmt=cursor.format,
            owner=owner,
            report=result.report,
            source_path=source_path or key,
            project=project,
        )
        reader.start_at(offset=cursor.offset, line_number=cursor.line_number)
        reader.step(final=False)
        # The owner's next reads wait for a replica that has replayed the capture: recorded once it committed,
        # when the position is past it (the outer transaction's, for a remote capture).
        transaction.on_commit(lambda: replicas.wrote(owner.pk))
        cursor.offset, cursor.line_number = reader.resume_offset, reader.resume_line
        cursor.tail_sha1 = tail_sha1(path, cursor.offset)
        cursor.last_source_id = (reader.last_source_id or cursor.last_source_id)[:255]
        cursor.save(update_fields=["format", "offset", "line_number", "tail_sha1", "last_source_id", "updated_at"])
    return cursor


def _cursor_locked(*, owner: AbstractBaseUser, key: str) -> CaptureCursor:
    found = CaptureCursor.objects.select_for_update().filter(owner=owner, path=key).first()
    if found is not None:
        return found
    create_unless_conflicting(CaptureCursor, owner=owner, path=key, format="")
    return CaptureCursor.objects.select_for_update().get(owner=owner, path=key)


# --- remote captures: the new bytes of a file on another host --------------------------------------------------

SAFE_PART = re.compile(r"[A-Za-z0-9._-]{1,200}")


class OffsetMismatch(Conflict):
    """The bytes sent do not start where the server's copy of the file ends: send again from ``server_offset``."""

    def __init__(self, server_offset: int) -> None:
        super().__init__(
            f"these bytes start at another offset than the server's copy ends ({server_offset}): "
            "send the file's bytes from that offset (or all of it from offset 0)",
            field="offset",
        )
        self.server_offset = server_offset


@dataclass
class RemoteCapture:
    offset: int  # where the server's copy now ends: the next bytes start there
    result: CaptureReport


def remote_copy(*, owner: AbstractBaseUser, name: str) -> Path:
    """Where the server keeps its copy of the client's file ``name`` (a Claude Code or Codex session path).

    A subagent's file keeps its place beside its session's copy
    (``<sessionId>/subagents/agent-*.jsonl``), so it forks from the session.
    """
    parts = [p for p in name.replace("\\", "/").split("/") if p]
    if not parts:
        raise InvalidInput("name the session file (its path on the client)", field="name")
    keep = 3 if is_subagent_file(Path(*parts)) and len(parts) >= 3 else 1
    tail, folder = parts[-keep:], "/".join(parts[:-keep])
    if not all(SAFE_PART.fullmatch(p) and not p.startswith(".") for p in tail) or not tail[-1].endswith(".jsonl"):
        raise InvalidInput(
            f"{name!r} is not a session file name (letters, digits, '.', '_', '-'; .jsonl)", field="name"
        )
    digest = hashlib.sha1(folder.encode("utf-8", "replace"), usedforsecurity=False).hexdigest()[:16]
    return Path(settings.THREADMEM_IMPORT_DIR) / "captures" / str(owner.pk) / digest / Path(*tail)


def capture_append(
    *,
    owner: AbstractBaseUser,
    name: str,
    offset: int,
    chunks: Iterable[bytes],
    fmt: str | None = None,
    project: str = "",
) -> RemoteCapture:
    """Append the bytes to the server's copy of ``name`` at ``offset``, then capture what the copy gained.

    ``project``: the session's project as the hook resolved it on its host (this server may not have the directory).

    ``offset`` must be where the copy ends (else OffsetMismatch, nothing
    written), or 0: the whole file again, which replaces the copy (a file
    rewritten on the client) and imports only what is new.
    """
    if fmt is not None and fmt not in FORMATS:
        raise InvalidInput(f"format must be one of {', '.join(FORMATS)}", field="format")
    copy = remote_copy(owner=owner, name=name)
    key = str(copy)
    result = CaptureReport()
    with transaction.atomic():
        cursor = _cursor_locked(owner=owner, key=key)  # one capture of a file at a time, from the offset check on
        size = copy.stat().st_size if copy.exists() else 0
        if offset not in (0, size):
            raise OffsetMismatch(size)
        copy.parent.mkdir(parents=True, exist_ok=True)
        # A refused capture (another owner's session, a bad record) keeps nothing of what it sent.
        previous = copy.with_name(f"{copy.name}.previous")
        if offset == 0 and copy.exists():
            copy.replace(previous)
        try:
            with copy.open("wb" if offset == 0 else "ab") as handle:
                for chunk in chunks:
                    handle.write(chunk)
            capture_file(
                owner=owner,
                path=copy,
                key=key,
                result=result,
                fmt=fmt,
                source_path=name,
                locked=cursor,
                project=project,
            )
        except BaseException:
            _restore(copy, previous=previous, size=size)
            raise
        previous.unlink(missing_ok=True)
        return RemoteCapture(offset=copy.stat().st_size, result=result)


def _restore(copy: Path, *, previous: Path, size: int) -> None:
    """The server's copy as it was before a capture that failed: the replaced file back, or the new bytes cut."""
    if previous.exists():
        previous.replace(copy)
    elif size:
        with copy.open("r+b") as handle:
            handle.truncate(size)
    else:
        copy.unlink(missing_ok=True)
