"""Compaction: request, claim, summarize, commit (contract §4).

One compaction turns generation N of a thread into a closed generation and
opens N+1 with the summary:

1. ``compaction_request`` creates the Compaction row (at most one live per
   generation: a second request gets the live one and its task id) and
   enqueues the task on commit.
2. ``compaction_claim`` (compaction/claim.py): a conditional UPDATE (pending -> running, or a
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
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from kombu.exceptions import OperationalError as KombuOperationalError

from threadmem.domain.redaction import text_redacted
from threadmem.domain.services import create_unless_conflicting
from threadmem.errors import Conflict, ServiceUnavailable
from threadmem.features.compaction import selectors as compaction_selectors
from threadmem.features.compaction.claim import (
    LIVE,
    Busy,
    Claim,
    compaction_claim,
    compaction_fail,
    compaction_release,
    dispatch_timeout,
    looks_abandoned,
)

# The claim's token and lease belong to compaction/claim.py; callers of
# this module (and its tests) read them here too.
from threadmem.features.compaction.claim import claimant_token as claimant_token
from threadmem.features.compaction.claim import lease_duration as lease_duration
from threadmem.features.compaction.lease import claim_heartbeat, heartbeat_lease
from threadmem.features.compaction.summary import Summary, summarize
from threadmem.infrastructure import llm
from threadmem.models import Compaction, Generation, Message, Thread

logger = logging.getLogger(__name__)

# After a failed automatic compaction, appends do not trigger another one for this long.
AUTO_RETRY_AFTER_FAILURE = timedelta(minutes=10)
# Errors worth another attempt after a backoff (the task's autoretry_for). A
# garbage or empty answer counts: proxies answer HTML error pages, and loaded
# local servers return empty completions.
RETRYABLE_ERRORS: tuple[type[Exception], ...] = (*llm.TRANSIENT_ERRORS, llm.LLMBadResponse, SoftTimeLimitExceeded)


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
    # Until a worker claims it, the row waits one dispatch timeout per sending: a lost task message is
    # sent again soon, one stuck behind a long queue about once a timeout (claim.looks_abandoned).
    Compaction.objects.filter(pk=compaction.pk, status=Compaction.Status.PENDING).update(
        lease_expires_at=timezone.now() + dispatch_timeout()
    )
    try:
        run_enqueuer(compaction)
    except KombuOperationalError as exc:
        Compaction.objects.filter(pk=compaction.pk, status=Compaction.Status.PENDING, started_at__isnull=True).delete()
        logger.warning("compaction %s of thread %s not queued: %s", compaction.pk, compaction.thread_id, exc)
        raise ServiceUnavailable(
            f"the task broker did not take the compaction ({exc}); nothing was queued: try again"
        ) from exc


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
        compaction = create_unless_conflicting(
            Compaction,
            thread=locked,
            generation=number,
            trigger=trigger,
            requested_by=requested_by if requested_by is not None and requested_by.pk else None,
            task_id=str(uuid.uuid4()),
        )
        if compaction is None:
            # A request that raced past the row lock (it cannot on PostgreSQL or SQLite; belt and braces).
            return Compaction.objects.get(thread=locked, generation=number, status__in=LIVE)
        if enqueue:
            transaction.on_commit(partial(compaction_send, compaction))
    return compaction


# --- commit (the claim: compaction/claim.py) --------------------------------


class SourceWithdrawn(Exception):
    """Something the summary was written from was isolated (or rewritten) after it was read: summarize again."""


def compaction_commit(*, claim: Claim, summary: Summary) -> Message | None:
    """Write the summary and switch generations, if this attempt still holds the claim.

    Raises SourceWithdrawn, writing nothing, when an isolation made since the
    input was read touched it (``compaction_selectors.source_withdrawn``).
    """
    with transaction.atomic():
        thread = Thread.objects.select_for_update().filter(pk=claim.thread_id).first()
        if thread is None or thread.current_generation != claim.generation:
            return None
        if compaction_selectors.source_withdrawn(thread_id=thread.pk, source=summary.source):
            raise SourceWithdrawn(f"compaction {claim.compaction_id}: its input changed by an isolation")
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
            content=text_redacted(summary.content),  # its input may predate redaction; a model may write one out
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
    while True:
        summary_or_outcome = _summarize_claimed(claim, lease=lease, final_attempt=final_attempt)
        if isinstance(summary_or_outcome, Outcome):
            return summary_or_outcome
        try:
            message = compaction_commit(claim=claim, summary=summary_or_outcome)
        except SourceWithdrawn:
            # An isolation while the model wrote: the summary may quote it. Read the input again.
            logger.info("compaction %s: input isolated while summarizing, summarizing again", compaction_id)
            continue
        if message is None:
            return Outcome("skipped", "the claim was taken over before the commit")
        return Outcome("succeeded", f"summary messageId={message.id}")


def _summarize_claimed(claim: Claim, *, lease: timedelta | None, final_attempt: bool) -> Summary | Outcome:
    """Read the claimed generation's input and summarize it; an Outcome when the attempt ends here."""
    compaction_id = claim.compaction_id
    try:
        thread = Thread.objects.get(pk=claim.thread_id)
        data = compaction_selectors.generation_input(thread=thread, generation=claim.generation, cut_seq=claim.cut_seq)
        with (
            claim_heartbeat(compaction_id=claim.compaction_id, token=claim.token, lease=lease)
            if lease is not None
            else contextlib.nullcontext()
        ):
            return summarize(data)
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
