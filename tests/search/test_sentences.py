"""A turn read by its best sentence too (``ranked/sentences.py``), and which sentences are embedded
(``embeddings/chunks.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from threadmem.features.embeddings import chunks
from threadmem.features.search.ranked import common, sentences, vectors

PARTS = ((2, 0.5), (2, 0.5))


def unit_rows(rows) -> np.ndarray:
    matrix = np.asarray(rows, dtype=np.float64)
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def held_of(rows, *, threads, said=None) -> vectors.Held:
    """Pieces of ``rows`` (ids 1, 2, …); ``said``: (piece id, sentence rows) of the pieces that have sentences."""
    matrix = unit_rows(rows)
    said = said or []
    return vectors.Held(
        ids=np.arange(1, len(matrix) + 1, dtype=np.int64),
        messages=np.arange(1, len(matrix) + 1, dtype=np.int64),
        matrix=matrix,
        live=np.ones(len(matrix), dtype=bool),
        threads=np.asarray(threads, dtype=np.int64),
        seqs=np.arange(len(matrix), dtype=np.int64),
        sentences=unit_rows([row for _, its in said for row in its]) if said else np.zeros((0, 4), np.float32),
        sentence_of=np.asarray([piece for piece, its in said for _ in its], dtype=np.int64),
    )


# The question's direction, then others. A turn that says two things sits between them; a near miss leans a
# little more to the question than the turn does, and says one thing.
QUERY = [1.0, 0.0, 1.0, 0.0]
TOPICS = [[0.0, 1.0, 0.0, 1.0], [0.3, 1.0, 0.0, 0.2], [0.0, 0.2, 0.1, 1.0], [0.1, 0.0, 0.0, 1.0]]
TURN = [0.5, 0.5, 0.5, 0.5]
NEAR_MISS = [0.55, 0.45, 0.55, 0.45]
SAID = [(1, [[1.0, 0.05, 1.0, 0.05], [0.0, 1.0, 0.0, 1.0]])]  # the turn's two sentences: the answer, the rest


def test_in_one_thread_a_turn_scores_by_its_best_sentence_too():
    held = held_of([TURN, NEAR_MISS, *TOPICS], threads=[1] * 6, said=SAID)

    whole = common.scored(held, QUERY, PARTS)
    scores = sentences.scored(held, QUERY, PARTS)

    assert whole[1] > whole[0]  # as wholes, the near miss first
    assert scores[0] > scores[1]  # its best sentence answers: the turn first
    rows = vectors.Held(
        ids=held.sentence_of, messages=held.sentence_of, matrix=held.sentences, live=np.ones(2, dtype=bool)
    )
    best = common.scored(rows, QUERY, PARTS).max()
    assert scores[0] == pytest.approx((1 - sentences.SENTENCE_SHARE) * whole[0] + sentences.SENTENCE_SHARE * best)
    assert scores[1:] == pytest.approx(whole[1:])  # a piece without sentences scores as a whole


def test_across_threads_a_turn_scores_as_a_whole():
    held = held_of([TURN, NEAR_MISS, *TOPICS], threads=[1, 1, 1, 2, 2, 2], said=SAID)

    assert sentences.scored(held, QUERY, PARTS) == pytest.approx(common.scored(held, QUERY, PARTS))


def test_a_dead_piece_stays_out_whatever_its_sentences():
    held = held_of([TURN, NEAR_MISS, *TOPICS], threads=[1] * 6, said=SAID)
    dead = vectors.Held(**{**held.__dict__, "live": np.r_[False, np.ones(5, dtype=bool)], "derived": {}})

    assert np.isneginf(sentences.scored(dead, QUERY, PARTS)[0])


def test_a_turn_of_several_sentences_is_cut_into_them_and_any_other_piece_is_not():
    turn = "Rest assured, I will cherish it! On another note, I finished a bookmark.\nIt was for my writing club."

    assert chunks.sentences(turn) == [
        "Rest assured, I will cherish it!",
        "On another note, I finished a bookmark.",
        "It was for my writing club.",
    ]
    assert chunks.sentences("Ok. Sure thing. The deploy failed at midnight.") == []  # one sentence of 3+ words
    assert chunks.sentences("The deploy failed at midnight.") == []
    many = " ".join(f"Step {n} ran fine." for n in range(chunks.SENTENCES_MAX + 1))
    assert chunks.sentences(many) == []  # a document, not a turn
