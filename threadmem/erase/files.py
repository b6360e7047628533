"""What a deleted thread leaves outside its rows: capture cursors, the server's copies of captured files, imports."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from threadmem.errors import InvalidInput
from threadmem.imports.capture import remote_copy
from threadmem.models import CaptureCursor, Import, Thread


def forget_capture(thread: Thread, copies: list[Path]) -> int:
    """Delete the cursors of the file the thread was captured from; add the server's copy of it to ``copies``.

    A local capture's cursor is keyed by the file's path (the thread's
    ``source_path``); a remote capture's by the server's copy of it. A file
    still being captured comes back whole at its next capture.
    """
    if not thread.source_path:
        return 0
    keys = [thread.source_path]
    try:
        copy = remote_copy(owner=thread.owner, name=thread.source_path)
    except InvalidInput:
        pass  # not a name a remote capture would accept: never copied here
    else:
        keys.append(str(copy))
        copies.append(copy)
    deleted, _ = CaptureCursor.objects.filter(owner_id=thread.owner_id, path__in=keys).delete()
    return deleted


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
