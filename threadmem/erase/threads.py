"""Deleting a thread and everything derived from it (contract §6, Delete).

Three steps, each a short transaction, so a large thread never holds a
writer for long (SQLite has one writer for the whole store):

1. Under the row locks of the thread and its forks (the lock every append,
   compaction commit and capture of it takes), the threads are *withdrawn*:
   renamed to a name no channel can have (``models.WITHDRAWN_PREFIX``) and isolated, so no
   read finds them by channel and no search shows them from then on; their
   capture cursors and import records go; the references between their
   rows that batches would break are cleared.
2. Their messages go, newest first, ``BATCH_MESSAGES`` at a time, with what
   derives from each (leaves, pieces and their indexes).
3. The rest (generations, compactions, progress, the log's rows, whatever
   landed meanwhile) and the threads themselves, with the deletion's record.

An append or a compaction commit that waited for the lock of step 1 finds
the channel gone (404) or writes into the withdrawn thread, which step 3
removes. A process stopped between the steps leaves a withdrawn thread:
``finish_withdrawn`` (run by retention and ``manage.py retention``) deletes it.

A thread with forks is refused (409 naming them) unless the caller asks for
the forks to go too: a fork's history starts with its parent's, so it
cannot outlive it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TypeVar

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import CharField, Value
from django.db.models.functions import Cast, Concat

from threadmem import replicas
from threadmem.erase.files import forget_capture, forget_imports
from threadmem.erase.record import deletion_record, forget_kept
from threadmem.erase.rows import delete_newest_messages, delete_threads, unlink
from threadmem.errors import Conflict, NotFound
from threadmem.models import WITHDRAWN_PREFIX, Deletion, Message, Thread

T = TypeVar("T")
FORKS_LISTED = 10
# Messages removed per transaction: a few tenths of a second of writing on SQLite.
BATCH_MESSAGES = 5_000


def family(thread: Thread) -> list[Thread]:
    """The thread and every fork of it, transitively, in id order."""
    found = {thread.pk: thread}
    level = [thread.pk]
    while level:
        children = list(Thread.objects.filter(parent_id__in=level).exclude(pk__in=found))
        found.update((child.pk, child) for child in children)
        level = [child.pk for child in children]
    return [found[pk] for pk in sorted(found)]


def thread_delete(
    *,
    thread: Thread,
    actor: AbstractBaseUser | None,
    with_forks: bool = False,
    surface: str = "api",
    idle_before: datetime | None = None,
) -> Deletion:
    """Delete ``thread`` (with its forks when ``with_forks``) and everything derived from it; answer the record.

    ``idle_before`` (retention): refuse if any of them was active since, read under the lock.
    """
    try:
        with transaction.atomic():
            ids, counts = _withdraw(thread=thread, with_forks=with_forks, idle_before=idle_before)
            replicas.fence()
    except IntegrityError:
        # A fork created between the forks' read and the commit: it would point at a withdrawn thread.
        raise Conflict(
            f"thread {thread.channel!r} changed while it was being deleted (a fork was created): try again"
        ) from None
    owner_name = thread.owner.get_username()

    def record(removed: dict[str, int]) -> Deletion:
        _add(counts, removed)
        return deletion_record(
            kind=Deletion.Kind.THREAD,
            actor=actor,
            owner_name=owner_name,
            channel=thread.channel,
            counts=counts,
            surface=surface,
        )

    return _remove(ids, record=record)


def finish_withdrawn() -> int:
    """Delete the threads a stopped deletion left withdrawn; answer how many."""
    ids = list(Thread.objects.filter(channel__startswith=WITHDRAWN_PREFIX).values_list("pk", flat=True))
    if ids:
        _remove(ids, record=lambda removed: None)
    return len(ids)


def _withdraw(*, thread: Thread, with_forks: bool, idle_before: datetime | None) -> tuple[list[int], dict]:
    threads = family(thread)
    forks = [t for t in threads if t.pk != thread.pk]
    if forks and not with_forks:
        named = ", ".join(repr(t.channel) for t in forks[:FORKS_LISTED])
        more = f" and {len(forks) - FORKS_LISTED} more" if len(forks) > FORKS_LISTED else ""
        raise Conflict(
            f"thread {thread.channel!r} has forks: {named}{more}; delete them first, or send forks=delete "
            "to delete them with it",
            field="forks",
        )
    ids = [t.pk for t in threads]
    locked = list(
        Thread.objects.select_for_update()
        .filter(pk__in=ids)
        .exclude(channel__startswith=WITHDRAWN_PREFIX)
        .order_by("pk")
        .select_related("owner")
    )
    if thread.pk not in {t.pk for t in locked}:
        raise NotFound(f"thread {thread.channel!r} not found: it was deleted")
    if idle_before is not None and any(t.last_activity_at >= idle_before for t in locked):
        raise Conflict(f"thread {thread.channel!r} was active since {idle_before:%Y-%m-%d %H:%M}: kept")
    ids = [t.pk for t in locked]
    copies: list[Path] = []
    counts: dict[str, object] = {"capture_cursors": sum(forget_capture(t, copies) for t in locked)}
    counts["imports"] = forget_imports(locked)
    counts["forks"] = [t.channel for t in locked if t.pk != thread.pk]
    Thread.objects.filter(pk__in=ids).update(
        channel=Concat(Value(WITHDRAWN_PREFIX), Cast("pk", CharField())), title="", isolated=True
    )
    unlink(ids)
    transaction.on_commit(partial(_unlink_files, copies))
    return ids, counts


def _remove(ids: list[int], *, record: Callable[[dict[str, int]], T]) -> T:
    """Steps 2 and 3: the withdrawn threads' messages in batches, then everything else with ``record``'s row."""
    counts: dict[str, int] = {}
    while True:
        with transaction.atomic():
            newest = Message.objects.filter(thread_id__in=ids).order_by("-id").values_list("id", flat=True)
            bound = next(iter(newest[BATCH_MESSAGES - 1 : BATCH_MESSAGES]), None) or newest.last()
            if bound is None:
                break
            _add(counts, delete_newest_messages(ids, from_id=bound))
    with transaction.atomic():
        _add(counts, delete_threads(ids))
        transaction.on_commit(forget_kept)
        return record(counts)


def _add(counts: dict, more: dict[str, int]) -> None:
    for name, count in more.items():
        counts[name] = counts.get(name, 0) + count


def _unlink_files(paths: list[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)
