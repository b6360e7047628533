"""Meaning in a thread's scope: the scope's vectors kept in this process, scored in NumPy.

Ranking a thread by meaning in the database reads every piece's vector and
text on every search, a large share of the lane's time
(docs/search.md, "The ranked lane's latency"). Here each search reads only
the ids of the pieces its scope may show (``SearchScope.q``, the filter of
every path, so what a flag or an isolation hides since is never scored), and
scores the vectors this process holds for those ids; a piece it does not
hold yet (an append since) is read once. A piece's vector never
changes (a re-embedding stores a new piece), so a held one is never stale.

Scopes of more than ``CACHE_MAX_PIECES`` pieces (most global scopes) are
not held: the database ranks them (``embeddings/retrieve.py``: HNSW or
exact). At most ``CACHE_MAX_BYTES`` of vectors are held, the least recently
used scope dropped first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

import numpy as np

from threadmem.domain.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.domain.scope import SearchScope
from threadmem.features.embeddings.chunks import unpacked_sentences
from threadmem.features.search.ranked import warm
from threadmem.features.search.shared_sql import in_subquery
from threadmem.infrastructure.fields import FLOAT32, pgvector_in_use
from threadmem.models import Chunk

CACHE_MAX_PIECES = 20_000
# Vectors held at most, in bytes, over every scope (the least recently used dropped first; the one just read is kept).
CACHE_MAX_BYTES = 64 * 1024 * 1024
# Pieces looked at per message wanted before every score is sorted (``nearest``).
CANDIDATES_PER_RESULT = 4
# Pieces read per statement when a scope's vectors are read first.
READ_BATCH = 1_000


@dataclass(frozen=True)
class Held:
    ids: np.ndarray  # chunk ids, ascending
    messages: np.ndarray  # each chunk's message id
    matrix: np.ndarray  # each chunk's unit vector
    live: np.ndarray  # a zero vector (an empty text, a piece gone since) has no direction: never a match
    # Each chunk's message's thread and seq: where it sits among its thread's messages (``context.py``).
    threads: np.ndarray | None = None
    seqs: np.ndarray | None = None
    # The unit vectors of the pieces' sentences (``Chunk.sentences``), and the piece each is of (its id); None: not
    # held for this scope (across threads, or past the byte cap).
    sentences: np.ndarray | None = None
    sentence_of: np.ndarray | None = None
    # What rankings derive from these vectors once (context.py's layout, common.py's direction): kept with them,
    # gone with them (a scope read again with other pieces is another Held).
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


_lock = threading.Lock()
_held: OrderedDict[tuple, Held] = OrderedDict()
_deriving = threading.Lock()
T = TypeVar("T")


def derived(held: Held, name: str, compute: Callable[[], T]) -> T:
    """``compute()``, once per held scope (two searches at once may both compute it; one result is kept)."""
    with _deriving:
        if name in held.derived:
            return held.derived[name]
    value = compute()
    with _deriving:
        return held.derived.setdefault(name, value)


def clear() -> None:
    with _lock:
        _held.clear()


def held_bytes(held: Held) -> int:
    """What ``held``'s vectors take in this process, its sentences' included."""
    return held.matrix.nbytes + (held.sentences.nbytes if held.sentences is not None else 0)


@dataclass(frozen=True)
class ScopePieces:
    """The ids of the pieces of ``model`` a scope may show now, ascending, and the scope's statement (the key)."""

    ids: np.ndarray
    key: tuple
    # Whether their sentences' vectors are held with them: one thread's scope, where a turn is read by its best
    # sentence too (sentences.py); not a global scope's, whose best thread is held apart with them (thread_part).
    sentences: bool = True

    @cached_property
    def shown(self) -> frozenset[int]:
        """``ids`` as a set, built once a search for every ranking that filters by it."""
        return frozenset(self.ids.tolist())


def scope_pieces(*, scope: SearchScope, model: str) -> ScopePieces | None:
    """The scope's pieces of ``model``; None when there are more than ``CACHE_MAX_PIECES``."""
    # The scope's messages first, then their pieces by the message index: joined, the planner of a small store
    # reads every piece (vectors inline, ~1.5 KB a row) to hash them (docs/search.md). Unordered, so that a large
    # scope stops at the limit instead of sorting every piece first.
    messages, messages_params = scope.messages().order_by().values("id").query.sql_with_params()
    in_scope = in_subquery(connection.vendor, "message_id", messages)
    sql = f"SELECT id FROM threadmem_chunk WHERE model = %s AND {in_scope} LIMIT %s"
    params = (model, *messages_params, CACHE_MAX_PIECES + 1)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        ids = np.array([row[0] for row in cursor.fetchall()], dtype=np.int64)
    if len(ids) > CACHE_MAX_PIECES:
        return None
    ids.sort()
    return ScopePieces(ids=ids, key=(model, sql, tuple(map(str, params))))


def thread_part(pieces: ScopePieces, held: Held, rows: np.ndarray) -> ScopePieces:
    """``held``'s pieces ``rows``, all of one thread of the scope ``pieces``, as a scope of their own whose
    sentences are held with them (a global search reads its best thread so: ``feedback.refined``)."""
    thread = int(held.threads[rows[0]]) if held.threads is not None and len(rows) else 0
    return ScopePieces(ids=held.ids[rows], key=(*pieces.key, "thread", thread), sentences=True)


def fits(pieces: int, width: int) -> bool:
    """Whether ``pieces`` vectors of ``width`` dimensions fit in the byte cap: a larger scope is ranked by the
    database, so the cap holds whatever the scope (a configured model's 1,536 dimensions fit ~11,000)."""
    return pieces * width * np.dtype(FLOAT32).itemsize <= CACHE_MAX_BYTES


def held_scope(*, pieces: ScopePieces, width: int) -> Held:
    """The scope's pieces held in this process with their vectors of ``width`` dimensions (read once)."""
    return _vectors(key=(*pieces.key, width), ids=pieces.ids, width=width, sentences=pieces.sentences)


def scored(*, pieces: ScopePieces, vector: list[float]) -> tuple[Held, np.ndarray] | None:
    """The scope's held vectors and each one's similarity to ``vector`` (-inf: never a match); None when there
    is nothing to score."""
    query = np.asarray(vector, dtype=FLOAT32)
    held = held_scope(pieces=pieces, width=len(query))
    norm = float(np.linalg.norm(query))
    if not len(pieces.ids) or norm == 0:
        return None
    return held, np.where(held.live, held.matrix @ (query / norm), -np.inf)


def nearest(*, pieces: ScopePieces, vector: list[float], k: int, min_score: float) -> list[tuple[int, int, float]]:
    """(message id, its best piece's id, similarity) of the ``k`` messages nearest to ``vector``, best first."""
    found = scored(pieces=pieces, vector=vector)
    if found is None:
        return []
    held, scores = found
    return best_of(held, scores, k=k, min_score=min_score)


def best_of(held: Held, scores: np.ndarray, *, k: int, min_score: float) -> list[tuple[int, int, float]]:
    """(message id, its best piece's id, score) of the ``k`` messages whose pieces score best in ``scores`` (one
    per held piece), at least ``min_score``, best first."""
    if not len(scores):
        return []
    # The best pieces first: sorting a global scope's every score cost more than the product itself. A message's
    # pieces may crowd the candidates, so all are sorted when these run out before ``k`` messages.
    candidates = min(len(scores), CANDIDATES_PER_RESULT * k)
    least = np.partition(scores, len(scores) - candidates)[len(scores) - candidates]
    order = np.flatnonzero(scores >= least)  # every tie of the least kept: the stable sort's first pieces exactly
    order = order[np.lexsort((order, -scores[order]))]
    found = _best_messages(held, scores, order, k=k, min_score=min_score)
    if len(found) < k and len(order) < len(scores) and scores[order[-1]] >= min_score:
        found = _best_messages(held, scores, np.argsort(-scores, kind="stable"), k=k, min_score=min_score)
    return found


def _best_messages(held: Held, scores: np.ndarray, order: np.ndarray, *, k: int, min_score: float):
    found: list[tuple[int, int, float]] = []
    seen: set[int] = set()
    for index in order:
        score = float(scores[index])
        if score < min_score:
            break
        message_id = int(held.messages[index])
        if message_id not in seen:
            seen.add(message_id)
            found.append((message_id, int(held.ids[index]), score))
            if len(found) == k:
                break
    return found


def _read(ids: np.ndarray, *, sentences: bool) -> list[tuple[int, int, np.ndarray | None, int, int, bytes]]:
    """(piece, message, vector, thread, seq, its sentences' vectors: empty unless ``sentences``) of ``ids``.
    pgvector's binary form (``vector_send``: two 16-bit counts, then big-endian float32s) reads ~5 times faster
    than its text, which the field parses."""
    if not pgvector_in_use(connection):
        columns = ("id", "message_id", "embedding", "message__thread_id", "message__seq")
        found = Chunk.objects.filter(id__in=ids.tolist())
        if not sentences:
            return [(*row, b"") for row in found.values_list(*columns)]
        return [(*row[:5], bytes(row[5] or b"")) for row in found.values_list(*columns, "sentences")]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.id, c.message_id, vector_send(c.embedding), m.thread_id, m.seq, "
            f"{'c.sentences' if sentences else 'NULL'} "
            "FROM threadmem_chunk c JOIN threadmem_message m ON m.id = c.message_id WHERE c.id = ANY(%s)",
            [ids.tolist()],
        )
        return [
            (
                chunk_id,
                message_id,
                np.frombuffer(bytes(raw), dtype=">f4", offset=4) if raw is not None else None,
                thread_id,
                seq,
                bytes(said or b""),
            )
            for chunk_id, message_id, raw, thread_id, seq, said in cursor.fetchall()
        ]


def _sentence_rows(raw: bytes, width: int) -> np.ndarray | None:
    """A piece's stored sentence vectors as unit rows; None when it has none of ``width``."""
    rows = unpacked_sentences(raw, width)
    if rows is None:
        return None
    lengths = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, lengths, out=np.zeros_like(rows), where=lengths > 0)


def _vectors(*, key: tuple, ids: np.ndarray, width: int, sentences: bool, here: bool = False) -> Held:
    """The held vectors of exactly ``ids``, reading the ones not held yet: more than ``READ_BATCH`` of them on
    the warming thread (``warm.py``), unless ``here``."""
    with _lock:
        held = _held.get(key)
        if held is not None:
            _held.move_to_end(key)
    if held is not None and np.array_equal(held.ids, ids):
        return held
    # A scope whose sentences passed the byte cap once holds none: read again, only its new pieces would have them.
    sentences = sentences and (held is None or held.sentences is not None)
    if held is not None:
        at = np.clip(np.searchsorted(held.ids, ids), 0, max(0, len(held.ids) - 1))
        known = held.ids[at] == ids if len(held.ids) else np.zeros(len(ids), dtype=bool)
    else:
        at, known = np.zeros(len(ids), dtype=np.int64), np.zeros(len(ids), dtype=bool)
    messages = np.zeros(len(ids), dtype=np.int64)
    threads = np.zeros(len(ids), dtype=np.int64)
    seqs = np.zeros(len(ids), dtype=np.int64)
    matrix = np.zeros((len(ids), width), dtype=FLOAT32)
    said: list[np.ndarray] = []
    said_of: list[np.ndarray] = []
    if held is not None and known.any():
        messages[known] = held.messages[at[known]]
        matrix[known] = held.matrix[at[known]]
        if held.threads is not None and held.seqs is not None:
            threads[known], seqs[known] = held.threads[at[known]], held.seqs[at[known]]
        if held.sentences is not None and held.sentence_of is not None:
            kept = np.isin(held.sentence_of, ids[known])
            said.append(held.sentences[kept])
            said_of.append(held.sentence_of[kept])
    missing = np.flatnonzero(~known)
    if len(missing) > READ_BATCH and not here:
        # A cold scope is read to the end whatever this search's deadline; a search queued behind another's
        # read of the same scope finds it held by then.
        return warm.uncancelled(lambda: _vectors(key=key, ids=ids, width=width, sentences=sentences, here=True))

    try:
        # In batches, each kept as soon as it is read: a search stopped while a large scope is read for the
        # first time leaves the next one less to read, never the same again.
        for first in range(0, len(missing), READ_BATCH):
            batch = missing[first : first + READ_BATCH]
            read = {chunk_id: rest for chunk_id, *rest in _read(ids[batch], sentences=sentences)}
            rows = [read.get(chunk_id, (0, None, 0, 0, b"")) for chunk_id in ids[batch].tolist()]
            messages[batch] = [message_id for message_id, *_ in rows]
            threads[batch] = [thread_id for _, _, thread_id, _, _ in rows]
            seqs[batch] = [seq for _, _, _, seq, _ in rows]
            # Another width is another model's vector: never a match (a zero row).
            fits = [i for i, (_, embedding, *_) in enumerate(rows) if embedding is not None and len(embedding) == width]
            if fits:
                block = np.asarray([rows[i][1] for i in fits], dtype=FLOAT32)
                lengths = np.linalg.norm(block, axis=1, keepdims=True)
                matrix[batch[fits]] = np.divide(block, lengths, out=block.copy(), where=lengths > 0)
            for i in fits:
                found = _sentence_rows(rows[i][4], width)
                if found is not None:
                    said.append(found)
                    said_of.append(np.full(len(found), ids[batch[i]], dtype=np.int64))
            known[batch] = True
    finally:
        kept = matrix[known]
        said_rows = np.concatenate(said) if said else np.zeros((0, width), dtype=FLOAT32)
        of = np.concatenate(said_of) if said_of else np.zeros(0, dtype=np.int64)
        inside = np.isin(of, ids[known])  # a batch cut short leaves its pieces, and their sentences, for later
        held_sentences = sentences and kept.nbytes + said_rows[inside].nbytes <= CACHE_MAX_BYTES
        fresh = Held(
            ids=ids[known],
            messages=messages[known],
            matrix=kept,
            live=np.any(kept != 0, axis=1),
            threads=threads[known],
            seqs=seqs[known],
            sentences=said_rows[inside] if held_sentences else None,
            sentence_of=of[inside] if held_sentences else None,
        )
        with _lock:
            _held[key] = fresh
            _held.move_to_end(key)
            while len(_held) > 1 and sum(held_bytes(h) for h in _held.values()) > CACHE_MAX_BYTES:
                _held.popitem(last=False)
    return fresh
