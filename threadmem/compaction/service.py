"""Compaction: request, claim, summarize, commit (SPEC §4).

One compaction turns generation N of a thread into a closed generation and
opens N+1 with the summary:

1. ``compaction_request`` creates the Compaction row (at most one live per
   generation: a second request gets the live one and its task id) and
   enqueues the task on commit.
2. ``compaction_claim``: a conditional UPDATE (pending -> running, or a
   takeover of a claim whose holder died) under the thread row lock, which
   also fixes the cut: the last message present now (``cut_seq``).
3. The summary is written with no transaction open (the model call may take
   minutes; appends go on meanwhile, into generation N).
4. ``compaction_commit``, in one transaction under the thread row lock, and
   only if this attempt still holds the claim: the summary message opens
   N+1, N is closed, ``current_generation`` moves to N+1 and the messages
   of N that arrived after the cut move to N+1 (their seqs keep the order).
   Appends take the same row lock, so each lands wholly before or after.

Exactly one new generation per compaction, whatever runs twice: only the
holder of the claim may commit, and a generation has at most one succeeded
compaction (a database constraint). A failed attempt gives the claim back
(retry) or marks the compaction failed; either way generation N is open
again and nothing was written.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, transaction
from django.db.models import DateTimeField, F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from kombu.exceptions import OperationalError as KombuOperationalError

from threadmem import llm
from threadmem.compaction import selectors as compaction_selectors
from threadmem.compaction.lease import claim_heartbeat, heartbeat_lease
from threadmem.compaction.summary import Summary, summarize
from threadmem.errors import Conflict, ServiceUnavailable
from threadmem.models import Compaction, Generation, Message, Thread

logger = logging.getLogger(__name__)

LIVE = (Compaction.Status.PENDING, Compaction.Status.RUNNING)
# The hard time limit kills any attempt this long after the soft one.
HARD_LIMIT_EXTRA_SECONDS = 60
LEASE_MARGIN_SECONDS = 30
# The task's retry backoff stops growing here (seconds).
RETRY_BACKOFF_MAX = 600
# After a failed automatic compaction, appends do not trigger another one for this long.
AUTO_RETRY_AFTER_FAILURE = timedelta(minutes=10)
# Errors worth another attempt after a backoff (the task's autoretry_for). A
# garbage or empty answer counts: proxies answer HTML error pages, and loaded
# local servers return empty completions.
RETRYABLE_ERRORS: tuple[type[Exception], ...] = (*llm.TRANSIENT_ERRORS, llm.LLMBadResponse, SoftTimeLimitExceeded)


def soft_time_limit() -> int:
    return int(settings.THREADMEM_COMPACTION_TIME_LIMIT)


def hard_time_limit() -> int:
    return soft_time_limit() + HARD_LIMIT_EXTRA_SECONDS


def lease_duration() -> timedelta:
    """How long a claim is trusted: past it, the hard time limit has killed its holder."""
    return timedelta(seconds=hard_time_limit() + LEASE_MARGIN_SECONDS)


# --- request ----------------------------------------------------------------


# Sends a compaction to the worker: tasks.compaction_enqueue, which apps.py
# hands over when the app is ready. The task module imports this one, so this
# one does not import it back.
run_enqueuer: Callable[[Compaction], None] | None = None


def compaction_send(compaction: Compaction) -> None:
    """Send the compaction's task (on commit); when the broker cannot take it, release the request.

    A pending row whose task never reached the broker would hold the
    generation's one live slot for a whole lease, answering every later
    request with a dead task id. So a row that never started is deleted and
    the caller told (503): the next request, or the next append's automatic
    check, tries again at once.
    """
    if run_enqueuer is None:
        raise ImproperlyConfigured("compaction has no task to enqueue: threadmem's AppConfig.ready() sets it")
    try:
        run_enqueuer(compaction)
    except KombuOperationalError as exc:
        Compaction.objects.filter(pk=compaction.pk, status=Compaction.Status.PENDING, started_at__isnull=True).delete()
        logger.warning("compaction %s of thread %s not queued: %s", compaction.pk, compaction.thread_id, exc)
        raise ServiceUnavailable(
            f"the task broker did not take the compaction ({exc}); nothing was queued: try again"
        ) from exc


def looks_abandoned(compaction: Compaction, now: datetime) -> bool:
    """A live row nobody is working on: its task message was lost, or its holder died unseen.

    A running claim is trusted until its lease ends; a pending row until its
    retry was due (``compaction_release`` sets that) or, never tried, for one lease.
    """
    if compaction.lease_expires_at is not None:
        return compaction.lease_expires_at < now
    return compaction.created_at + lease_duration() < now


def compaction_request(
    *,
    thread: Thread,
    requested_by: AbstractBaseUser | None = None,
    trigger: str = "api",
    enqueue: bool = True,
) -> Compaction:
    """Ask for a compaction of the thread's current generation; the task runs after commit.

    A request while one is live answers with that one (same ``task_id``);
    a generation with nothing but its opening summary raises Conflict (409).
    """
    now = timezone.now()
    with transaction.atomic():
        locked = Thread.objects.select_for_update().get(pk=thread.pk)
        number = locked.current_generation
        live = Compaction.objects.filter(thread=locked, generation=number, status__in=LIVE).first()
        if live is not None:
            if enqueue and looks_abandoned(live, now):
                transaction.on_commit(partial(compaction_send, live))
            return live
        has_messages = (
            Message.objects.filter(thread=locked, generation=number).exclude(kind=Message.Kind.SUMMARY).exists()
        )
        if not has_messages:
            raise Conflict(f"nothing to compact in generation {number}: it has no messages since its summary")
        try:
            with transaction.atomic():
                compaction = Compaction.objects.create(
                    thread=locked,
                    generation=number,
                    trigger=trigger,
                    requested_by=requested_by if requested_by is not None and requested_by.pk else None,
                    task_id=str(uuid.uuid4()),
                )
        except IntegrityError:
            # A request that raced past the row lock (it cannot on PostgreSQL or SQLite; belt and braces).
            return Compaction.objects.get(thread=locked, generation=number, status__in=LIVE)
        if enqueue:
            transaction.on_commit(partial(compaction_send, compaction))
    return compaction


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


# --- finish -----------------------------------------------------------------


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


def compaction_commit(*, claim: Claim, summary: Summary) -> Message | None:
    """Write the summary and switch generations, if this attempt still holds the claim."""
    with transaction.atomic():
        thread = Thread.objects.select_for_update().filter(pk=claim.thread_id).first()
        if thread is None or thread.current_generation != claim.generation:
            return None
        now = timezone.now()
        won = Compaction.objects.filter(
            pk=claim.compaction_id, status=Compaction.Status.RUNNING, claimed_by=claim.token
        ).update(
            status=Compaction.Status.SUCCEEDED,
            finished_at=now,
            claimed_by="",
            lease_expires_at=None,
            model=summary.model[:255],
            input_chars=summary.input_chars,
            output_chars=len(summary.content),
            error="",
        )
        if not won:
            return None
        following = claim.generation + 1
        seq = thread.next_seq
        Thread.objects.filter(pk=thread.pk).update(next_seq=F("next_seq") + 1, current_generation=following)
        message = Message.objects.create(
            thread=thread,
            generation=following,
            seq=seq,
            role=Message.Role.USER,
            kind=Message.Kind.SUMMARY,
            content=summary.content,
            created_at=now,
        )
        Generation.objects.filter(thread=thread, number=claim.generation).update(
            state=Generation.State.CLOSED, closed_at=now, summary_message=message
        )
        Message.objects.filter(thread=thread, generation=claim.generation, seq__gt=claim.cut_seq).update(
            generation=following
        )
        # The new generation's running total starts with what it now holds:
        # the summary and any late arrivals just moved here.
        Generation.objects.create(
            thread=thread,
            number=following,
            visible_chars=compaction_selectors.messages_visible_chars(thread=thread, generation=following),
        )
        Compaction.objects.filter(pk=claim.compaction_id).update(summary_message=message)
    return message


# --- run --------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    status: str  # succeeded, failed, skipped, busy
    detail: str = ""
    retry_at: datetime | None = None


def compaction_run(*, compaction_id: int, final_attempt: bool = True, heartbeat: bool = False) -> Outcome:
    """One attempt: claim, summarize with no transaction open, commit.

    A retryable model error gives the claim back and re-raises (the task
    retries it with backoff), unless this is the final attempt: then the
    compaction is marked failed with the reason. Any other error fails it.
    ``heartbeat`` (workers): a short lease, renewed while the attempt works,
    so a killed worker's claim runs out quickly (compaction/recovery.py).
    """
    lease = heartbeat_lease() if heartbeat else None
    claim = compaction_claim(compaction_id=compaction_id, lease=lease)
    if claim is None:
        return Outcome("skipped", "nothing to do: gone, finished, or claimed by another attempt")
    if isinstance(claim, Busy):
        return Outcome("busy", "another attempt holds the claim", retry_at=claim.retry_at)
    try:
        thread = Thread.objects.get(pk=claim.thread_id)
        data = compaction_selectors.generation_input(thread=thread, generation=claim.generation, cut_seq=claim.cut_seq)
        with (
            claim_heartbeat(compaction_id=claim.compaction_id, token=claim.token, lease=lease)
            if lease is not None
            else contextlib.nullcontext()
        ):
            summary = summarize(data)
    except RETRYABLE_ERRORS as exc:
        if final_attempt:
            compaction_fail(claim=claim, reason=str(exc))
            return Outcome("failed", str(exc))
        compaction_release(claim=claim, reason=str(exc))
        raise
    except Thread.DoesNotExist:
        return Outcome("skipped", "the thread is gone")
    except llm.LLMError as exc:
        compaction_fail(claim=claim, reason=str(exc))
        return Outcome("failed", str(exc))
    except Exception as exc:
        logger.exception("compaction %s failed", compaction_id)
        compaction_fail(claim=claim, reason=f"internal error: {type(exc).__name__}: {exc}")
        return Outcome("failed", f"internal error: {type(exc).__name__}")
    message = compaction_commit(claim=claim, summary=summary)
    if message is None:
        return Outcome("skipped", "the claim was taken over before the commit")
    return Outcome("succeeded", f"summary messageId={message.id}")


def compaction_run_now(
    *, thread: Thread, trigger: str = "manual", requested_by: AbstractBaseUser | None = None
) -> Compaction:
    """Request and run in this process (the demo, scripts); the compaction row tells the outcome."""
    compaction = compaction_request(thread=thread, requested_by=requested_by, trigger=trigger, enqueue=False)
    compaction_run(compaction_id=compaction.id, final_attempt=True)
    compaction.refresh_from_db()
    return compaction


# --- automatic trigger -------------------------------------------------------


def compaction_auto_after_append(thread: Thread) -> None:
    """``services.after_append_hooks``: request a compaction once the generation passes the threshold.

    One aggregate query per append below the threshold; above it, one more
    to skip while a compaction is live or failed recently (so a broken model
    is not called again on every append).
    """
    generation = thread.current_generation
    size = compaction_selectors.generation_visible_chars(thread=thread, generation=generation)
    if size <= settings.THREADMEM_COMPACT_AT_CHARS:
        return
    recent_failure = Q(status=Compaction.Status.FAILED, finished_at__gte=timezone.now() - AUTO_RETRY_AFTER_FAILURE)
    if Compaction.objects.filter(Q(status__in=LIVE) | recent_failure, thread=thread, generation=generation).exists():
        return
    with contextlib.suppress(Conflict):  # the generation has only its summary: nothing to do
        compaction_request(thread=thread, trigger="auto")
