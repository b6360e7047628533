"""The rows of whole threads, and everything derived from them, removed in the caller's transaction.

One statement a table, by thread id, instead of the ORM's cascade: the ORM
loads every row it deletes (it has SET_NULL relations to follow), which for
a thread of 100,000 messages and their tool-argument leaves and pieces is
most of the time. Foreign keys are checked at commit on both databases
(Django declares them deferred), so the order below only has to leave
nothing pointing at a removed row by then. The SQLite keyword index of the
pieces follows by its triggers (migration 0018); PostgreSQL's indexes
follow the rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection
from django.db.models import Model

from threadmem import models


def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


# (what is counted, the table, the rows of the threads): {ids} are the threads' ids.
_STEPS: list[tuple[str, type[Model], str]] = [
    ("tool_calls", models.ToolCall, "thread_id IN ({ids})"),
    ("isolation_events", models.IsolationEvent, "thread_id IN ({ids})"),
    ("chunks", models.Chunk, f"message_id IN (SELECT id FROM {_table(models.Message)} WHERE thread_id IN ({{ids}}))"),
    ("tool_arguments", models.ToolArgument, "thread_id IN ({ids})"),
    ("compactions", models.Compaction, "thread_id IN ({ids})"),
    ("embedding_progress", models.EmbeddingProgress, "thread_id IN ({ids})"),
    ("generations", models.Generation, "thread_id IN ({ids})"),
    ("messages", models.Message, "thread_id IN ({ids})"),
    ("threads", models.Thread, "id IN ({ids})"),
]


def delete_threads(thread_ids: Sequence[int]) -> dict[str, int]:
    """Delete the threads and every row derived from them; answer the rows removed per table.

    The caller holds the threads' row locks and passes a thread together with
    its forks (a fork's parent and fork message would otherwise point at
    removed rows, and the commit fails).
    """
    placeholders = ", ".join(["%s"] * len(thread_ids))
    counts: dict[str, int] = {}
    with connection.cursor() as cursor:
        for name, model, where in _STEPS:
            cursor.execute(f"DELETE FROM {_table(model)} WHERE {where.format(ids=placeholders)}", list(thread_ids))
            counts[name] = cursor.rowcount
    return counts


# What derives from each message, deleted before the message: (what is counted, the table).
_PER_MESSAGE: list[tuple[str, type[Model]]] = [
    ("isolation_events", models.IsolationEvent),
    ("chunks", models.Chunk),
    ("tool_arguments", models.ToolArgument),
]


def delete_newest_messages(thread_ids: Sequence[int], *, from_id: int) -> dict[str, int]:
    """Delete the threads' messages with ids from ``from_id`` on, and what derives from each; counts per table.

    The caller has unlinked every reference to them that is not derived
    (summaries of generations, supersessions, fork points: ``unlink``).
    """
    threads = ", ".join(["%s"] * len(thread_ids))
    messages = f"SELECT id FROM {_table(models.Message)} WHERE thread_id IN ({threads}) AND id >= %s"
    params = [*thread_ids, from_id]
    counts: dict[str, int] = {}
    with connection.cursor() as cursor:
        for name, model in _PER_MESSAGE:
            cursor.execute(f"DELETE FROM {_table(model)} WHERE message_id IN ({messages})", params)
            counts[name] = cursor.rowcount
        cursor.execute(f"DELETE FROM {_table(models.Message)} WHERE thread_id IN ({threads}) AND id >= %s", params)
        counts["messages"] = cursor.rowcount
    return counts


def unlink(thread_ids: Sequence[int]) -> None:
    """Clear the references to the threads' messages that are not derived from them, before they go in batches."""
    models.Generation.objects.filter(thread_id__in=thread_ids).update(summary_message=None)
    models.Compaction.objects.filter(thread_id__in=thread_ids).update(summary_message=None)
    models.Message.objects.filter(thread_id__in=thread_ids, superseded_by__isnull=False).update(superseded_by=None)
    models.Thread.objects.filter(pk__in=thread_ids).update(parent=None, fork_message=None)


def delete_messages(message_ids: Sequence[int]) -> dict[str, int]:
    """Delete the messages and what is derived from each (leaves, pieces, isolation rows); counts per table."""
    placeholders = ", ".join(["%s"] * len(message_ids))
    counts: dict[str, int] = {}
    with connection.cursor() as cursor:
        for name, model in _PER_MESSAGE:
            cursor.execute(f"DELETE FROM {_table(model)} WHERE message_id IN ({placeholders})", list(message_ids))
            counts[name] = cursor.rowcount
        cursor.execute(f"DELETE FROM {_table(models.Message)} WHERE id IN ({placeholders})", list(message_ids))
        counts["messages"] = cursor.rowcount
    return counts
