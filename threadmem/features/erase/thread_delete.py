"""Deleting a thread and everything derived from it (contract §6, Delete).

Three steps, each a short transaction, so a large thread never holds a
writer for long (SQLite has one writer for the whole store):

1. Under the row locks of the files it was captured from, of the thread and
   its forks (the lock every append, compaction commit and capture of it
   takes) and of their embedding progress (the lock an embedding run's
   batch takes), the threads are *withdrawn*: renamed to a name no channel
   can have (``models.WITHDRAWN_PREFIX``; the title keeps the channel, for
   the record and for a DELETE that finishes it) and isolated, so no read
   finds them by channel and no search shows them from then on; their
   capture cursors, the server's copies of their files, import records and
   embedding progress go (an embedding run finds its progress gone and
   stops); the references between their rows that batches would break are
   cleared.
2. Their messages go, newest first, ``BATCH_MESSAGES`` at a time, with what
   derives from each (leaves, pieces and their indexes).
3. The rest (generations, compactions, the log's rows, whatever landed
   meanwhile) and the threads themselves, with the deletion's record.

Steps 2 and 3 take the threads' row locks first: an append, an import batch
or a compaction commit lands wholly before one (and goes with the thread) or
after the last (404). A row written meanwhile without that lock (the
tool-call log's) fails a step's commit, which is run again.

A deletion stopped after step 1 leaves a withdrawn thread, never for long:
a DELETE of its channel finishes it, and so does ``finish_withdrawn`` (the
periodic sweep, retention and ``manage.py retention``), each with the record.

A thread with forks is refused (409 naming them) unless the caller asks for
the forks to go too: a fork's history starts with its parent's, so it
cannot outlive it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial
from typing import TypeVar

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import CharField, F, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from threadmem.errors import Conflict, DomainError, NotFound
from threadmem.features.erase.files import capture_cursors_of, forget_imports, server_copies, unlink_files
from threadmem.features.erase.record import deletion_record, forget_kept
from threadmem.features.erase.rows import delete_newest_messages, delete_threads, unlink
from threadmem.infrastructure import replicas
from threadmem.models import WITHDRAWN_PREFIX, CaptureCursor, Deletion, EmbeddingProgress, Message, Thread

logger = logging.getLogger(__name__)

T = TypeVar("T")
FORKS_LISTED = 10
# Messages removed per transaction: a few tenths of a second of writing on SQLite.
BATCH_MESSAGES = 5_000
# A step whose commit a row written meanwhile refused is run again this often (the row is seen the next time).
STEP_ATTEMPTS = 5
# A thread withdrawn more recently than this may still be being deleted by the request that withdrew it: the
# sweeps leave it to that request (a DELETE of its channel does not wait). Past it, the deletion stopped.
WITHDRAWN_GRACE = timedelta(minutes=10)


class DeletionUnfinished(DomainError, status_code=503):
    """The thread is withdrawn (nothing shows it) but some of its rows are still stored: DELETE it again."""

    retry_after = 5


def family(thread: Thread) -> list[Thread]:
    """The thread and every fork of it, transitively, in id order."""
    found = {thread.pk: thread}
    level = [thread.pk]
    while level:
        children = list(Thread.objects.filter(parent_id__in=level).exclude(pk__in=found))
        found.update((child.pk, child) for child in children)
        level = [child.pk for child in children]
    return [found[pk] for pk in sorted(found)]


def is_withdrawn(thread: Thread) -> bool:
    return thread.channel.startswith(WITHDRAWN_PREFIX)


def thread_delete(
    *,
    thread: Thread,
    actor: AbstractBaseUser | None,
    with_forks: bool = False,
    surface: str = "api",
    idle_before: datetime | None = None,
) -> Deletion:
    """Delete ``thread`` (with its forks when ``with_forks``) and everything derived from it; answer the record.

    A withdrawn ``thread`` (a deletion stopped half way) is finished. ``idle_before`` (retention): refuse if
    any of them was active since, read under the lock.
    """
    if is_withdrawn(thread):
        return _finish(thread, actor=actor, surface=surface)
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

    return _remove_or_say(ids, record=record, channel=thread.channel)


def withdrawn_stale(*, now: datetime | None = None) -> list[Thread]:
    """The withdrawn threads whose deletion stopped (withdrawn longer than WITHDRAWN_GRACE ago), oldest first."""
    cutoff = (now or timezone.now()) - WITHDRAWN_GRACE
    return list(
        Thread.objects.filter(channel__startswith=WITHDRAWN_PREFIX, last_activity_at__lt=cutoff)
        .select_related("owner")
        .order_by("last_activity_at", "pk")
    )


def finish_withdrawn(*, surface: str = "sweep", now: datetime | None = None) -> list[Deletion]:
    """Finish the deletions that stopped half way (``withdrawn_stale``), each with its record."""
    records = []
    for thread in withdrawn_stale(now=now):
        try:
            records.append(_finish(thread, actor=None, surface=surface))
        except DomainError as exc:
            logger.warning("finishing the deletion of thread %s: %s", thread.pk, exc.message)
    return records


def _finish(thread: Thread, *, actor: AbstractBaseUser | None, surface: str) -> Deletion:
    channel = thread.title  # where withdrawing keeps it

    def record(removed: dict[str, int]) -> Deletion:
        return deletion_record(
            kind=Deletion.Kind.THREAD,
            actor=actor,
            owner_name=thread.owner.get_username(),
            channel=channel,
            counts={**removed, "finished": True},
            surface=surface,
        )

    return _remove_or_say([thread.pk], record=record, channel=channel)


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
    # A capture takes its file's cursor lock before the thread's: taken in that order here too, a capture
    # at work finishes first (into the withdrawn thread), and one that waited finds no cursor and starts anew.
    cursors = capture_cursors_of(threads)
    list(CaptureCursor.objects.select_for_update().filter(pk__in=[c.pk for c in cursors]).order_by("pk"))
    locked = list(
        Thread.objects.select_for_update()
        .filter(pk__in=[t.pk for t in threads])
        .exclude(channel__startswith=WITHDRAWN_PREFIX)
        .order_by("pk")
        .select_related("owner")
    )
    if thread.pk not in {t.pk for t in locked}:
        raise NotFound(f"thread {thread.channel!r} not found: it was deleted")
    if idle_before is not None and any(t.last_activity_at >= idle_before for t in locked):
        raise Conflict(f"thread {thread.channel!r} was active since {idle_before:%Y-%m-%d %H:%M}: kept")
    ids = [t.pk for t in locked]
    counts: dict[str, object] = {
        "capture_cursors": CaptureCursor.objects.filter(pk__in=[c.pk for c in cursors]).delete()[0],
        "imports": forget_imports(locked),
        "forks": [t.channel for t in locked if t.pk != thread.pk],
    }
    Thread.objects.filter(pk__in=ids).update(
        channel=Concat(Value(WITHDRAWN_PREFIX), Cast("pk", CharField())),
        title=F("channel"),
        isolated=True,
        last_activity_at=timezone.now(),  # when it was withdrawn: the sweeps' grace starts here
    )
    unlink(ids)
    # An embedding run's batch holds its progress row while it stores pieces (after its messages' locks, the
    # order taken here too): it commits before this goes on, and the next batch finds the row gone and stops
    # (threadmem/features/embeddings/thread_embedding.py).
    counts["embedding_progress"] = EmbeddingProgress.objects.filter(thread_id__in=ids).delete()[0]
    transaction.on_commit(partial(unlink_files, server_copies(cursors)))
    return ids, counts


def _remove_or_say(ids: list[int], *, record: Callable[[dict[str, int]], T], channel: str) -> T:
    """``_remove``; a failure past the withdrawal says what is left, never that nothing was stored."""
    try:
        return _remove(ids, record=record)
    except DomainError:
        raise
    except Exception as exc:  # whatever stopped it, the thread is withdrawn and rows are left: said so
        logger.exception("deleting thread %r stopped after its withdrawal", channel)
        raise DeletionUnfinished(
            f"thread {channel!r} is withdrawn (no read or search shows it) but some of its rows are still "
            "stored: send DELETE again to finish it (a periodic sweep finishes it otherwise)"
        ) from exc


def _remove(ids: list[int], *, record: Callable[[dict[str, int]], T]) -> T:
    """Steps 2 and 3: the withdrawn threads' messages in batches, then everything else with ``record``'s row."""
    counts: dict[str, int] = {}
    while True:
        removed = _step(ids, _delete_batch)
        if removed is None:
            break
        _add(counts, removed)

    def last(locked: list[int]) -> T:
        _add(counts, delete_threads(locked))
        transaction.on_commit(forget_kept)
        return record(counts)

    return _step(ids, last, empty=NotFound("the thread was deleted meanwhile"))


def _delete_batch(locked: list[int]) -> dict[str, int] | None:
    newest = Message.objects.filter(thread_id__in=locked).order_by("-id").values_list("id", flat=True)
    bound = next(iter(newest[BATCH_MESSAGES - 1 : BATCH_MESSAGES]), None) or newest.last()
    if bound is None:
        return None
    return delete_newest_messages(locked, from_id=bound)


def _step(ids: list[int], work: Callable[[list[int]], T], *, empty: DomainError | None = None) -> T | None:
    """Run ``work`` on the threads still stored among ``ids`` in a transaction that holds their row locks.

    A commit refused because a row was written meanwhile without the lock (a search's log row naming the
    thread) is run again: that row is seen then.
    """
    for attempt in range(1, STEP_ATTEMPTS + 1):
        try:
            with transaction.atomic():
                locked = list(
                    Thread.objects.select_for_update().filter(pk__in=ids).order_by("pk").values_list("pk", flat=True)
                )
                if not locked:
                    if empty is not None:
                        raise empty
                    return None
                return work(locked)
        except IntegrityError:
            if attempt == STEP_ATTEMPTS:
                raise
            logger.info("deleting threads %s: a row written meanwhile, step run again", ids)
    raise AssertionError("unreachable")


def _add(counts: dict, more: dict[str, int]) -> None:
    for name, count in more.items():
        counts[name] = counts.get(name, 0) + count
