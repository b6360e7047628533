"""What a deleted thread leaves outside its rows: capture cursors, the server's copies of captured files, imports."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

from django.conf import settings
from django.db.models import Q

from threadmem.errors import InvalidInput
from threadmem.features.imports.capture import remote_copy
from threadmem.models import CaptureCursor, Import, Message, Thread


def capture_cursors_of(threads: Sequence[Thread]) -> list[CaptureCursor]:
    """The cursors of every file the threads were captured from, under whatever name each was sent.

    A thread names only the first file it came from (``source_path``); the
    same session sent under another name has a cursor (and a copy) of its
    own. A cursor remembers the last record it consumed (``last_source_id``):
    a thread holding that record is one the file fed. A record another
    thread of the owner also holds (a restored copy of the session) leaves
    the file to that thread.
    """
    ids = [t.pk for t in threads]
    keys: dict[int, set[str]] = {}
    for thread in threads:
        names = keys.setdefault(thread.owner_id, set())
        if thread.source_path:
            names.add(thread.source_path)
            # A name a remote capture would refuse was never copied here.
            with contextlib.suppress(InvalidInput):
                names.add(str(remote_copy(owner=thread.owner, name=thread.source_path)))
    found: dict[int, CaptureCursor] = {}
    for owner_id, names in keys.items():
        held = Message.objects.filter(thread_id__in=ids, thread__owner_id=owner_id).exclude(source_id="")
        elsewhere = Message.objects.filter(thread__owner_id=owner_id).exclude(thread_id__in=ids)
        cursors = CaptureCursor.objects.filter(owner_id=owner_id).filter(
            Q(path__in=names) | Q(last_source_id__in=held.values("source_id"))
        )
        for cursor in cursors:
            if cursor.path in names or not elsewhere.filter(source_id=cursor.last_source_id).exists():
                found[cursor.pk] = cursor
    return [found[pk] for pk in sorted(found)]


def server_copies(cursors: Sequence[CaptureCursor]) -> list[Path]:
    """The server's copies among the cursors' files (a remote capture's cursor is keyed by its copy's path)."""
    captures = (Path(settings.THREADMEM_IMPORT_DIR) / "captures").resolve()
    copies = []
    for cursor in cursors:
        path = Path(cursor.path)
        if path.is_absolute() and path.resolve().is_relative_to(captures):
            # A failed capture's replaced copy waits beside it until the capture ends.
            copies += [path, path.with_name(f"{path.name}.previous")]
    return copies


def forget_imports(threads: Sequence[Thread]) -> int:
    """Drop the threads' channels from their owners' import records; delete a record left naming none."""
    channels = {t.channel for t in threads}
    owners = {t.owner_id for t in threads}
    changed = 0
    for record in Import.objects.filter(owner_id__in=owners).only("id", "channel", "channels", "path"):
        kept = [c for c in record.channels if c not in channels]
        if record.channel not in channels and len(kept) == len(record.channels):
            continue
        changed += 1
        if not kept:
            record.delete()
            if record.path:
                Path(record.path).unlink(missing_ok=True)
            continue
        record.channels = kept
        record.channel = "" if record.channel in channels else record.channel
        record.save(update_fields=["channels", "channel"])
    return changed


def unlink_files(paths: Sequence[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)
