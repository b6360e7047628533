"""Embedding a thread's messages: what is missing, in batches, failures on record.

``embed_thread`` is the whole job: it reads the thread's messages after its
``EmbeddingProgress.embedded_seq``, cuts them into pieces (``chunks.py``),
asks the embedding model for their vectors (``choice.embed``: the configured
model's server, or the static model in this process) a batch at a time
and stores each batch with the new ``embedded_seq`` in one transaction. Runs
are idempotent: two runs over the same messages store each piece once
(``chunk_unique_part``), so a redelivered task or an overlapping backfill
costs model calls, never duplicates.

A thread being deleted (threadmem/features/erase/thread_delete.py) stops a run: its
progress row goes when the thread is withdrawn, and each batch stores its
pieces under that row's lock, so a batch lands wholly before the withdrawal
(and its pieces go with the thread) or finds the row gone and stores
nothing. A run never creates the row for a withdrawn thread.

Only messages search may ever show are embedded (kind ``message``,
``model_visible``); summaries and machine events are skipped for good.
Isolation and supersession can change later and are applied when searching.
"""

from __future__ import annotations

import logging
from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
from django.db import DatabaseError, connection, transaction
from django.db.models import Exists, F, OuterRef
from django.db.models.functions import Greatest, Length
from django.utils import timezone

from threadmem.domain.backlogs import threads_to_embed
from threadmem.features.embeddings import choice
from threadmem.features.embeddings.chunks import CONTENT_FIELD, message_pieces, packed_sentences, sentences
from threadmem.infrastructure import llm
from threadmem.infrastructure.fields import pgvector_in_use
from threadmem.models import WITHDRAWN_PREFIX, Chunk, EmbeddingProgress, Message, Thread, ToolArgument

logger = logging.getLogger(__name__)

# Pieces per model round trip and per transaction: a 60,000-character tool
# result is ~75 pieces, a typical message one.
PIECES_PER_BATCH = 256
# Messages read per query while filling a batch.
MESSAGES_PER_READ = 200
# Texts a run remembers the vectors of, the latest: an agent's session repeats itself (a file read again, the same
# command's output), and a text met again in the run is not embedded again. 2,048 of the sentence model's vectors
# are ~15 MB.
REMEMBERED_TEXTS = 2_048
# pgvector indexes ``vector`` up to 2,000 dimensions and ``halfvec`` up to
# 4,000; larger embeddings are ranked exactly.
VECTOR_INDEX_MAX_DIMENSIONS = 2_000
HALFVEC_INDEX_MAX_DIMENSIONS = 4_000
# How much of an error an EmbeddingProgress row keeps.
ERROR_MAX_CHARS = 2_000
# The messages whose content is prose, whose sentences are embedded too (a tool's output is not cut so).
PROSE_ROLES = (Message.Role.USER, Message.Role.ASSISTANT)


class _ThreadDeleted(Exception):
    """The thread was withdrawn for deletion while the run worked: it stops, storing nothing more."""


@dataclass(frozen=True)
class EmbedOutcome:
    thread_id: int
    model: str
    embedded_seq: int
    messages: int  # messages read (embedded or skipped)
    chunks: int  # pieces stored


def index_expression(dimensions: int) -> str | None:
    """The SQL expression the HNSW index of this dimension is built on (None: no index, exact ranking)."""
    if dimensions <= VECTOR_INDEX_MAX_DIMENSIONS:
        return f"(embedding::vector({dimensions}))"
    if dimensions <= HALFVEC_INDEX_MAX_DIMENSIONS:
        return f"(embedding::halfvec({dimensions}))"
    return None


def _index_opclass(dimensions: int) -> str:
    return "vector_cosine_ops" if dimensions <= VECTOR_INDEX_MAX_DIMENSIONS else "halfvec_cosine_ops"


_indexed_dimensions: set[int] = set()


def ensure_hnsw_index(dimensions: int) -> None:
    """PostgreSQL: the HNSW (cosine) index over chunks of this dimension, created once.

    The column is ``vector`` without a fixed dimension (one column serves any
    model), so the index is a partial expression index per dimension; the
    global retriever orders by the same expression.
    """
    if dimensions in _indexed_dimensions or not pgvector_in_use(connection):
        return
    expression = index_expression(dimensions)
    if expression is not None:
        statement = (
            f"CREATE INDEX IF NOT EXISTS chunk_embedding_hnsw_{dimensions} ON threadmem_chunk "
            f"USING hnsw ({expression} {_index_opclass(dimensions)}) WHERE dimensions = {dimensions}"
        )
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(statement)
        except DatabaseError:
            # Another worker created it at the same moment: it exists either way.
            logger.info("HNSW index for %s dimensions: created concurrently", dimensions)
    # Remembered once committed: an outer transaction rolled back takes the index with it.
    transaction.on_commit(lambda: _indexed_dimensions.add(dimensions))


def _leaves(message_ids: list[int]) -> dict[int, list[tuple[str, str]]]:
    leaves: dict[int, list[tuple[str, str]]] = defaultdict(list)
    rows = (
        ToolArgument.objects.filter(message_id__in=message_ids)
        .order_by("message_id", "call_index", "id")
        .values_list("message_id", "path", "value")
    )
    for message_id, path, value in rows:
        leaves[message_id].append((path, value))
    return leaves


def _record_failure(progress: EmbeddingProgress, error: Exception) -> None:
    EmbeddingProgress.objects.filter(pk=progress.pk).update(
        failures=F("failures") + 1,
        last_error=f"{type(error).__name__}: {error}"[:ERROR_MAX_CHARS],
        failed_at=timezone.now(),
    )


def embed_thread(*, thread_id: int, model: str | None = None) -> EmbedOutcome:
    """Embed every message of the thread not embedded yet for ``model``; raises the model's error.

    A failure is recorded on the thread's EmbeddingProgress row (and the
    batches stored before it stay stored) before the error propagates, so the
    caller decides about retrying and operators see what happened.
    """
    model = model or choice.active_model()
    if not model:
        raise llm.LLMNotConfigured("no embedding model is configured: set THREADMEM_EMBEDDING_MODEL")
    progress = _progress(thread_id=thread_id, model=model)
    messages_read = chunks_stored = 0
    if progress is None:  # deleted, or being deleted
        return EmbedOutcome(thread_id=thread_id, model=model, embedded_seq=0, messages=0, chunks=0)
    after = progress.embedded_seq
    remembered = _Remembered()
    try:
        while True:
            batch, split, through_seq, read, read_as = _next_batch(thread_id=thread_id, model=model, after=after)
            if read == 0:
                break
            stored, through_seq = _store(
                progress=progress,
                model=model,
                batch=batch,
                split=split,
                through_seq=through_seq,
                read_as=read_as,
                remembered=remembered,
            )
            chunks_stored += stored
            messages_read += read
            after = through_seq
    except _ThreadDeleted:
        return EmbedOutcome(
            thread_id=thread_id, model=model, embedded_seq=after, messages=messages_read, chunks=chunks_stored
        )
    except llm.LLMError as error:
        _record_failure(progress, error)
        raise
    if progress.failures:
        EmbeddingProgress.objects.filter(pk=progress.pk).update(failures=0, last_error="")
    return EmbedOutcome(
        thread_id=thread_id, model=model, embedded_seq=after, messages=messages_read, chunks=chunks_stored
    )


def _progress(*, thread_id: int, model: str) -> EmbeddingProgress | None:
    """The thread's progress row for ``model``, created if missing; None for a thread gone or being deleted.

    Read under the thread's row lock, which withdrawing a thread holds: a row created here either exists when
    the thread is withdrawn (and goes then) or is never created.
    """
    with transaction.atomic():
        live = (
            Thread.objects.select_for_update()
            .filter(pk=thread_id)
            .exclude(channel__startswith=WITHDRAWN_PREFIX)
            .values_list("pk", flat=True)
        )
        if live.first() is None:
            return None
        progress, _ = EmbeddingProgress.objects.get_or_create(thread_id=thread_id, model=model)
        return progress


# What a message was when its pieces were cut: seq, characters of content, tool calls.
ReadAs = dict[int, tuple[int, int, Any]]


def _next_batch(*, thread_id: int, model: str, after: int) -> tuple[list[Chunk], list[list[str]], int, int, ReadAs]:
    """The pieces of the next messages after seq ``after``: about PIECES_PER_BATCH, whole messages only.

    Returns (unsaved chunks without vectors, each one's sentences to embed too, the seq they run through,
    messages read, what the cut messages were). A message is never split across batches, so
    ``embedded_seq`` always marks whole messages. A message that already has
    pieces of ``model`` is passed over: its pieces are stored whole, in one
    transaction, and ``embedded_seq`` goes back past embedded messages when an
    import grows an earlier one (``imports.generations``).
    """
    embedded = Chunk.objects.filter(message_id=OuterRef("pk"), model=model)
    pieces: list[Chunk] = []
    split: list[list[str]] = []
    with_sentences = choice.embeds_sentences(model)
    read_as: ReadAs = {}
    through_seq, read = after, 0
    while len(pieces) < PIECES_PER_BATCH:
        rows = list(
            Message.objects.filter(thread_id=thread_id, seq__gt=through_seq)
            .order_by("seq")
            .annotate(embedded=Exists(embedded))
            .values_list("id", "seq", "kind", "model_visible", "content", "tool_calls", "embedded", "role")[
                :MESSAGES_PER_READ
            ]
        )
        with_arguments = [row[0] for row in rows if row[5]]
        leaves = _leaves(with_arguments) if with_arguments else {}
        for message_id, seq, kind, visible, content, calls, done, role in rows:
            if kind == Message.Kind.MESSAGE and visible and not done:
                read_as[message_id] = (seq, len(content), calls)
                prose = with_sentences and role in PROSE_ROLES
                for part, piece in enumerate(message_pieces(content, leaves.get(message_id, []))):
                    pieces.append(
                        Chunk(
                            message_id=message_id,
                            part=part,
                            field=piece.field,
                            start=piece.start,
                            end_of_field=piece.last,
                            text=piece.text,
                        )
                    )
                    split.append(sentences(piece.text) if prose and piece.field == CONTENT_FIELD else [])
            through_seq, read = seq, read + 1
            if len(pieces) >= PIECES_PER_BATCH:
                break
        if len(rows) < MESSAGES_PER_READ:
            break
    return pieces, split, through_seq, read, read_as


def _grown_since_read(read_as: ReadAs) -> int | None:
    """The lowest seq among the messages changed since their pieces were cut (an import grew them), or None.

    The message rows are locked until the caller's transaction ends: a grow
    (``imports.generations``) waits, then drops the pieces stored here.
    """
    rows = (
        Message.objects.select_for_update()
        .filter(id__in=list(read_as))
        .annotate(chars=Length("content"))
        .values_list("id", "chars", "tool_calls")
    )
    changed = [read_as[pk][0] for pk, chars, calls in rows if (chars, calls) != read_as[pk][1:]]
    return min(changed) if changed else None


class _Remembered:
    """The vectors of the texts a run embedded last (``REMEMBERED_TEXTS``), as float64 arrays: exact, and ~1/4 of
    a list of floats."""

    def __init__(self) -> None:
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()

    def vectors(self, texts: list[str], *, model: str) -> list[list[float]]:
        """One vector per text, in order: a text met earlier in the run (or twice here) is embedded once."""
        missing = list(dict.fromkeys(text for text in texts if text not in self._vectors))
        found = dict(zip(missing, choice.embed(missing, model=model) if missing else [], strict=True))
        for text in texts:
            if text not in found:
                self._vectors.move_to_end(text)
                found[text] = self._vectors[text].tolist()
        vectors = [found[text] for text in texts]
        for text in missing:
            self._vectors[text] = np.asarray(found[text], dtype=np.float64)
        while len(self._vectors) > REMEMBERED_TEXTS:
            self._vectors.popitem(last=False)
        return vectors


def _store(
    *,
    progress: EmbeddingProgress,
    model: str,
    batch: list[Chunk],
    split: list[list[str]],
    through_seq: int,
    read_as: ReadAs,
    remembered: _Remembered,
) -> tuple[int, int]:
    """Embed and store the batch with the progress it makes, each piece's ``split`` sentences' vectors with it;
    answer (pieces stored, the seq it runs through).

    A message an import grew while the model was answering (``--follow``)
    keeps none of its old pieces: the batch stops before it, and the next
    batch reads it as it is now.
    """
    if batch:
        wanted = [chunk.text for chunk in batch] + [sentence for its in split for sentence in its]
        vectors = remembered.vectors(wanted, model=model)
        dimensions = {len(vector) for vector in vectors}
        if len(dimensions) != 1:
            raise llm.LLMBadResponse(f"embeddings: vectors of different lengths in one answer: {sorted(dimensions)}")
        (size,) = dimensions
        rest = iter(vectors[len(batch) :])
        for chunk, vector, its in zip(batch, vectors[: len(batch)], split, strict=True):
            chunk.model, chunk.dimensions, chunk.embedding = model, size, vector
            chunk.sentences = packed_sentences([next(rest) for _ in its])
        ensure_hnsw_index(size)
    with transaction.atomic():
        grown = _grown_since_read(read_as) if batch else None
        # The progress row's lock after the messages' (the order a deletion and an erasure take them in): a
        # thread withdrawn for deletion has none, and this batch stores nothing.
        held = EmbeddingProgress.objects.select_for_update().filter(pk=progress.pk).values_list("pk", flat=True)
        if held.first() is None:
            raise _ThreadDeleted
        if grown is not None:
            through_seq = grown - 1
            batch = [chunk for chunk in batch if read_as[chunk.message_id][0] < grown]
        Chunk.objects.bulk_create(batch, ignore_conflicts=True)
        # A stored batch ends a run of failures in the same transaction: whoever sees its chunks sees none.
        EmbeddingProgress.objects.filter(pk=progress.pk).update(
            embedded_seq=Greatest(F("embedded_seq"), through_seq),
            chunks=F("chunks") + len(batch),
            changes=F("changes") + 1,
            failures=0,
            last_error="",
            updated_at=timezone.now(),  # update() skips auto_now: the sweep reads it to pass over a working run
        )
    return len(batch), through_seq


def threads_behind(model: str | None = None, *, idle_for: timedelta | None = None) -> list[int]:
    """Ids of threads with messages to embed for ``model`` (``backlogs.threads_to_embed``): the backfill's work list.

    ``idle_for``: leave out threads whose progress changed more recently (a run is at work on them).
    """
    model = model or choice.active_model()
    threads = threads_to_embed(model)
    if idle_for is not None:
        busy = EmbeddingProgress.objects.filter(
            thread=OuterRef("pk"), model=model, updated_at__gt=timezone.now() - idle_for
        )
        threads = threads.exclude(Exists(busy))
    return list(threads.order_by("id").values_list("id", flat=True))
