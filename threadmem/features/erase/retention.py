"""Retention: threads idle for longer than THREADMEM_RETENTION_DAYS are deleted (unset: kept forever).

A thread goes with its forks, and only once every one of them is idle past
the limit: an active fork keeps its ancestry. The periodic task
(the task ``threadmem.erase.retention``, Celery beat) and ``manage.py retention``
run the same selection. Deletions that stopped half way are finished by
every run, whatever the limit; the sweep task finishes them whether or not
retention is on.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from threadmem.errors import DomainError
from threadmem.features.erase.thread_delete import family, finish_withdrawn, thread_delete, withdrawn_stale
from threadmem.models import WITHDRAWN_PREFIX, Deletion, Thread


def retention_due(*, days: int, now=None) -> list[list[Thread]]:
    """The families (a thread with its forks) idle for longer than ``days``, roots first, oldest first."""
    cutoff = (now or timezone.now()) - timedelta(days=days)
    idle = Thread.objects.filter(last_activity_at__lt=cutoff).exclude(channel__startswith=WITHDRAWN_PREFIX)
    # Roots of idle families: an idle thread whose parent is not idle (or that has none).
    roots = idle.filter(Q(parent__isnull=True) | Q(parent__last_activity_at__gte=cutoff)).order_by("last_activity_at")
    due = []
    for root in roots.select_related("owner"):
        members = family(root)
        if all(t.last_activity_at < cutoff for t in members):
            due.append(members)
    return due


def unfinished_deletions() -> list[Thread]:
    """Withdrawn threads whose deletion stopped half way: the next run (or the sweep) finishes them."""
    return withdrawn_stale()


def retention_run(*, days: int | None = None, now=None) -> list[Deletion]:
    """Delete what retention lets go; answer the deletions' records."""
    records = finish_withdrawn(surface="retention")  # what a stopped deletion left goes first, whatever the limit
    days = settings.THREADMEM_RETENTION_DAYS if days is None else days
    if not days:
        return records
    now = now or timezone.now()
    cutoff = now - timedelta(days=days)
    for members in retention_due(days=days, now=now):
        try:
            records.append(
                thread_delete(thread=members[0], actor=None, with_forks=True, surface="retention", idle_before=cutoff)
            )
        except DomainError:
            continue  # appended to or forked since it was selected: no longer due, or due at the next run
    return records
