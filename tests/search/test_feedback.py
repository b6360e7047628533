"""What the meaning ranking learns from its best pieces (``ranked/feedback.py``): in one thread the query moves
towards its best pieces; across threads each thread weighs by how well its own best pieces answer."""

from __future__ import annotations

import numpy as np
import pytest

from threadmem.features.search.ranked import feedback, vectors


def held_of(rows, threads=None) -> vectors.Held:
    matrix = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = np.where(norms > 0, matrix / np.where(norms > 0, norms, 1.0), 0.0)
    count = len(matrix)
    return vectors.Held(
        ids=np.arange(1, count + 1, dtype=np.int64),
        messages=np.arange(1, count + 1, dtype=np.int64),
        matrix=matrix.astype(np.float32),
        live=np.any(matrix != 0, axis=1),
        threads=None if threads is None else np.asarray(threads, dtype=np.int64),
        seqs=np.arange(count, dtype=np.int64),
    )


def cosine(held: vectors.Held):
    """The plain cosine as the scores ``refined`` reads (any similarity reads the same way)."""

    def score(vector: list[float]) -> np.ndarray:
        query = np.asarray(vector, dtype=np.float64)
        scores = held.matrix.astype(np.float64) @ (query / np.linalg.norm(query))
        return np.where(held.live, scores, -np.inf)

    return score


def test_in_one_thread_the_query_moves_towards_its_best_pieces():
    # The thread's best answers to the query lean towards a topic (the second axis); the evidence shares that
    # topic, a near miss an unrelated one (the third axis) and a little more of the query's own words.
    best = [[1.0, 0.3, 0.0], [1.0, 0.35, 0.0], [1.0, 0.25, 0.0]]
    evidence, near_miss = [0.6, 0.8, 0.0], [0.62, 0.0, 0.78]
    held = held_of([*best, evidence, near_miss, [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]], threads=[7] * 7)
    query = [1.0, 0.0, 0.0]

    first = cosine(held)(query)
    scores = feedback.refined(held, query, cosine(held))

    assert first[4] > first[3]  # read once: the near miss first
    assert scores[3] > scores[4]  # moved towards its best pieces: the evidence first
    moved = np.asarray(query) + feedback.FEEDBACK_WEIGHT * held.matrix[:3].astype(np.float64).mean(axis=0)
    assert scores == pytest.approx(cosine(held)(list(moved)))


def test_across_threads_the_thread_whose_best_pieces_answer_comes_first():
    on_topic = [[1.0, 0.1 * i, 0.0] for i in range(5)]  # a thread that answers the question again and again
    evidence = [0.5, 0.0, 0.866]
    lone = [0.55, 0.0, -0.835]  # another thread's only near piece, a little nearer than the evidence
    elsewhere = [[0.0, 1.0, 0.0]] * 4
    held = held_of([*on_topic, evidence, lone, *elsewhere], threads=[1] * 6 + [2] * 5)
    query = [1.0, 0.0, 0.0]

    first = cosine(held)(query)
    scores = feedback.refined(held, query, cosine(held))

    assert first[6] > first[5]
    assert scores[5] > scores[6]
    assert scores[:6] == pytest.approx(first[:6])  # the best thread is read as it was
    others = first[6:]
    shift = feedback.THREAD_WEIGHT * (np.sort(others)[::-1][: feedback.THREAD_PIECES].mean() - first[:5].mean())
    assert scores[6:] == pytest.approx(others + shift)


def test_a_piece_with_no_vector_stays_out_and_a_thread_with_none_moves_nothing():
    held = held_of([[1.0, 0.0], [0.8, 0.6], [0.0, 0.0], [0.0, 0.0], [0.6, 0.8]], threads=[1, 1, 2, 2, 3])

    scores = feedback.refined(held, [1.0, 0.0], cosine(held))

    assert np.isneginf(scores[2:4]).all()
    assert np.isfinite(scores[[0, 1, 4]]).all()


def test_a_thread_of_few_pieces_is_read_once():
    held = held_of([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7]], threads=[1, 1, 1])

    assert feedback.refined(held, [1.0, 0.0], cosine(held)) == pytest.approx(cosine(held)([1.0, 0.0]))


def test_across_threads_the_best_thread_is_scored_as_a_search_of_it_alone_reads_it():
    on_topic = [[1.0, 0.1 * i, 0.0] for i in range(5)]
    elsewhere = [[0.6, 0.0, 0.8], [0.0, 1.0, 0.0], [0.2, 0.0, 1.0]]
    held = held_of([*on_topic, *elsewhere], threads=[1] * 5 + [2] * 3)
    query = [1.0, 0.0, 0.0]
    asked = []

    def alone(rows: np.ndarray) -> np.ndarray:
        asked.append(rows.tolist())
        return np.arange(len(rows), dtype=np.float64)  # any scores: they replace the thread's

    scores = feedback.refined(held, query, cosine(held), alone=alone)

    assert asked == [[0, 1, 2, 3, 4]]  # the thread whose best pieces answer
    assert scores[:5] == pytest.approx([0, 1, 2, 3, 4])
    assert scores[5:] == pytest.approx(feedback.refined(held, query, cosine(held))[5:])  # the others as before
