"""The semantic retriever: the chunks of a search scope nearest to a query vector.

Which chunks may be ranked is decided by ``SearchScope.q`` — the same filter
the literal part applies (kind, visibility, isolation, supersession, the
thread and its ancestry, or the readable non-isolated threads) — so this path
cannot show what the literal path would hide.

How they are ranked, by cosine similarity:

- PostgreSQL, one thread: exactly, over the thread's chunks (a few thousand
  at most: an index would only lose recall);
- PostgreSQL, global: the HNSW index of the vector's dimension
  (``service.ensure_hnsw_index``) with pgvector's iterative scan, which keeps
  reading the index until enough candidates pass the scope's filters. When
  the caller reads only a small part of the store (an ordinary user's own
  threads, at most ``EXACT_MAX_MESSAGES`` messages), exactly instead: the
  index would have to walk past ~everyone else's chunks to find theirs
  (slower and half the recall: docs/search.md, "Vectors");
- SQLite: exactly, in NumPy, a block of chunks at a time.

Several pieces of one message collapse into its best one; messages below
``min_score`` are dropped.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
from django.db import transaction
from django.db.models import FloatField, QuerySet, Sum
from django.db.models.expressions import RawSQL
from pgvector import Vector
from pgvector.django import CosineDistance

from threadmem.domain.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.domain.scope import SearchScope
from threadmem.features.embeddings.thread_embedding import VECTOR_INDEX_MAX_DIMENSIONS, index_expression
from threadmem.infrastructure.fields import FLOAT32, pgvector_in_use
from threadmem.models import Chunk, Thread

# Chunks fetched per message listed: the pieces of one long tool result are
# often each other's nearest neighbours, and collapse into one.
CANDIDATES_PER_RESULT = 4
# HNSW: the candidate list per scan, above pgvector's default of 40 for recall at about the same
# latency (docs/search.md, "Vectors"); iterative scans read further when the scope's filters drop candidates.
HNSW_EF_SEARCH = 200
# A global scope of at most this many messages is ranked exactly (see above).
EXACT_MAX_MESSAGES = 50_000
# SQLite: chunks scored per NumPy block.
NUMPY_BLOCK = 4_096

DETAIL_FIELDS = (
    "message_id",
    "message__thread__channel",
    "message__session_id",
    "message__generation",
    "message__role",
    "field",
    "start",
    "end_of_field",
    "text",
    "message__thread_id",
    "message__seq",
    "message__thread__current_generation",
)


# DETAIL_FIELDS as one statement's columns, for the lane's hot path (the ORM's compile costs more than the read).
DETAIL_COLUMNS = (
    "c.id, c.message_id, t.channel, m.session_id, m.generation, m.role, c.field, c.start, c.end_of_field, "
    "c.text, m.thread_id, m.seq, t.current_generation"
)
DETAIL_JOINS = "JOIN threadmem_message m ON m.id = c.message_id JOIN threadmem_thread t ON t.id = m.thread_id"


def detail_rows(where: str, params: list, *, order: str = "") -> list[tuple]:
    """(chunk id, *DETAIL_FIELDS) of the pieces ``where`` selects (``c``: the piece, ``m``: its message)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {DETAIL_COLUMNS} FROM threadmem_chunk c {DETAIL_JOINS} WHERE {where}"
            f"{f' ORDER BY {order}' if order else ''}",
            params,
        )
        return cursor.fetchall()


def detail_rows_of(ids_table: str, params: list) -> list[tuple]:
    """(chunk id, *DETAIL_FIELDS) of the pieces whose ids ``ids_table`` lists (a table ``wanted`` of one column
    ``id``: ``shared_sql.ids_table``)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {DETAIL_COLUMNS} FROM {ids_table} JOIN threadmem_chunk c ON c.id = wanted.id {DETAIL_JOINS}",
            params,
        )
        return cursor.fetchall()


@dataclass(frozen=True)
class Match:
    message_id: int
    channel: str
    session_id: str
    generation: int
    role: str
    field: str
    start: int  # offset of the piece in its field
    end_of_field: bool
    text: str
    thread_id: int
    seq: int  # the message's place in its thread
    thread_generation: int  # its thread's current generation: the one not compacted yet
    score: float  # cosine similarity to the query


def nearest(
    *, scope: SearchScope, vector: list[float], model: str, k: int, min_score: float, exact: bool = False
) -> list[Match]:
    """The ``k`` messages of the scope whose best piece is nearest to ``vector``, best first.

    ``exact`` ranks every chunk of the scope even where an index would serve
    (the benchmark's reference for recall).
    """
    query = np.asarray(vector, dtype=FLOAT32)
    chunks = Chunk.objects.filter(model=model, dimensions=len(query)).filter(scope.q(prefix="message__"))
    limit = k * CANDIDATES_PER_RESULT
    if pgvector_in_use(connection):
        approximate = scope.is_global and not exact and not _small(scope)
        candidates = _rank_postgres(chunks, query, limit=limit, approximate=approximate)
    else:
        candidates = _rank_numpy(chunks, query, limit=limit)
    best: dict[int, Match] = {}
    for match in candidates:
        current = best.get(match.message_id)
        if match.score >= min_score and (current is None or match.score > current.score):
            best[match.message_id] = match
    return sorted(best.values(), key=lambda m: (-m.score, -m.message_id))[:k]


def _small(scope: SearchScope) -> bool:
    """Whether a global scope holds so few messages that exact ranking beats the index."""
    if scope.readable_thread_ids is None:  # an operator: every thread but the isolated ones
        return False
    if not scope.readable_thread_ids:
        return True
    total = Thread.objects.filter(id__in=scope.readable_thread_ids).aggregate(total=Sum("next_seq"))["total"]
    return (total or 0) <= EXACT_MAX_MESSAGES


def _rank_postgres(chunks: QuerySet[Chunk], query: np.ndarray, *, limit: int, approximate: bool) -> list[Match]:
    dimensions = len(query)
    expression = index_expression(dimensions) if approximate else None
    if expression is None:
        distance = CosineDistance("embedding", Vector(query))
    else:
        kind = "vector" if dimensions <= VECTOR_INDEX_MAX_DIMENSIONS else "halfvec"
        distance = RawSQL(
            f"{expression} <=> %s::{kind}({dimensions})", [Vector(query).to_text()], output_field=FloatField()
        )
    ranked = chunks.annotate(distance=distance).order_by("distance").values_list(*DETAIL_FIELDS, "distance")[:limit]
    with transaction.atomic(using=connection.alias):  # the settings below hold where the ranking reads
        if expression is not None:
            with connection.cursor() as cursor:
                cursor.execute(f"SET LOCAL hnsw.ef_search = {max(HNSW_EF_SEARCH, limit)}")
                cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        rows = list(ranked)
    # A zero vector has no direction: pgvector answers NaN, never a match.
    return [Match(*row[:-1], score=1.0 - row[-1]) for row in rows if row[-1] == row[-1]]


def _rank_numpy(chunks: QuerySet[Chunk], query: np.ndarray, *, limit: int) -> list[Match]:
    norm = float(np.linalg.norm(query))
    if norm == 0:
        return []
    query = query / norm
    top: list[tuple[float, int]] = []  # a min-heap of (score, chunk id)
    ids: list[int] = []
    vectors: list[np.ndarray] = []

    def score_block() -> None:
        matrix = np.stack(vectors)
        norms = np.linalg.norm(matrix, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            scores = (matrix @ query) / norms
        # A zero vector has no direction (NaN): never a match, as on PostgreSQL.
        for index in np.argsort(-np.nan_to_num(scores, nan=-np.inf))[:limit]:
            if np.isnan(scores[index]):
                break
            item = (float(scores[index]), ids[index])
            if len(top) < limit:
                heapq.heappush(top, item)
            elif item > top[0]:
                heapq.heapreplace(top, item)
        ids.clear()
        vectors.clear()

    for chunk_id, embedding in chunks.values_list("id", "embedding").iterator(chunk_size=NUMPY_BLOCK):
        ids.append(chunk_id)
        vectors.append(embedding)
        if len(ids) == NUMPY_BLOCK:
            score_block()
    if ids:
        score_block()
    scores = {chunk_id: score for score, chunk_id in top}
    rows = Chunk.objects.filter(id__in=scores).values_list("id", *DETAIL_FIELDS)
    return [Match(*row[1:], score=scores[row[0]]) for row in rows]
