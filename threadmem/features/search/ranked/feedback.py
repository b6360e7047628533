"""What the sentence model's meaning ranking learns from its own best pieces before it answers.

A question's vector and its evidence's are near, not the same: "What
setback did Melanie face?" and "Last month I got hurt and had to take a
break from pottery" share little but the turn's cone. The best pieces of a
first reading say which way the scope answers, so:

- in one thread, the query is moved towards its ``FEEDBACK_PIECES`` best
  pieces (their mean, at ``FEEDBACK_WEIGHT``: Rocchio's relevance feedback
  without a judge) and the scope is read again;
- across several threads, each thread weighs by how well its own
  ``THREAD_PIECES`` best pieces answer: a piece's score moves by
  ``THREAD_WEIGHT`` times its thread's mean of those scores less the best
  thread's, so the thread the question is about comes first and a lone
  near miss in another thread falls behind. Feedback over the whole scope
  is left out there (the best pieces of several threads pull the query
  between them); the best thread is then read as a search of it alone reads
  it (``alone``): its own feedback, its own common direction, its turns' sentences.

Both read only the scores of the pieces the caller's scope may show. Tuned on LoCoMo's tune half
(docs/benchmarks.md, "What the meaning ranking learns from its best pieces").
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from threadmem.features.search.ranked import common, vectors

FEEDBACK_PIECES = 3
FEEDBACK_WEIGHT = 0.5
THREAD_PIECES = 5
THREAD_WEIGHT = 1.0


def refined(
    held: vectors.Held,
    vector: list[float],
    score: Callable[[list[float] | np.ndarray], np.ndarray],
    alone: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """``score(vector)`` (each held piece's similarity, -inf: never a match) refined by its best pieces.

    ``alone``: across threads, the scores of the best thread's pieces (their indexes in ``held``) as a search of
    that thread alone reads them, which replace theirs: the thread the question is about is ranked as if asked
    there, the others follow by their shifted scores."""
    scores = score(vector)
    groups, count = _threads(held)
    if count > 1:
        shift = _thread_shift(scores, groups, count)
        shifted = scores + shift[groups]
        if alone is not None:
            rows = np.flatnonzero(groups == int(np.argmax(shift)))
            shifted[rows] = alone(rows)
        return shifted
    live = np.flatnonzero(np.isfinite(scores))
    if len(live) <= FEEDBACK_PIECES:
        return scores
    best = live[np.argpartition(-scores[live], FEEDBACK_PIECES - 1)[:FEEDBACK_PIECES]]
    return score(common.unit(vector) + FEEDBACK_WEIGHT * held.matrix[best].astype(np.float64).mean(axis=0))


def thread_count(held: vectors.Held) -> int:
    """How many threads ``held``'s pieces are of (computed once per held scope)."""
    return _threads(held)[1]


def _threads(held: vectors.Held) -> tuple[np.ndarray, int]:
    """Each held piece's thread as an index from 0, and how many threads; computed once per held scope."""

    def compute() -> tuple[np.ndarray, int]:
        if held.threads is None or not len(held.threads):
            return np.zeros(len(held.ids), dtype=np.int64), 1
        found, groups = np.unique(held.threads, return_inverse=True)
        return groups, len(found)

    return vectors.derived(held, "threads", compute)


def _thread_shift(scores: np.ndarray, groups: np.ndarray, count: int) -> np.ndarray:
    """Each thread's shift: THREAD_WEIGHT times its THREAD_PIECES best live scores' mean less the best thread's
    (a thread with no live piece: the least shift)."""
    live = np.isfinite(scores)
    values, at = scores[live], groups[live]
    order = np.lexsort((-values, at))
    at, values = at[order], values[order]
    firsts = np.flatnonzero(np.r_[True, at[1:] != at[:-1]])
    rank = np.arange(len(at)) - np.repeat(firsts, np.diff(np.r_[firsts, len(at)]))
    kept = rank < THREAD_PIECES
    sums = np.bincount(at[kept], weights=values[kept], minlength=count)
    taken = np.bincount(at[kept], minlength=count)
    means = np.where(taken > 0, sums / np.maximum(taken, 1), -np.inf)
    if not np.isfinite(means).any():
        return np.zeros(count)
    shift = THREAD_WEIGHT * (means - means.max())
    return np.where(np.isfinite(shift), shift, 0.0)  # a thread with no live piece has only -inf scores anyway
