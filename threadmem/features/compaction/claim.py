"""Who works on a compaction: the time limits and the claim's lease, taking the claim, giving it back.

``compaction_claim`` is a conditional UPDATE (pending -> running, or a
takeover of a claim whose holder died) under the thread row lock, which also
fixes the cut: the last message present now (``cut_seq``). Only the holder of
the claim may commit (compaction/compacting.py); a failed attempt gives the
claim back (``compaction_release``, for a retry) or marks the compaction
failed (``compaction_fail``), and either way generation N is open again.
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import DateTimeField, F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from threadmem.models import LIVE_STATUSES, Compaction, Generation, Thread

LIVE = tuple(LIVE_STATUSES)
# The hard time limit kills any attempt this long after the soft one.
HARD_LIMIT_EXTRA_SECONDS = 60
LEASE_MARGIN_SECONDS = 30
# The task's retry backoff stops growing here (seconds).
RETRY_BACKOFF_MAX = 600


def soft_time_limit() -> int:
    return int(settings.COMPACTION_TIME_LIMIT)


def hard_time_limit() -> int:
    return soft_time_limit() + HARD_LIMIT_EXTRA_SECONDS


def lease_duration() -> timedelta:
    """How long a claim is trusted: past it, the hard time limit has killed its holder."""
    return timedelta(seconds=hard_time_limit() + LEASE_MARGIN_SECONDS)


def dispatch_timeout() -> timedelta:
    """How long a sent compaction may wait for a worker to start it before it is sent again."""
    return timedelta(seconds=settings.COMPACTION_DISPATCH_TIMEOUT)


def looks_abandoned(compaction: Compaction, now: datetime) -> bool:
    """A live row nobody is working on: its task message was lost, or its holder died unseen.

    A running claim is trusted until its lease ends; a pending row until its
    retry was due (``compaction_release`` sets that) or, never started, for
    one dispatch timeout after it was sent (``compacting.compaction_send`` sets that).
    """
    if compaction.lease_expires_at is not None:
        return compaction.lease_expires_at < now
    return compaction.created_at + dispatch_timeout() < now


# --- claim ------------------------------------------------------------------


def claimant_token() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def holder_is_dead(claimed_by: str) -> bool:
    """True only when the claim's process is known to be gone: same host, no such pid (or a zombie)."""
    try:
        host, pid_text, _ = claimed_by.rsplit(":", 2)
        pid = int(pid_text)
    except ValueError:
        return False
    if host != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


@dataclass(frozen=True)
class Claim:
    compaction_id: int
    thread_id: int
    generation: int
    cut_seq: int
    token: str
    attempt: int


@dataclass(frozen=True)
class Busy:
    """Another attempt holds the claim. ``retry_at`` is set when its holder cannot be checked (another host)."""

    retry_at: datetime | None


def compaction_claim(*, compaction_id: int, lease: timedelta | None = None) -> Claim | Busy | None:
    """Take the compaction for this attempt; None when there is nothing to do (gone, finished, lost the race).

    ``lease``: how long the claim is trusted; a heartbeat renews a short one
    (compaction/recovery.py). Without it, the claim is trusted for the whole
    hard time limit.
    """
    now = timezone.now()
    row = Compaction.objects.filter(pk=compaction_id).first()
    if row is None or row.status not in LIVE:
        return None
    takeover = Q(status=Compaction.Status.PENDING)
    if row.status == Compaction.Status.RUNNING:
        if row.lease_expires_at is not None and row.lease_expires_at < now:
            takeover = Q(status=Compaction.Status.RUNNING, lease_expires_at__lt=now)
        elif not row.claimed_by or holder_is_dead(row.claimed_by):
            takeover = Q(status=Compaction.Status.RUNNING, claimed_by=row.claimed_by)
        else:
            host = row.claimed_by.rsplit(":", 2)[0] if row.claimed_by else ""
            # On this host a live holder finishes, or dies and its own delivery comes back.
            return Busy(retry_at=None if host == socket.gethostname() else row.lease_expires_at)
    token = claimant_token()
    with transaction.atomic():
        thread = Thread.objects.select_for_update().filter(pk=row.thread_id).first()
        if thread is None:
            return None
        cut_seq = thread.next_seq - 1
        claimed = Compaction.objects.filter(takeover, pk=compaction_id).update(
            status=Compaction.Status.RUNNING,
            claimed_by=token,
            lease_expires_at=now + (lease or lease_duration()),
            started_at=Coalesce(F("started_at"), Value(now, output_field=DateTimeField())),
            attempts=F("attempts") + 1,
            cut_seq=cut_seq,
        )
        if not claimed:
            return None
        if thread.current_generation != row.generation:
            Compaction.objects.filter(pk=compaction_id).update(
                status=Compaction.Status.FAILED,
                finished_at=now,
                claimed_by="",
                lease_expires_at=None,
                error=f"generation {row.generation} is no longer the current one",
            )
            return None
        Generation.objects.filter(thread=thread, number=row.generation, state=Generation.State.OPEN).update(
            state=Generation.State.COMPACTING
        )
    return Claim(
        compaction_id=compaction_id,
        thread_id=row.thread_id,
        generation=row.generation,
        cut_seq=cut_seq,
        token=token,
        attempt=row.attempts + 1,
    )


# --- give back --------------------------------------------------------------


def _reopen(claim: Claim) -> None:
    Generation.objects.filter(
        thread_id=claim.thread_id, number=claim.generation, state=Generation.State.COMPACTING
    ).update(state=Generation.State.OPEN)


def compaction_release(*, claim: Claim, reason: str) -> None:
    """Give the claim back for a retry: pending again, generation open, the reason kept.

    ``lease_expires_at`` now says by when the retry must have started (the
    longest backoff, then one lease); past it a new request enqueues again.
    """
    retry_due = timezone.now() + timedelta(seconds=RETRY_BACKOFF_MAX) + lease_duration()
    with transaction.atomic():
        released = Compaction.objects.filter(
            pk=claim.compaction_id, status=Compaction.Status.RUNNING, claimed_by=claim.token
        ).update(
            status=Compaction.Status.PENDING,
            claimed_by="",
            lease_expires_at=retry_due,
            error=f"attempt {claim.attempt} failed, retrying: {reason}",
        )
        if released:
            _reopen(claim)


def compaction_fail(*, claim: Claim, reason: str) -> None:
    """The final word: failed with the reason; generation N open and usable, nothing written."""
    with transaction.atomic():
        failed = Compaction.objects.filter(
            pk=claim.compaction_id, status=Compaction.Status.RUNNING, claimed_by=claim.token
        ).update(
            status=Compaction.Status.FAILED,
            finished_at=timezone.now(),
            claimed_by="",
            lease_expires_at=None,
            error=f"attempt {claim.attempt} failed: {reason}",
        )
        if failed:
            _reopen(claim)
