"""Rankings in context: a message ranked by its own score for the query and its neighbours'.

A conversation's evidence is often a turn that only makes sense beside the
one before or after it ("Yes, last Tuesday" answers the turn that asks
when). A ranking in this process scores each message by its best piece's
score, plus ``CONTEXT_WEIGHT`` times the better of its thread's messages just
before and after it (seq - 1 and seq + 1, when the scope shows them; a
negative score counts as none), and for the sentence model
``SECOND_CONTEXT_WEIGHT`` times the better of the two beyond. A message still
needs its own score at the threshold to be listed: a neighbour lifts a
message, it never brings in one that says nothing of the query.

Both rankings are read so: meaning (a piece's similarity to the query) and
keyword relevance (a piece's BM25, ``keyword.py``), whose ties the meaning
ranking breaks. Tuned on LoCoMo's tune half (docs/benchmarks.md,
"The meaning half's model" and "Keyword relevance in context").

The scope's pieces are grouped by message in (thread, seq) order once per
held scope (``Layout``, kept beside the held vectors); each search then costs
a few array passes over the scope's scores.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from threadmem.features.search.ranked import feedback, sentences, vectors

# The neighbour's share of a message's score, for a sentence model and a configured one (the static model's
# ranking is left as it was tuned: 0); the second neighbour's (seq ± 2), for the sentence model only (tuned with it).
CONTEXT_WEIGHT = 0.5
SECOND_CONTEXT_WEIGHT = 0.25


@dataclass(frozen=True)
class Layout:
    order: np.ndarray  # the held pieces' indexes, grouped by message, the messages in (thread, seq) order
    starts: np.ndarray  # each message's first position in ``order``
    messages: np.ndarray  # each message's id, in that order
    before: np.ndarray  # the index of the message just before it in its thread (-1: none in the scope)
    after: np.ndarray  # the index of the message just after it (-1: none)


def layout(held: vectors.Held) -> Layout:
    """``held``'s pieces by message in thread order, computed once per held scope."""
    return vectors.derived(held, "layout", lambda: _layout(held))


def _layout(held: vectors.Held) -> Layout:
    threads = held.threads if held.threads is not None else np.zeros(len(held.ids), dtype=np.int64)
    seqs = held.seqs if held.seqs is not None else np.zeros(len(held.ids), dtype=np.int64)
    order = np.lexsort((held.messages, seqs, threads))
    grouped = held.messages[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]]) if len(order) else np.zeros(0, np.int64)
    at_thread, at_seq = threads[order][starts], seqs[order][starts]
    follows = (at_thread[1:] == at_thread[:-1]) & (at_seq[1:] == at_seq[:-1] + 1)
    index = np.arange(len(starts))
    before = np.full(len(starts), -1, dtype=np.int64)
    after = np.full(len(starts), -1, dtype=np.int64)
    before[1:][follows] = index[:-1][follows]
    after[:-1][follows] = index[1:][follows]
    return Layout(order=order, starts=starts, messages=grouped[starts], before=before, after=after)


@dataclass(frozen=True)
class Ranking:
    """One ranking of a held scope's messages in context: each message's own score (its best piece's), and that
    plus its neighbours' shares; the messages in ``shape``'s order."""

    held: vectors.Held
    shape: Layout
    ordered: np.ndarray  # each piece's own score, in ``shape.order`` (-inf: never a match)
    own: np.ndarray
    total: np.ndarray
    newest_first: bool  # the last tie rule: the plain ranking's (BM25's newest piece; a cosine's thread order)


def _ranking(held: vectors.Held, scores: np.ndarray, *, second_weight: float, newest_first: bool) -> Ranking | None:
    shape = layout(held)
    if not len(shape.starts):
        return None
    ordered = scores[shape.order]
    own = np.maximum.reduceat(ordered, shape.starts)
    near = np.maximum(own, 0.0)  # no live piece (-inf) or an opposite one: no context
    beside = np.maximum(
        np.where(shape.before >= 0, near[shape.before], 0.0), np.where(shape.after >= 0, near[shape.after], 0.0)
    )
    total = own + CONTEXT_WEIGHT * beside
    if second_weight:
        before2 = np.where(shape.before >= 0, shape.before[np.maximum(shape.before, 0)], -1)
        after2 = np.where(shape.after >= 0, shape.after[np.maximum(shape.after, 0)], -1)
        total = total + second_weight * np.maximum(
            np.where(before2 >= 0, near[before2], 0.0), np.where(after2 >= 0, near[after2], 0.0)
        )
    return Ranking(held=held, shape=shape, ordered=ordered, own=own, total=total, newest_first=newest_first)


def meaning(
    *,
    pieces: vectors.ScopePieces,
    vector: list[float],
    second_weight: float = 0.0,
    parts: tuple[tuple[int, float], ...] | None = None,
) -> Ranking | None:
    """The scope's messages by their similarity to ``vector`` in context; None when there is nothing to score.
    ``second_weight``: the share of the better of the messages two before and two after; ``parts``: the model's
    parts, each read without the scope's common direction (``common.py``), a turn by its best sentence too
    (``sentences.py``), refined by the best pieces (``feedback.py``); else the plain cosine."""
    if parts is None:
        found = vectors.scored(pieces=pieces, vector=vector)
    else:
        held = vectors.held_scope(pieces=pieces, width=len(vector))
        found = None
        if len(held.ids) and any(vector):
            scores = feedback.refined(
                held,
                vector,
                lambda asked: sentences.scored(held, asked, parts),
                alone=lambda rows: _alone(pieces, held, rows, vector, parts),
            )
            found = held, scores
    if found is None:
        return None
    held, scores = found
    return _ranking(held, scores, second_weight=second_weight, newest_first=False)


def _alone(
    pieces: vectors.ScopePieces,
    held: vectors.Held,
    rows: np.ndarray,
    vector: list[float],
    parts: tuple[tuple[int, float], ...],
) -> np.ndarray:
    """The scores of ``held``'s pieces ``rows`` (one thread's) as a search of that thread reads them: held as a
    scope of their own, with their sentences (``vectors.thread_part``)."""
    # The part holds exactly those pieces, in the same (id) order: its scores are theirs, row for row.
    part = vectors.held_scope(pieces=vectors.thread_part(pieces, held, rows), width=len(vector))
    return feedback.refined(part, vector, lambda asked: sentences.scored(part, asked, parts))


def keyword(
    *, pieces: vectors.ScopePieces, ranked: list[tuple[int, int, float]], width: int, second_weight: float = 0.0
) -> Ranking | None:
    """The scope's messages by keyword relevance in context: ``ranked``'s (piece, message, score), each piece's
    relevance, placed in the scope held with vectors of ``width`` dimensions (a piece the keyword ranking did not
    list scores -inf: it lifts no neighbour)."""
    held = vectors.held_scope(pieces=pieces, width=width)
    if not len(held.ids):
        return None
    scores = np.full(len(held.ids), -np.inf)
    if ranked:
        ids = np.fromiter((piece for piece, _, _ in ranked), dtype=np.int64, count=len(ranked))
        values = np.fromiter((score for _, _, score in ranked), dtype=np.float64, count=len(ranked))
        at = np.clip(np.searchsorted(held.ids, ids), 0, len(held.ids) - 1)
        known = held.ids[at] == ids  # a piece stored since the scope was read waits for the next search
        scores[at[known]] = values[known]
    return _ranking(held, scores, second_weight=second_weight, newest_first=True)


def listed(
    ranking: Ranking | None, *, k: int, min_score: float, ties: Ranking | None = None
) -> list[tuple[int, int, float]]:
    """(message id, its best piece's id, score in context) of the ``k`` best messages whose own score is at least
    ``min_score``, best first. Ties go to the message ``ties`` ranks higher when it ranks the same messages (the
    meaning ranking breaks the keyword ranking's: BM25 ties every short turn holding one query word once), then
    as the plain ranking breaks them."""
    if ranking is None:
        return []
    shape, total = ranking.shape, ranking.total
    index = np.flatnonzero(ranking.own >= min_score)
    keys = [-shape.messages[index] if ranking.newest_first else index, -total[index]]
    if ties is not None and ties.shape is shape:
        keys.insert(1, -ties.total[index])
    index = index[np.lexsort(keys)]
    ends = np.r_[shape.starts[1:], len(shape.order)]
    answer = []
    for at in index[:k].tolist():
        start = shape.starts[at]
        piece = shape.order[start + int(np.argmax(ranking.ordered[start : ends[at]]))]
        answer.append((int(shape.messages[at]), int(ranking.held.ids[piece]), float(total[at])))
    return answer
