"""Meaning in context: a message ranked by its own similarity to the query and its neighbours'.

A conversation's evidence is often a turn that only makes sense beside the
one before or after it ("Yes, last Tuesday" answers the turn that asks
when). The meaning ranking in this process (``vectors.py``) scores each
message by its best piece's similarity, plus ``weight`` times the better of
its thread's messages just before and after it (seq - 1 and seq + 1, when the
scope shows them; a negative similarity counts as none). A message still
needs its own similarity at the threshold to be listed: a neighbour lifts a
message, it never brings in one that says nothing of the query. Tuned on
LoCoMo's tune half (docs/benchmarks.md, "The meaning half's model").

The scope's pieces are grouped by message in (thread, seq) order once per
held scope (``Layout``, kept beside the held vectors); each search then costs
a few array passes over the scope's scores.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np

from threadmem.features.search.ranked import vectors

# The neighbour's share of a message's score, for a sentence model and a configured one (the static model's
# ranking is left as it was tuned: 0); the second neighbour's (seq ± 2), for the sentence model only (tuned with it).
CONTEXT_WEIGHT = 0.5
SECOND_CONTEXT_WEIGHT = 0.25
# Layouts kept, one per held scope (a few arrays as long as its scope's pieces: ~2 MB at 60,000).
KEPT_LAYOUTS = 8


@dataclass(frozen=True)
class Layout:
    order: np.ndarray  # the held pieces' indexes, grouped by message, the messages in (thread, seq) order
    starts: np.ndarray  # each message's first position in ``order``
    messages: np.ndarray  # each message's id, in that order
    before: np.ndarray  # the index of the message just before it in its thread (-1: none in the scope)
    after: np.ndarray  # the index of the message just after it (-1: none)


_lock = threading.RLock()  # a scope freed while a layout is stored drops its entry in this thread
# By the held scope's id, with a weak reference to it: a layout never keeps a scope's vectors alive past vectors.py's
# byte cap.
_layouts: dict[int, tuple[weakref.ref, Layout]] = {}


def layout(held: vectors.Held) -> Layout:
    """``held``'s pieces by message in thread order, computed once per held scope."""
    with _lock:
        kept = _layouts.get(id(held))
    if kept is not None and kept[0]() is held:
        return kept[1]
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
    found = Layout(order=order, starts=starts, messages=grouped[starts], before=before, after=after)
    key = id(held)
    with _lock:
        if len(_layouts) >= KEPT_LAYOUTS:
            _layouts.pop(next(iter(_layouts)))
        # Dropped with its scope (a deleted thread's ids do not outlive the vectors vectors.py forgets).
        _layouts[key] = (weakref.ref(held, lambda _: _forget(key)), found)
    return found


def _forget(key: int) -> None:
    with _lock:
        _layouts.pop(key, None)


def nearest(
    *, pieces: vectors.ScopePieces, vector: list[float], k: int, min_score: float, second_weight: float = 0.0
) -> list[tuple[int, int, float]]:
    """(message id, its best piece's id, score) of the ``k`` best messages in context, best first;
    ``second_weight``: the share of the better of the messages two before and two after."""
    found = vectors.scored(pieces=pieces, vector=vector)
    if found is None:
        return []
    held, scores = found
    shape = layout(held)
    if not len(shape.starts):
        return []
    ordered = scores[shape.order]
    best = np.maximum.reduceat(ordered, shape.starts)
    near = np.maximum(best, 0.0)  # no live piece (-inf) or an opposite one: no context
    beside = np.maximum(
        np.where(shape.before >= 0, near[shape.before], 0.0), np.where(shape.after >= 0, near[shape.after], 0.0)
    )
    total = best + CONTEXT_WEIGHT * beside
    if second_weight:
        before2 = np.where(shape.before >= 0, shape.before[np.maximum(shape.before, 0)], -1)
        after2 = np.where(shape.after >= 0, shape.after[np.maximum(shape.after, 0)], -1)
        total = total + second_weight * np.maximum(
            np.where(before2 >= 0, near[before2], 0.0), np.where(after2 >= 0, near[after2], 0.0)
        )
    listed = np.flatnonzero(best >= min_score)
    listed = listed[np.lexsort((listed, -total[listed]))][:k]  # ties: thread order
    ends = np.r_[shape.starts[1:], len(shape.order)]
    answer = []
    for index in listed.tolist():
        start = shape.starts[index]
        piece = shape.order[start + int(np.argmax(ordered[start : ends[index]]))]
        answer.append((int(shape.messages[index]), int(held.ids[piece]), float(total[index])))
    return answer
