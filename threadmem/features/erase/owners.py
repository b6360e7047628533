"""Erasing an owner entirely: every thread, every record naming them, their account (``manage.py forget_owner``).

Forks of the owner's threads go with them, whoever made them (a fork's
history starts with its parent's). Rows kept about other owners' threads
that name this one as the actor (isolation toggles, deletions) keep the
change and lose the name.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.sessions.models import Session
from django.db import transaction

from threadmem.features.erase.record import deletion_record, forget_kept
from threadmem.features.erase.rows import delete_threads
from threadmem.features.erase.thread_delete import family, thread_delete
from threadmem.models import CaptureCursor, Deletion, Import, IsolationEvent, Thread, ToolCall


@dataclass
class OwnerErasure:
    threads: list[str] = field(default_factory=list)  # channels, forks included
    counts: dict[str, int] = field(default_factory=dict)


def owner_threads(owner: AbstractBaseUser) -> list[Thread]:
    """The owner's threads and every fork of them, in id order."""
    found: dict[int, Thread] = {}
    for thread in Thread.objects.filter(owner=owner).order_by("pk"):
        if thread.pk not in found:
            found.update((t.pk, t) for t in family(thread))
    return [found[pk] for pk in sorted(found)]


def owner_forget(*, owner: AbstractBaseUser, actor_name: str = "forget_owner", dry_run: bool = False) -> OwnerErasure:
    """Delete every row of ``owner`` and the account itself; with ``dry_run`` only say what would go."""
    erasure = OwnerErasure(threads=[t.channel for t in owner_threads(owner)])
    if dry_run:
        erasure.counts = {"threads": len(erasure.threads)}
        return erasure
    anonymous = f"owner #{owner.pk}"
    counts: dict[str, int] = {}
    for thread in Thread.objects.filter(owner=owner, parent__isnull=True).order_by("pk"):
        removed = thread_delete(thread=thread, actor=None, with_forks=True, surface="cli")
        counts.update({k: counts.get(k, 0) + v for k, v in removed.counts.items() if isinstance(v, int)})
    with transaction.atomic():
        # Forks of other owners' threads, and threads made since the list above.
        left = [t.pk for t in owner_threads(owner)]
        for name, count in (delete_threads(left) if left else {}).items():
            counts[name] = counts.get(name, 0) + count
        counts["tool_calls"] = counts.get("tool_calls", 0) + ToolCall.objects.filter(caller=owner).delete()[0]
        counts["imports"] = counts.get("imports", 0) + _delete_imports(owner)
        counts["capture_cursors"] = CaptureCursor.objects.filter(owner=owner).delete()[0]
        counts["isolation_events_as_actor"] = IsolationEvent.objects.filter(actor=owner).delete()[0]
        counts["sessions"] = _delete_sessions(owner)
        Deletion.objects.filter(actor=owner).update(actor=None, actor_name=anonymous)
        Deletion.objects.filter(owner_name=owner.get_username()).update(owner_name=anonymous)
        # Named before the account goes: deleting it clears the instance's pk.
        captures = Path(settings.THREADMEM_IMPORT_DIR) / "captures" / str(owner.pk)
        owner.delete()
        erasure.counts = counts
        deletion_record(
            kind=Deletion.Kind.OWNER,
            actor=None,
            owner_name=anonymous,
            counts={**counts, "threads": len(erasure.threads)},
            surface="cli",
            actor_name=actor_name,
        )
        transaction.on_commit(partial(shutil.rmtree, captures, ignore_errors=True))
        transaction.on_commit(forget_kept)
    return erasure


def _delete_imports(owner: AbstractBaseUser) -> int:
    uploads = [Path(p) for p in Import.objects.filter(owner=owner).exclude(path="").values_list("path", flat=True)]
    deleted = Import.objects.filter(owner=owner).delete()[0]
    transaction.on_commit(lambda: [path.unlink(missing_ok=True) for path in uploads])
    return deleted


def _delete_sessions(owner: AbstractBaseUser) -> int:
    """The owner's console logins (a session names its user inside its encoded data only)."""
    theirs = [s.pk for s in Session.objects.iterator() if s.get_decoded().get("_auth_user_id") == str(owner.pk)]
    return Session.objects.filter(pk__in=theirs).delete()[0]
