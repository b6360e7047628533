"""A turn read by its best sentence too: the sentence model's meaning ranking in one thread.

A conversation's turn often says several things ("Rest assured, I will
cherish it! On another note, I just finished a bookmark for one of the
ladies at my writing club!"), and one vector of the whole turn sits between
them, near none. Each sentence of such a turn has its own vector
(``Chunk.sentences``, embedded beside the piece: ``embeddings/chunks.py``), so
in one thread a piece scores ``1 - SENTENCE_SHARE`` times its own similarity
plus ``SENTENCE_SHARE`` times its best sentence's, each read without the
scope's common direction (``common.py``; the sentences' own, computed once
per held scope). A piece without sentences scores as before.

Across several threads the pieces score as wholes (a lone sentence near the
question in another conversation pulled it in); the thread the question is
about is then read as a search of it alone reads it, sentences included
(``feedback.refined``'s ``alone``). Tuned on LoCoMo's tune half
(docs/benchmarks.md, "A turn read by its best sentence").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from threadmem.features.search.ranked import common, feedback, vectors

SENTENCE_SHARE = 0.35


@dataclass(frozen=True)
class _Sentences:
    held: vectors.Held  # the sentences as held rows (their own common direction is derived there)
    piece: np.ndarray  # the index, in the pieces' held scope, of the piece each sentence is of


def scored(held: vectors.Held, vector: list[float] | np.ndarray, parts: tuple[tuple[int, float], ...]) -> np.ndarray:
    """Each held piece's similarity to ``vector`` (``common.scored``), mixed with its best sentence's in one
    thread."""
    scores = common.scored(held, vector, parts)
    found = _sentences(held)
    if found is None:
        return scores
    best = np.full(len(held.ids), -np.inf)
    np.maximum.at(best, found.piece, common.scored(found.held, vector, parts))
    return np.where(
        np.isfinite(best) & np.isfinite(scores), (1 - SENTENCE_SHARE) * scores + SENTENCE_SHARE * best, scores
    )


def _sentences(held: vectors.Held) -> _Sentences | None:
    """``held``'s sentences as rows of their own, once per held scope; None across threads or without any."""

    def compute() -> _Sentences | None:
        if held.sentences is None or held.sentence_of is None or not len(held.sentences):
            return None
        piece = np.searchsorted(held.ids, held.sentence_of)
        rows = vectors.Held(
            ids=held.sentence_of,
            messages=held.messages[piece],
            matrix=held.sentences,
            live=held.live[piece] & np.any(held.sentences != 0, axis=1),
        )
        return _Sentences(held=rows, piece=piece)

    if feedback.thread_count(held) > 1:
        return None
    return vectors.derived(held, "sentences", compute)
