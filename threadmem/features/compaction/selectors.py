"""Reads for compaction: its history, what one compaction summarizes, the automatic trigger's size."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection
from django.db.models import BigIntegerField, Func, QuerySet, Sum, TextField
from django.db.models.functions import Cast, Coalesce

from threadmem.domain import selectors
from threadmem.features.compaction.sections import GenerationInput
from threadmem.models import MODEL_VISIBLE, Compaction, Generation, Message, Thread


class TextSize(Func):
    """Stored text size. PostgreSQL's octet_length reads a TOASTed value's size
    without decompressing it (bytes, so a little over the characters of
    non-ASCII text); SQLite counts characters."""

    function = "OCTET_LENGTH"
    output_field = BigIntegerField()

    def as_sqlite(self, compiler, connection, **extra_context):
        return super().as_sql(compiler, connection, function="LENGTH", **extra_context)


def compaction_list_for(*, thread: Thread) -> QuerySet[Compaction]:
    """The thread's compaction history, newest first."""
    return Compaction.objects.filter(thread=thread).select_related("requested_by").order_by("-created_at", "-id")


def generation_visible_chars(*, thread: Thread, generation: int) -> int:
    """The model-visible text of one generation (contents and tool-call arguments), in one query.

    A running total kept by appends (models.Generation.visible_chars): an
    upper bound, since isolating or superseding a message never subtracts.
    """
    size = Generation.objects.filter(thread=thread, number=generation).values_list("visible_chars", flat=True).first()
    return int(size or 0)


def messages_visible_chars(*, thread: Thread, generation: int) -> int:
    """The model-visible text of a generation's messages, summed from the rows (for compaction's moves)."""
    size = TextSize("content") + TextSize(Cast("tool_calls", TextField()))
    total = (
        Message.objects.visible()
        .filter(thread=thread, generation=generation)
        .order_by()
        .aggregate(total=Coalesce(Sum(size), 0))["total"]
    )
    return int(total)


def generation_input(*, thread: Thread, generation: int, cut_seq: int) -> GenerationInput:
    """The messages one compaction summarizes: the generation's model-visible ones up to the cut.

    The previous summary leads. A fork still in the generation it was forked
    at also carries the parent's context up to the fork point, as
    ``selectors.context_messages`` shows it to the model.
    """
    messages = selectors.context_messages(thread, generation, cut_seq)
    return GenerationInput(channel=thread.channel, title=thread.title, generation=generation, messages=messages)


def source_withdrawn(*, thread_id: int, source: Sequence[tuple[int, int]]) -> bool:
    """Whether a summary's input (``Summary.source``) is no longer all the model may see of it.

    An isolation or an erasure after the input was read (of one of its messages, or of a
    parent thread a fork's context came from), or a summary in it rewritten
    by a re-summary since: a summary written from that input would quote
    what was withdrawn. The commits ask under the thread row lock, which the
    isolation hook takes too (compaction/resummarize.py), so an isolation is
    either seen here or sees the summary committed and rewrites it.
    """
    ids = sorted({message_id for message_id, _ in source})
    batch = connection.features.max_query_params or 10_000
    for start in range(0, len(ids), batch):
        part = ids[start : start + batch]
        # Counted, not excluded: a message erased since (threadmem/features/erase) is withdrawn too.
        if Message.objects.filter(MODEL_VISIBLE, pk__in=part).count() < len(part):
            return True
    ancestors = {owner for _, owner in source} - {thread_id}
    return bool(ancestors) and Thread.objects.filter(pk__in=ancestors, isolated=True).exists()
