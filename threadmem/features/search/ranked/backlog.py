"""What the lane leaves out while the model in force has messages of the scope still to embed.

A search asks this every time, so the threads behind are found first, in one
statement over the scope's threads and their progress rows (the scope's ids as
one array: ``shared_sql.in_ids``); only when some are behind are their tails
past the embedded seq counted, and then only the messages search may show (an
isolated or hidden one is not even hinted at).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Q

from threadmem.domain.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.features.search.shared_sql import in_ids
from threadmem.models import Message, searchable_q


def messages_behind(model: str, thread_ids: Sequence[int]) -> int:
    """How many messages search may show in these threads ``model`` has not embedded yet."""
    if not thread_ids:
        return 0
    condition, params = in_ids(connection.vendor, "t.id", thread_ids)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.id, COALESCE(p.embedded_seq, 0) FROM threadmem_thread t "
            "LEFT JOIN threadmem_embeddingprogress p ON p.thread_id = t.id AND p.model = %s "
            f"WHERE {condition} AND NOT t.isolated AND t.next_seq > COALESCE(p.embedded_seq, 0) + 1",
            [model, *params],
        )
        behind = cursor.fetchall()
    tails = Q()
    for thread_id, embedded_seq in behind:
        tails |= Q(thread_id=thread_id, seq__gt=embedded_seq)
    return Message.objects.filter(searchable_q(), tails).count() if behind else 0
