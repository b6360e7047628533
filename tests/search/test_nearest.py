"""The meaning ranking's order in the process (``vectors.nearest``): the best pieces are picked without sorting
every score, and the answer is the one a stable sort of every score gives, ties included."""

from __future__ import annotations

import numpy as np
import pytest

from threadmem.features.search.ranked import vectors


def stable_sort_answer(held: vectors.Held, query: np.ndarray, *, k: int, min_score: float) -> list:
    scores = np.where(held.live, held.matrix @ (query / np.linalg.norm(query)), -np.inf)
    found, seen = [], set()
    for index in np.argsort(-scores, kind="stable"):
        if scores[index] < min_score:
            break
        if int(held.messages[index]) not in seen:
            seen.add(int(held.messages[index]))
            found.append((int(held.messages[index]), int(held.ids[index]), float(scores[index])))
            if len(found) == k:
                break
    return found


@pytest.mark.parametrize("seed", range(6))
def test_the_answer_is_a_stable_sort_of_every_score(seed):
    rng = np.random.default_rng(seed)
    width, count = 8, 3_000
    # Few distinct vectors: many pieces tie, and a message's pieces crowd the first candidates.
    distinct = rng.normal(size=(40, width)).astype(np.float32)
    matrix = distinct[rng.integers(0, len(distinct), count)]
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    live = rng.random(count) > 0.05
    matrix[~live] = 0
    held = vectors.Held(
        ids=np.arange(1, count + 1, dtype=np.int64),
        messages=rng.integers(1, 200, count).astype(np.int64),
        matrix=matrix,
        live=live,
    )
    pieces = vectors.ScopePieces(ids=held.ids, key=("nearest-test", seed))
    vectors.clear()
    vectors._held[(*pieces.key, width)] = held
    query = rng.normal(size=width).astype(np.float32)
    try:
        for k, min_score in ((5, -1.0), (150, -1.0), (150, 0.3), (1, 0.9)):
            expected = stable_sort_answer(held, query, k=k, min_score=min_score)
            assert vectors.nearest(pieces=pieces, vector=query.tolist(), k=k, min_score=min_score) == expected
    finally:
        vectors.clear()
