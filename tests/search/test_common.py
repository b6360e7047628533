"""A scope's common direction (``ranked/common.py``): each part of a vector is read centred on the scope's mean and
without its first principal direction, both shrunk for a small scope; a piece that only shares the scope's
direction no longer outranks one that shares the query's own."""

from __future__ import annotations

import numpy as np
import pytest

from threadmem.features.search.ranked import common, vectors

PARTS = ((3, 0.5), (4, 0.5))


def held_of(rows: np.ndarray) -> vectors.Held:
    rows = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    count = len(rows)
    return vectors.Held(
        ids=np.arange(1, count + 1, dtype=np.int64),
        messages=np.arange(1, count + 1, dtype=np.int64),
        matrix=rows.astype(np.float32),
        live=np.ones(count, dtype=bool),
    )


def joined(*parts: np.ndarray) -> np.ndarray:
    """Unit parts joined as the sentence model joins them: each scaled by the square root of its share."""
    shares = [share for _, share in PARTS]
    return np.concatenate([np.sqrt(s) * np.asarray(p) / np.linalg.norm(p) for p, s in zip(parts, shares, strict=True)])


def reference(held: vectors.Held, query: np.ndarray, shrink: float) -> np.ndarray:
    """The definition, by NumPy's SVD over the whole scope."""
    total, start = np.zeros(len(held.ids)), 0
    for width, share in PARTS:
        block = held.matrix[:, start : start + width].astype(np.float64)
        mean = block.mean(axis=0) * shrink
        direction = np.linalg.svd(block - mean, full_matrices=False)[2][0]
        keep = np.eye(width) - shrink * np.outer(direction, direction)
        pieces, asked = (block - mean) @ keep, keep @ (query[start : start + width] - mean)
        total += share * pieces @ asked / (np.linalg.norm(pieces, axis=1) * np.linalg.norm(asked))
        start += width
    return total


def test_each_part_is_read_without_the_scopes_mean_and_first_direction():
    random = np.random.default_rng(7)
    rows = np.array([joined(random.normal(1.0, 0.3, 3), random.normal(0.5, 0.4, 4)) for _ in range(300)])
    held = held_of(rows)
    query = joined(random.normal(0.0, 1.0, 3), random.normal(0.0, 1.0, 4))

    scores = common.scored(held, list(query), PARTS)

    shrink = 300 / (300 + common.PRIOR_PIECES)
    assert scores == pytest.approx(reference(held, query, shrink), abs=1e-4)
    plain = held.matrix @ query.astype(np.float32)
    assert np.abs(scores - plain).max() > 0.1  # not the plain cosine


def test_a_piece_that_only_shares_the_scopes_direction_no_longer_outranks_the_query_s_own():
    random = np.random.default_rng(3)
    # A conversation: every turn mostly along the first axis, varying along the second and third.
    turns = [joined([3.0, *random.normal(0.0, 0.5, 2)], [3.0, *random.normal(0.0, 0.5, 3)]) for _ in range(400)]
    generic = joined([3.0, 0.1, 0.0], [3.0, 0.1, 0.0, 0.0])  # the conversation's direction, little else
    own = joined([3.0, 0.0, 1.0], [3.0, 0.0, 0.0, 1.0])  # that, and what the query asks about (the last axis)
    held = held_of(np.array([*turns, generic, own]))
    query = joined([3.0, 0.0, 0.3], [3.0, 0.0, 0.0, 0.3])

    plain = held.matrix @ query.astype(np.float32)
    scores = common.scored(held, list(query), PARTS)

    assert plain[-2] > plain[-1]  # the plain cosine: the generic turn first
    assert int(np.argmax(scores)) == len(turns) + 1  # without the common direction: the query's own
    assert scores[-1] > 0.5 > scores[-2]


def test_a_small_scope_is_read_nearly_as_the_plain_cosine():
    random = np.random.default_rng(11)
    held = held_of(np.array([joined(random.normal(1.0, 0.3, 3), random.normal(0.5, 0.4, 4)) for _ in range(3)]))
    query = joined(random.normal(1.0, 0.3, 3), random.normal(0.5, 0.4, 4))

    scores = common.scored(held, list(query), PARTS)

    plain = held.matrix @ query.astype(np.float32)
    assert scores == pytest.approx(plain, abs=0.05)
    assert list(np.argsort(-scores)) == list(np.argsort(-plain))


def test_a_piece_with_no_vector_is_never_a_match():
    random = np.random.default_rng(5)
    rows = np.array([joined(random.normal(1.0, 0.3, 3), random.normal(0.5, 0.4, 4)) for _ in range(20)])
    held = held_of(rows)
    held.matrix[4] = 0.0
    dead = vectors.Held(ids=held.ids, messages=held.messages, matrix=held.matrix, live=np.any(held.matrix != 0, axis=1))

    scores = common.scored(dead, list(rows[0]), PARTS)

    assert scores[4] == -np.inf and np.isfinite(np.delete(scores, 4)).all()


def test_it_is_computed_once_per_held_scope():
    random = np.random.default_rng(2)
    held = held_of(np.array([joined(random.normal(1.0, 0.3, 3), random.normal(0.5, 0.4, 4)) for _ in range(50)]))

    common.scored(held, list(held.matrix[0]), PARTS)
    kept = dict(held.derived)
    common.scored(held, list(held.matrix[1]), PARTS)

    assert len(kept) == 1 and all(held.derived[name] is part for name, part in kept.items())


def test_a_query_reads_the_same_whatever_its_length():
    random = np.random.default_rng(4)
    held = held_of(np.array([joined(random.normal(1.0, 0.3, 3), random.normal(0.5, 0.4, 4)) for _ in range(200)]))
    query = joined(random.normal(0.0, 1.0, 3), random.normal(0.0, 1.0, 4))

    assert common.scored(held, list(3 * query), PARTS) == pytest.approx(common.scored(held, list(query), PARTS))
