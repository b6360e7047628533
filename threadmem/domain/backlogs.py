"""Background work waiting, read from the tables when /metrics is scraped: global, whichever process answers.

Counting in the processes would need every web and worker process to agree;
the rows already say it (docs/metrics.md).
"""

from __future__ import annotations

from typing import NamedTuple

from django.db.models import Count, Exists, F, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from threadmem.models import LIVE_STATUSES, EmbeddingProgress, Import, Message, Thread


class EmbeddingBacklog(NamedTuple):
    model: str
    threads: int  # threads with messages to embed after their embedded seq (a compaction's summary is none)
    messages: int  # how many messages those are (every role: an upper bound of what will be embedded)


def threads_to_embed(model: str) -> QuerySet[Thread]:
    """Threads with messages ``model`` has not embedded yet, each annotated with its ``embedded_seq``.

    Only messages a run would embed count: a summary or hidden message past the embedded seq (a compaction
    writes one, and no run follows it) is nothing to do.
    """
    embedded = EmbeddingProgress.objects.filter(thread=OuterRef("pk"), model=model).values("embedded_seq")
    to_embed = Message.objects.filter(
        thread=OuterRef("pk"), seq__gt=OuterRef("embedded_seq"), kind=Message.Kind.MESSAGE, model_visible=True
    )
    return (
        Thread.objects.annotate(embedded_seq=Coalesce(Subquery(embedded), 0))
        .filter(next_seq__gt=F("embedded_seq") + 1)
        .filter(Exists(to_embed))
    )


def embedding_backlog(model: str) -> EmbeddingBacklog:
    """``model``'s backlog in one statement: the model that embeds (``embeddings/choice.py``), a configured one
    or an in-process one."""
    behind = (
        threads_to_embed(model)
        .annotate(behind=F("next_seq") - 1 - F("embedded_seq"))
        .aggregate(threads=Count("id"), messages=Coalesce(Sum("behind"), 0))
    )
    return EmbeddingBacklog(model, behind["threads"], behind["messages"])


def import_backlog() -> dict[str, int]:
    """Imports not finished, by status (pending, running), zeros included."""
    counts = dict(
        Import.objects.filter(status__in=LIVE_STATUSES)
        .values_list("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    return {str(status): counts.get(status, 0) for status in LIVE_STATUSES}
