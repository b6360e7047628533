"""The writes an import needs beside appends: a generation boundary, the agent's own summary, a grown message.

Each takes the thread's row lock, as appends and compaction do, and is
idempotent by source id: re-importing a file repeats none of them. Inside
an import's transaction they set no savepoint of their own (a failure ends
the whole transaction, which the import then rolls back): a savepoint is
two more round trips per call.
"""

from __future__ import annotations

import json

from django.db import transaction
from django.db.models import Count, F
from django.db.models.functions import Greatest
from django.utils import timezone

from threadmem.domain.redaction import messages_redact
from threadmem.domain.services import MessageIn
from threadmem.lib.jsonleaves import string_leaves
from threadmem.models import Chunk, EmbeddingProgress, Generation, Message, Thread, ToolArgument


def _locked(thread: Thread) -> Thread:
    return Thread.objects.select_for_update().get(pk=thread.pk)


def _follow(thread: Thread, locked: Thread) -> None:
    """The caller's instance takes the values the locked one wrote (no query)."""
    thread.next_seq, thread.current_generation = locked.next_seq, locked.current_generation
    thread.last_activity_at = locked.last_activity_at


def _holds(thread: Thread, source_id: str) -> bool:
    return bool(source_id) and Message.objects.filter(thread=thread, source_id=source_id).exists()


def _close_current(thread: Thread, *, now) -> int:
    """Close the locked thread's current generation and open the next (empty); answer its number.

    The thread row is written with its ``next_seq`` as the instance holds it
    (``_insert`` counts it up without a query of its own).
    """
    closing = thread.current_generation
    following = closing + 1
    Generation.objects.filter(thread=thread, number=closing).update(state=Generation.State.CLOSED, closed_at=now)
    Generation.objects.create(thread=thread, number=following)
    Thread.objects.filter(pk=thread.pk).update(
        current_generation=following, last_activity_at=now, next_seq=thread.next_seq
    )
    thread.current_generation, thread.last_activity_at = following, now
    return following


def _insert(thread: Thread, message: MessageIn, *, generation: int, now, **extra: object) -> Message:
    """Store the message at the locked thread's next seq; the caller writes ``thread.next_seq`` to the row."""
    seq = thread.next_seq
    thread.next_seq = seq + 1
    stored = Message.objects.create(
        thread=thread,
        generation=generation,
        seq=seq,
        role=message.role,
        kind=extra.pop("kind", message.kind),
        content=message.content,
        session_id=message.session_id,
        source_id=message.source_id,
        model_visible=message.model_visible,
        created_at=now,
        **extra,
    )
    if message.model_visible:
        Generation.objects.filter(thread=thread, number=generation).update(
            visible_chars=F("visible_chars") + message.size
        )
    return stored


def generation_close_imported(*, thread: Thread, event: MessageIn) -> bool:
    """An imported compaction boundary: ``event`` ends the current generation, which closes; the next opens.

    Answers False (and changes nothing) when the thread already holds the event.
    """
    messages_redact([event])
    with transaction.atomic(savepoint=False):
        locked = _locked(thread)
        if _holds(locked, event.source_id):
            return False
        now = timezone.now()
        _insert(locked, event, generation=locked.current_generation, now=now)
        _close_current(locked, now=now)
    _follow(thread, locked)
    return True


def generation_summary_imported(*, thread: Thread, summary: MessageIn, origin: str) -> Message | None:
    """The agent's own summary opens the current generation, as a compaction's does (contract §4).

    It is stored as ``kind=summary`` with ``summary_origin`` naming the agent,
    and becomes ``summary_message`` of the generation it summarizes (the one
    before). A summary with no boundary before it (the previous generation
    already has one, or there is none) closes the current generation first.
    Answers None when the thread already holds it.
    """
    messages_redact([summary])
    with transaction.atomic(savepoint=False):
        locked = _locked(thread)
        if _holds(locked, summary.source_id):
            return None
        now = timezone.now()
        previous = Generation.objects.filter(thread=locked, number=locked.current_generation - 1).first()
        opened = Message.objects.filter(thread=locked, generation=locked.current_generation).exists()
        if previous is None or previous.summary_message_id is not None or opened:
            _close_current(locked, now=now)
        stored = _insert(
            locked,
            summary,
            generation=locked.current_generation,
            now=now,
            kind=Message.Kind.SUMMARY,
            summary_origin=origin,
        )
        Generation.objects.filter(thread=locked, number=locked.current_generation - 1).update(
            summary_message=stored, state=Generation.State.CLOSED
        )
        Thread.objects.filter(pk=locked.pk).update(next_seq=locked.next_seq)
    _follow(thread, locked)
    return stored


def message_grow_imported(*, thread: Thread, message_id: int, message: MessageIn) -> None:
    """A streamed message imported before all its blocks were written: store it as it is now.

    Its tool-argument leaves are rewritten and its embedded pieces dropped;
    every model's ``embedded_seq`` ("everything up to here is embedded") goes
    back to just before it, so the next embedding run (the hook after the
    file, or the backfill) embeds it again, and skips the later messages that
    still have their pieces. The generation's running total grows by the
    difference.
    """
    messages_redact([message])  # done already when it came through messages_store: redacting again changes nothing
    with transaction.atomic(savepoint=False):
        _locked(thread)
        stored = Message.objects.filter(pk=message_id, thread=thread).first()
        if stored is None:
            return
        old_size = len(stored.content.encode("utf-8"))
        if stored.tool_calls:
            old_size += len(json.dumps([c["arguments"] for c in stored.tool_calls], ensure_ascii=False).encode())
        Message.objects.filter(pk=message_id).update(content=message.content, tool_calls=message.tool_calls)
        ToolArgument.objects.filter(message_id=message_id).delete()
        _drop_embedding(stored)
        ToolArgument.objects.bulk_create(
            ToolArgument(
                message_id=message_id,
                thread=thread,
                call_index=index,
                tool_call_id=call["id"],
                tool_name=call["name"],
                path=path,
                value=value,
            )
            for index, call in enumerate(message.tool_calls)
            for path, value in string_leaves(call["arguments"])
        )
        if stored.model_visible and message.size > old_size:
            Generation.objects.filter(thread=thread, number=stored.generation).update(
                visible_chars=F("visible_chars") + (message.size - old_size)
            )


def _drop_embedding(message: Message) -> None:
    """Delete the message's pieces and move each model's progress back before it."""
    dropped = dict(Chunk.objects.filter(message_id=message.pk).values_list("model").annotate(n=Count("id")).order_by())
    Chunk.objects.filter(message_id=message.pk).delete()
    for model, count in dropped.items():
        EmbeddingProgress.objects.filter(thread_id=message.thread_id, model=model).update(
            chunks=Greatest(F("chunks") - count, 0), changes=F("changes") + 1
        )
    EmbeddingProgress.objects.filter(thread_id=message.thread_id, embedded_seq__gte=message.seq).update(
        embedded_seq=message.seq - 1
    )
