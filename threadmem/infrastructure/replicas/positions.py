"""What a replica must have replayed before it serves a read: the caller's last write and the fence.

Both are the primary's WAL positions, kept in the cache (Redis: shared by every process, the workers'
included; ``manage.py check`` refuses replicas with a process-local cache, threadmem/checks.py).
"""

from __future__ import annotations

from typing import Any

from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, connections, transaction

from threadmem.infrastructure.replicas.state import aliases

# How long a caller's last write is remembered: a replica further behind than that is not read anyway.
WRITTEN_SECONDS = 3600
_WRITTEN_KEY = "threadmem:replicas:written:{}"
# A change that takes something out of every reader's sight (an isolation, a deletion): no replica serves anyone
# until it has replayed it.
_FENCE_KEY = "threadmem:replicas:fence"


def wrote(caller: Any) -> None:
    """``caller`` has just written: their next reads wait for a replica that replayed it (or use the primary)."""
    if caller is None or not aliases():
        return
    cache.set(_WRITTEN_KEY.format(caller), insert_position(), WRITTEN_SECONDS)


def fence() -> None:
    """Once the current transaction commits, every caller's reads wait for a replica that replayed it (or use the
    primary): isolated or deleted content is never read from a replica that still holds it."""
    if aliases():
        transaction.on_commit(_set_fence)


def required(caller: Any) -> int | None:
    """The WAL position a replica must have replayed to serve ``caller`` (None: any will do)."""
    kept = cache.get_many([_FENCE_KEY, _WRITTEN_KEY.format(caller)] if caller is not None else [_FENCE_KEY])
    return max(kept.values(), default=None)


def _set_fence() -> None:
    position = insert_position()
    if position > (cache.get(_FENCE_KEY) or 0):
        cache.set(_FENCE_KEY, position, WRITTEN_SECONDS)


def insert_position() -> int:
    """The primary's WAL insert position: past the commit record even when commits are asynchronous."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_insert_lsn()::text")
        return lsn(cursor.fetchone()[0])


def lsn(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)
