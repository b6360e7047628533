"""Re-summarizing after isolation: a summary must not keep quoting a message isolated after it was written.

SPEC §1: an isolated message disappears from every model-facing read, and a
summary that quoted it is rewritten without it. Isolating a message of a
compacted generation asks for a re-summary (a Compaction row with trigger
``isolation``, run by a task like any compaction): the generation is
summarized again from what the model may still see, the new summary message
supersedes the old one (which stays stored, flagged, for operators), and the
generation points at the new one. Each later compacted generation was
summarized from the old summary, so it is summarized again too, in order.
An isolation arriving while a re-summary runs is picked up by one more pass.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from functools import partial

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from threadmem.compaction import selectors as compaction_selectors
from threadmem.compaction import service
from threadmem.compaction.claim import LIVE, lease_duration
from threadmem.compaction.summary import summarize
from threadmem.models import Compaction, Generation, IsolationEvent, Message, Thread

TRIGGER = "isolation"


def resummarize_after_isolation(message: Message, actor: AbstractBaseUser) -> Compaction | None:
    """``services.after_isolation_hooks``: ask for a re-summary when ``message``'s generation was compacted."""
    if not message.isolated:
        return None
    summarized = Generation.objects.filter(
        thread_id=message.thread_id, number=message.generation, summary_message__isnull=False
    ).exists()
    if not summarized:
        return None
    live = Compaction.objects.filter(
        thread_id=message.thread_id, generation=message.generation, status__in=LIVE
    ).first()
    if live is not None:  # a running re-summary looks for isolations made after it started
        return live
    compaction = Compaction.objects.create(
        thread_id=message.thread_id,
        generation=message.generation,
        trigger=TRIGGER,
        requested_by=actor if actor.pk else None,
        task_id=str(uuid.uuid4()),
    )
    transaction.on_commit(partial(service.compaction_send, compaction), robust=True)
    return compaction


def resummarize_run(*, compaction_id: int) -> Message | None:
    """Summarize the re-summary's generation and every later compacted one again; answer the first new summary."""
    now = timezone.now()
    # Pending, or running for longer than any attempt may (its worker died): this attempt takes it.
    takeover = Q(status=Compaction.Status.PENDING) | Q(
        status=Compaction.Status.RUNNING, started_at__lt=now - lease_duration()
    )
    if not Compaction.objects.filter(takeover, pk=compaction_id, trigger=TRIGGER).update(
        status=Compaction.Status.RUNNING, started_at=now, attempts=F("attempts") + 1
    ):
        return None  # another delivery has it, or it is done
    row = Compaction.objects.get(pk=compaction_id)
    first: Message | None = None
    since: datetime = now
    try:
        while True:
            thread = Thread.objects.get(pk=row.thread_id)
            for number in range(row.generation, thread.current_generation):
                written = _resummarize_generation(thread, number)
                if written is None:
                    break
                first = first or written
            # An isolation made while this ran may be in a summary just written: one more pass.
            newer = IsolationEvent.objects.filter(
                thread_id=row.thread_id, message__generation__gte=row.generation, isolated=True, created_at__gt=since
            )
            if not newer.exists():
                break
            since = timezone.now()
    except Exception as exc:
        Compaction.objects.filter(pk=compaction_id).update(
            status=Compaction.Status.FAILED, finished_at=timezone.now(), error=f"{type(exc).__name__}: {exc}"
        )
        raise
    Compaction.objects.filter(pk=compaction_id).update(
        status=Compaction.Status.SUCCEEDED, finished_at=timezone.now(), summary_message=first
    )
    return first


def _resummarize_generation(thread: Thread, number: int) -> Message | None:
    """Write generation ``number``'s summary again from what the model may see now; None if it has none."""
    generation = Generation.objects.filter(thread=thread, number=number, summary_message__isnull=False).first()
    if generation is None:
        return None
    data = compaction_selectors.generation_input(thread=thread, generation=number, cut_seq=thread.next_seq)
    summary = summarize(data)
    with transaction.atomic():
        locked = Thread.objects.select_for_update().get(pk=thread.pk)
        Thread.objects.filter(pk=locked.pk).update(next_seq=F("next_seq") + 1)
        old = generation.summary_message
        message = Message.objects.create(
            thread=locked,
            generation=number + 1,
            seq=locked.next_seq,
            role=Message.Role.USER,
            kind=Message.Kind.SUMMARY,
            content=summary.content,
        )
        Message.objects.filter(pk=old.pk).update(superseded_by=message)
        Generation.objects.filter(pk=generation.pk).update(summary_message=message)
    return message
