"""Meaning while the sentence model loads: the static model's, computed for the thread searched.

A web process starts loading the sentence model as it starts
(``embeddings/sentence.py``). A thread searched meanwhile is ranked by
meaning with the static model (``embeddings/static.py``, quick to load),
fused with the keyword ranking at the static model's weight, as a store
embedded with it would be. A store holds one model's vectors, so the static
ones are computed here: the thread's pieces are read and embedded once per
held scope, then a query costs one product. Nothing is stored. A search without a
channel is ranked by keyword alone meanwhile: embedding an owner's every
piece does not fit its budget (docs/benchmarks.md,
"The static model while the sentence model loads").
"""

from __future__ import annotations

import numpy as np

from threadmem.domain.scope import SearchScope
from threadmem.features.embeddings import sentence, static
from threadmem.features.search.ranked import vectors
from threadmem.models import Chunk


def possible(scope: SearchScope, held: vectors.ScopePieces | None) -> bool:
    """Whether the static model can stand in for the sentence model in this search: one thread's scope held in
    this process, and its package installed."""
    return not scope.is_global and held is not None and static.available()


def meaning(*, held: vectors.ScopePieces, query: str, k: int, min_score: float) -> list[tuple[int, int, float]]:
    """(message id, its best piece's id, similarity) of the ``k`` messages of ``held`` nearest to ``query`` by the
    static model, at least ``min_score``, best first."""
    pieces = vectors.held_scope(pieces=held, width=sentence.SENTENCE_DIMENSIONS)
    if not len(pieces.ids):
        return []
    matrix = vectors.derived(pieces, "static", lambda: _embedded(pieces))
    (vector,) = static.embed([query])
    query_vector = np.asarray(vector, dtype=matrix.dtype)
    if not query_vector.any():
        return []
    scores = np.where(pieces.live & matrix.any(axis=1), matrix @ query_vector, -np.inf)
    return vectors.best_of(pieces, scores, k=k, min_score=min_score)


def _embedded(pieces: vectors.Held) -> np.ndarray:
    """The static model's unit vector of each held piece, in the held order (a piece gone since: a zero row)."""
    texts = dict(Chunk.objects.filter(id__in=pieces.ids.tolist()).values_list("id", "text"))
    return np.asarray(static.embed([texts.get(piece, "") for piece in pieces.ids.tolist()]), dtype=np.float32)
