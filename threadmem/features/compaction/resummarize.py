"""Re-summarizing after isolation: a summary must not keep quoting a message isolated after it was written.

contract §1: an isolated message disappears from every model-facing read, and a
summary that quoted it is rewritten without it. Isolating a message of a
compacted generation asks for a re-summary (a Compaction row with trigger
``isolation``, run by a task like any compaction): the generation is
summarized again from what the model may still see, the new summary message
supersedes the old one (which stays stored, flagged, for operators), and the
generation points at the new one. Each later compacted generation was
summarized from the old summary, so it is summarized again too, in order.

A fork's first generation was summarized from its parent's context at the
fork point, so isolating a parent's message at or before that point (or the
whole parent thread) asks the same of every fork holding it, and of their
forks in turn.

The hooks take the row lock of every thread they ask for; a commit (this
module's, and ``compacting.compaction_commit``) checks under the same lock that
what it summarized is still all visible (``source_withdrawn``). So an
isolation is either seen by the commit, which summarizes again, or sees the
summary committed and asks for its rewrite; never neither.
"""

from __future__ import annotations

import uuid
from functools import partial

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from threadmem.domain.redaction import text_redacted
from threadmem.domain.services import create_unless_conflicting
from threadmem.features.compaction import compacting
from threadmem.features.compaction import selectors as compaction_selectors
from threadmem.features.compaction.claim import LIVE, lease_duration
from threadmem.features.compaction.summary import Summary, summarize
from threadmem.models import Compaction, Generation, Message, Thread

TRIGGER = "isolation"


# --- asking -------------------------------------------------------------------


def resummarize_after_isolation(message: Message, actor: AbstractBaseUser) -> Compaction | None:
    """``services.after_isolation_hooks``: rewrite every summary ``message`` reached; answer the thread's own."""
    if not message.isolated:
        return None
    forks = forks_holding(message)
    _lock([message.thread_id, *(fork.pk for fork in forks)])
    own = _ask(thread_id=message.thread_id, generation=message.generation, actor=actor)
    for fork in forks:
        _ask(thread_id=fork.pk, generation=_first_generation(fork), actor=actor)
    return own


def resummarize_after_thread_isolation(thread: Thread, actor: AbstractBaseUser) -> list[Compaction]:
    """``services.after_thread_isolation_hooks``: a fork's summaries lose an isolated parent's context."""
    if not thread.isolated:
        return []
    forks = _descendants(list(Thread.objects.filter(parent_id=thread.pk).select_related("fork_message")))
    _lock([fork.pk for fork in forks])
    asked = (_ask(thread_id=fork.pk, generation=_first_generation(fork), actor=actor) for fork in forks)
    return [compaction for compaction in asked if compaction is not None]


def forks_holding(message: Message) -> list[Thread]:
    """Every fork whose context held ``message``, transitively: their summaries were written from it."""
    return _descendants(_forks_holding(message))


def _forks_holding(message: Message) -> list[Thread]:
    """The parent's direct forks whose context held ``message``: forked at or after it."""
    at_or_after = Q(fork_message__generation__gt=message.generation) | Q(
        fork_message__generation=message.generation, fork_message__seq__gte=message.seq
    )
    if message.kind == Message.Kind.SUMMARY:  # an opening summary leads every fork of its generation
        at_or_after |= Q(fork_message__generation=message.generation)
    return list(Thread.objects.filter(at_or_after, parent_id=message.thread_id).select_related("fork_message"))


def _descendants(forks: list[Thread]) -> list[Thread]:
    """``forks`` and every fork of theirs, transitively: all of a fork's history follows its fork point."""
    found = {fork.pk: fork for fork in forks}
    level = list(found)
    while level:
        children = Thread.objects.filter(parent_id__in=level).exclude(pk__in=found).select_related("fork_message")
        level = []
        for child in children:
            found[child.pk] = child
            level.append(child.pk)
    return [found[pk] for pk in sorted(found)]


def _first_generation(fork: Thread) -> int:
    """A fork starts at its fork message's generation (services.thread_create)."""
    return fork.fork_message.generation


def _lock(thread_ids: list[int]) -> None:
    """The row locks the commits take, in id order (two isolations never wait on each other in a cycle)."""
    list(Thread.objects.select_for_update().filter(pk__in=thread_ids).order_by("pk").values_list("pk", flat=True))


def _ask(*, thread_id: int, generation: int, actor: AbstractBaseUser) -> Compaction | None:
    """A re-summary from ``generation`` on when that generation was compacted; a live one is reused.

    A live re-summary starting later is moved back to ``generation``: it reads
    its row before it finishes and makes one more pass. Under the thread's
    row lock (``_lock``).
    """
    if not Generation.objects.filter(thread_id=thread_id, number=generation, summary_message__isnull=False).exists():
        return None  # nothing summarized yet; a compaction running now checks its input at commit
    live = Compaction.objects.filter(thread_id=thread_id, trigger=TRIGGER, status__in=LIVE).first()
    if live is not None:
        if live.generation > generation:
            Compaction.objects.filter(pk=live.pk).update(generation=generation)
            live.generation = generation
        return live
    compaction = create_unless_conflicting(
        Compaction,
        thread_id=thread_id,
        generation=generation,
        trigger=TRIGGER,
        requested_by=actor if actor.pk else None,
        task_id=str(uuid.uuid4()),
    )
    if compaction is None:  # a stale compaction of the closed generation holds the live slot
        return Compaction.objects.filter(thread_id=thread_id, generation=generation, status__in=LIVE).first()
    transaction.on_commit(partial(compacting.compaction_send, compaction), robust=True)
    return compaction


# --- running ------------------------------------------------------------------


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
    first: Message | None = None
    start: int | None = Compaction.objects.get(pk=compaction_id).generation
    try:
        while start is not None:
            thread = Thread.objects.get(pk=Compaction.objects.get(pk=compaction_id).thread_id)
            end = thread.current_generation
            written: dict[int, Summary] = {}
            for number in range(start, end):
                rewritten = _resummarize_generation(thread, number)
                if rewritten is None:
                    break
                message, written[number] = rewritten
                first = first or message
            start = _finish(compaction_id, start=start, end=end, written=written, first=first)
    except Exception as exc:
        Compaction.objects.filter(pk=compaction_id).update(
            status=Compaction.Status.FAILED, finished_at=timezone.now(), error=f"{type(exc).__name__}: {exc}"
        )
        raise
    return first


def _finish(
    compaction_id: int, *, start: int, end: int, written: dict[int, Summary], first: Message | None
) -> int | None:
    """Mark the re-summary succeeded, unless something since asks for another pass: answer where it starts.

    Another pass when, under the thread's row lock, an isolation moved the
    row back, a summary just written lost part of its input, or a compaction
    closed the generation that was current (it may have read an old summary).
    """
    thread_id = Compaction.objects.values_list("thread_id", flat=True).get(pk=compaction_id)
    with transaction.atomic():
        thread = Thread.objects.select_for_update().get(pk=thread_id)
        row = Compaction.objects.get(pk=compaction_id)  # read under the lock the hook moves it under
        again = [row.generation] if row.generation < start else []
        withdrawn = (
            n
            for n, summary in sorted(written.items())
            if compaction_selectors.source_withdrawn(thread_id=thread.pk, source=summary.source)
        )
        again += [n for n in [next(withdrawn, None)] if n is not None]
        if thread.current_generation != end:
            again.append(end)
        if again:
            return min(again)
        Compaction.objects.filter(pk=compaction_id).update(
            status=Compaction.Status.SUCCEEDED, finished_at=timezone.now(), summary_message=first
        )
    return None


def _resummarize_generation(thread: Thread, number: int) -> tuple[Message, Summary] | None:
    """Write generation ``number``'s summary again from what the model may see now; None if it has none."""
    if not Generation.objects.filter(thread=thread, number=number, summary_message__isnull=False).exists():
        return None
    while True:
        # Every message of a closed generation is below the next seq; its opening summary is read whatever its seq.
        data = compaction_selectors.generation_input(thread=thread, generation=number, cut_seq=thread.next_seq)
        summary = summarize(data)
        with transaction.atomic():
            locked = Thread.objects.select_for_update().get(pk=thread.pk)
            if compaction_selectors.source_withdrawn(thread_id=locked.pk, source=summary.source):
                continue  # isolated while the model wrote: read the input again
            generation = Generation.objects.get(thread=locked, number=number)
            Thread.objects.filter(pk=locked.pk).update(next_seq=F("next_seq") + 1)
            message = Message.objects.create(
                thread=locked,
                generation=number + 1,
                seq=locked.next_seq,
                role=Message.Role.USER,
                kind=Message.Kind.SUMMARY,
                content=text_redacted(summary.content),  # its input may predate redaction; a model may write one out
            )
            Message.objects.filter(pk=generation.summary_message_id).update(superseded_by=message)
            Generation.objects.filter(pk=generation.pk).update(summary_message=message)
        return message, summary
