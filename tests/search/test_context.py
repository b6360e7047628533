"""Rankings in context (``ranked/context.py``): a message's neighbours in its thread lift it, by meaning and by
keyword; they never list a message that says nothing of the query; with no weight it is the plain ranking; the
meaning ranking breaks the keyword ranking's ties."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from threadmem.features.search.ranked import context, vectors

WIDTH = 4
QUERY = [1.0, 0.0, 0.0, 0.0]


def unit(similarity: float) -> list[float]:
    """A unit vector whose similarity to QUERY is ``similarity``."""
    return [similarity, float(np.sqrt(1 - similarity**2)), 0.0, 0.0]


def ranked_in_context(scope) -> list[tuple[int, int, float]]:
    """The meaning ranking in context, as the lane lists it."""
    return context.listed(context.meaning(pieces=scope, vector=QUERY), k=10, min_score=0.3)


@pytest.fixture
def scope():
    """Two threads: (piece id, message id, thread, seq, similarity to the query)."""
    rows = [
        (1, 10, 1, 1, 0.50),  # beside message 11, which is close to the query
        (2, 11, 1, 2, 0.90),
        (3, 11, 1, 2, 0.20),  # a second, weaker piece of message 11
        (4, 12, 1, 4, 0.50),  # seq 3 is not in the scope: no neighbour
        (5, 20, 2, 1, 0.10),  # below the threshold, whatever its neighbour
        (6, 21, 2, 2, 0.95),
        (7, 22, 2, 3, 0.50),  # after message 21
    ]
    held = vectors.Held(
        ids=np.array([r[0] for r in rows], dtype=np.int64),
        messages=np.array([r[1] for r in rows], dtype=np.int64),
        matrix=np.array([unit(r[4]) for r in rows], dtype=np.float32),
        live=np.ones(len(rows), dtype=bool),
        threads=np.array([r[2] for r in rows], dtype=np.int64),
        seqs=np.array([r[3] for r in rows], dtype=np.int64),
    )
    pieces = vectors.ScopePieces(ids=held.ids, key=("context-test",))
    vectors.clear()
    vectors._held[(*pieces.key, WIDTH)] = held
    del held  # held by vectors.py alone, as a scope read by a search
    yield pieces
    vectors.clear()


def test_a_neighbour_close_to_the_query_lifts_a_message(scope, monkeypatch):
    monkeypatch.setattr(context, "CONTEXT_WEIGHT", 0.4)

    found = ranked_in_context(scope)

    assert [(message, piece) for message, piece, _ in found] == [(21, 6), (11, 2), (22, 7), (10, 1), (12, 4)]
    scores = {message: score for message, _, score in found}
    assert scores[22] == pytest.approx(0.50 + 0.4 * 0.95, abs=1e-5)
    assert scores[12] == pytest.approx(0.50, abs=1e-5)  # its thread's seq 3 is not shown: no context
    assert 20 not in scores  # 0.10 of its own: its neighbour's 0.95 does not list it


def test_without_a_weight_it_is_the_plain_ranking(scope, monkeypatch):
    monkeypatch.setattr(context, "CONTEXT_WEIGHT", 0.0)

    plain = vectors.nearest(pieces=scope, vector=QUERY, k=10, min_score=0.3)

    assert ranked_in_context(scope) == plain


def test_a_kept_layout_does_not_keep_its_scopes_vectors_alive(scope):
    held = vectors._held[(*scope.key, WIDTH)]
    ranked_in_context(scope)
    gone, layout_gone = weakref.ref(held), weakref.ref(context.layout(held))

    del held
    vectors.clear()  # vectors.py drops the scope (its byte cap, or a newer read of it)
    gc.collect()

    assert gone() is None
    assert layout_gone() is None  # nor its message ids


def test_keyword_relevance_in_context_lifts_a_message_beside_a_strong_match(scope, monkeypatch):
    monkeypatch.setattr(context, "CONTEXT_WEIGHT", 0.5)
    ranked = [(6, 21, 5.0), (4, 12, 1.2), (7, 22, 1.0)]  # BM25's pieces: 22 and 12 each hold one query word

    found = context.listed(context.keyword(pieces=scope, ranked=ranked, width=WIDTH), k=10, min_score=0.0)

    assert found == [(21, 6, 5.0 + 0.5 * 1.0), (22, 7, 1.0 + 0.5 * 5.0), (12, 4, 1.2)]  # 20, beside 21, matches no word


def test_the_meaning_ranking_breaks_keyword_ties_else_the_newest_message_first(scope, monkeypatch):
    monkeypatch.setattr(context, "CONTEXT_WEIGHT", 0.0)
    ranked = [(1, 10, 2.0), (4, 12, 2.0)]  # the same words, as often as each other, in as many words
    keyword = context.keyword(pieces=scope, ranked=ranked, width=WIDTH)
    meaning = context.meaning(pieces=scope, vector=unit(1.0))
    monkeypatch.setattr(context, "CONTEXT_WEIGHT", 0.5)  # 10 sits beside 11 (0.90): nearer in meaning than 12
    meaning_in_context = context.meaning(pieces=scope, vector=unit(1.0))

    assert [m for m, _, _ in context.listed(keyword, k=10, min_score=0.0)] == [12, 10]
    assert [m for m, _, _ in context.listed(keyword, k=10, min_score=0.0, ties=meaning)] == [12, 10]  # 0.5 each
    assert [m for m, _, _ in context.listed(keyword, k=10, min_score=0.0, ties=meaning_in_context)] == [10, 12]
