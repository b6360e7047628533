"""A global scope's pieces, kept per thread in this process: what the ranked lane ranks without a channel.

A thread's lane reads its scope's piece ids with one statement
(``vectors.scope_pieces``). Over every thread of an owner that statement
would read every piece of the owner's store again on every search. Here each
thread's pieces (ids and their messages) are kept in this process and
checked on every search against the thread's embedding progress: its
``changes`` count moves in every transaction that stores or drops pieces of
the thread (``embeddings/thread_embedding.py``, ``imports/generations.py``), so a thread
is read again only when it moved.

What the scope may show is decided on every search, as on every path: the
threads the caller may read now (their own, or every thread for an
operator, never an isolated one) and, among them, the messages hidden now
(isolated, not visible to the model, superseded, not a message: one
statement on the partial index ``message_hidden``). A piece gone since it was kept is left
out when the lane reads its details (``lane.with_details``).

A scope of more than ``GLOBAL_MAX_PIECES`` pieces is not held (None): the
database ranks it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from threadmem.domain.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.domain.scope import SearchScope
from threadmem.features.search.ranked.vectors import ScopePieces
from threadmem.features.search.shared_sql import in_ids

# A global scope ranked in this process at most: an owner's sessions outgrow a thread's 20,000 pieces long before
# their keyword index or their vectors (at the static model's 256 dimensions, 60,000 pieces are ~60 MB: the
# vectors' byte cap, vectors.CACHE_MAX_BYTES) stop fitting in a process.
GLOBAL_MAX_PIECES = 60_000
# Pieces kept over every thread (two 8-byte integers each: ~32 MB), the least recently used thread dropped first.
KEPT_MAX_PIECES = 2_000_000

# The readable threads' progress for the model: (thread, changes, pieces). An owner's threads, or an operator's.
_PROGRESS_SQL = (
    "SELECT p.thread_id, p.changes, p.chunks FROM threadmem_embeddingprogress p "
    "JOIN threadmem_thread t ON t.id = p.thread_id WHERE p.model = %s AND NOT t.isolated"
)
# The messages of the threads that no search may show now (``searchable_q``'s negation: machine events and
# summaries are few, and a piece stored for one is never shown). The partial index message_hidden serves it.
_HIDDEN_SQL = (
    "SELECT m.id FROM threadmem_message m WHERE {threads} "
    "AND (m.isolated OR NOT m.model_visible OR m.superseded_by_id IS NOT NULL OR m.kind <> 'message')"
)
_PIECES_SQL = (
    "SELECT m.thread_id, c.id, c.message_id FROM threadmem_chunk c "
    "JOIN threadmem_message m ON m.id = c.message_id WHERE c.model = %s AND {threads}"
)


@dataclass(frozen=True)
class ThreadPieces:
    changes: int  # the progress's count when these were read
    ids: np.ndarray  # piece ids
    messages: np.ndarray  # each piece's message


_lock = threading.Lock()
_kept: OrderedDict[tuple[str, int], ThreadPieces] = OrderedDict()
_kept_pieces = 0  # over every kept thread


def clear() -> None:
    global _kept_pieces
    with _lock:
        _kept.clear()
        _kept_pieces = 0


def global_pieces(*, scope: SearchScope, model: str) -> ScopePieces | None:
    """The pieces of ``model`` the global ``scope`` may show now, or None when there are more than
    ``GLOBAL_MAX_PIECES``."""
    owner = None if scope.operator else scope.user.pk
    vendor = connection.vendor
    with connection.cursor() as cursor:
        sql, params = _PROGRESS_SQL, [model]
        if owner is not None:
            sql, params = f"{sql} AND t.owner_id = %s", [model, owner]
        if scope.project is not None:  # the project's threads, as resolve_scope found them
            condition, condition_params = in_ids(vendor, "t.id", scope.readable_thread_ids or ())
            sql, params = f"{sql} AND {condition}", [*params, *condition_params]
        cursor.execute(sql, params)
        progress = {thread_id: (changes, pieces) for thread_id, changes, pieces in cursor.fetchall()}
        if sum(pieces for _, pieces in progress.values()) > GLOBAL_MAX_PIECES:
            return None
        threads = _threads(cursor, vendor, model, progress)
        hidden: list[int] = []
        if progress:
            condition, condition_params = in_ids(vendor, "m.thread_id", sorted(progress))
            cursor.execute(_HIDDEN_SQL.format(threads=condition), condition_params)
            hidden = [message_id for (message_id,) in cursor.fetchall()]
    if threads:
        ids = np.concatenate([held.ids for held in threads])
        messages = np.concatenate([held.messages for held in threads])
    else:
        ids = messages = np.zeros(0, dtype=np.int64)
    if hidden:
        ids = ids[~np.isin(messages, np.asarray(hidden, dtype=np.int64))]
    if len(ids) > GLOBAL_MAX_PIECES:
        return None
    ids.sort()
    # One key for the owner (or every operator) and project: the keyword index and vectors kept for it follow its
    # pieces.
    key = (model, "global", owner) if scope.project is None else (model, "global", owner, scope.project)
    return ScopePieces(ids=ids, key=key, sentences=False)


def _threads(cursor, vendor: str, model: str, progress: dict[int, tuple[int, int]]) -> list[ThreadPieces]:
    """Each thread's kept pieces, the threads that moved since (or were never read) read again in one statement."""
    found: dict[int, ThreadPieces] = {}
    with _lock:
        for thread_id, (changes, _) in progress.items():
            held = _kept.get((model, thread_id))
            if held is not None and held.changes == changes:
                _kept.move_to_end((model, thread_id))
                found[thread_id] = held
    stale = sorted(thread_id for thread_id in progress if thread_id not in found)
    if stale:
        condition, params = in_ids(vendor, "m.thread_id", stale)
        cursor.execute(_PIECES_SQL.format(threads=condition), [model, *params])
        rows: dict[int, list[tuple[int, int]]] = {thread_id: [] for thread_id in stale}
        for thread_id, chunk_id, message_id in cursor.fetchall():
            rows[thread_id].append((chunk_id, message_id))
        _keep(model, progress, rows, found)
    return list(found.values())


def _keep(
    model: str,
    progress: dict[int, tuple[int, int]],
    rows: dict[int, list[tuple[int, int]]],
    found: dict[int, ThreadPieces],
) -> None:
    """Keep the threads read (``rows``: each one's (piece, message) pairs), the least recently used dropped past
    ``KEPT_MAX_PIECES``; ``found`` gets them too."""
    global _kept_pieces
    with _lock:
        for thread_id, pairs in rows.items():
            table = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
            # The count read before the pieces: a store committed in between is read again next time.
            held = ThreadPieces(progress[thread_id][0], table[:, 0].copy(), table[:, 1].copy())
            replaced = _kept.pop((model, thread_id), None)
            _kept_pieces += len(held.ids) - (len(replaced.ids) if replaced is not None else 0)
            found[thread_id] = _kept[(model, thread_id)] = held
        while len(_kept) > 1 and _kept_pieces > KEPT_MAX_PIECES:
            _, dropped = _kept.popitem(last=False)
            _kept_pieces -= len(dropped.ids)
