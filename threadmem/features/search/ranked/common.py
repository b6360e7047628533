"""A scope's common direction, left out of the sentence model's similarity.

The sentence model's vectors of one scope share a direction: the turns of a
conversation, the pieces of an owner's sessions sit in one cone, so a query's
cosine to a piece says as much about the scope as about the piece. The
meaning ranking therefore reads each part of the sentence model's vector
(MiniLM's, the encoder's: ``sentence.PARTS``) centred on the scope's mean and
without the scope's first principal direction ("all-but-the-top", Mu and
Viswanath, ICLR 2018), and averages the parts' cosines by their shares, as the
joined vector does. A small scope's mean and direction say more about its few
pieces than about the scope: both are shrunk by n / (n + ``PRIOR_PIECES``)
towards the plain cosine.

Computed once per held scope (``vectors.derived``): a mean, a direction found
by subspace iteration over at most ``SAMPLE_ROWS`` pieces, and each piece's length
once read so. A query then costs the product it cost before. A scope too
large to hold (``vectors.CACHE_MAX_PIECES``) is ranked by the database's plain
cosine (``embeddings/retrieve.py``), at the same threshold. Tuned on LoCoMo's
tune half (docs/benchmarks.md, "The scope's common direction").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from threadmem.features.search.ranked import vectors

# The weight of "no common direction" (the plain cosine), counted in pieces: a scope of this many is read half so.
PRIOR_PIECES = 100
# Pieces, evenly spaced, that the direction is estimated from (a larger scope costs no more to read).
SAMPLE_ROWS = 4_096
# Subspace iteration for the direction: directions iterated at once, and iterations.
BLOCK = 8
ITERATIONS = 4


@dataclass(frozen=True)
class Part:
    """One part of the vector (columns ``start:stop``), as the scope reads it."""

    start: int
    stop: int
    share: float  # its share of the similarity
    mean: np.ndarray  # the scope's mean, shrunk
    direction: np.ndarray  # the scope's first principal direction, a unit vector (zeros: none)
    removed: float  # how much of the direction is left out: 2a - a² for the shrunk a (the projection applied twice)
    lengths: np.ndarray  # each piece's length, centred and without the direction


def unit(vector: list[float] | np.ndarray) -> np.ndarray:
    """``vector`` as a unit vector, as the held rows are (vectors.py)."""
    query = np.asarray(vector, dtype=np.float64)
    return query / max(float(np.linalg.norm(query)), 1e-12)


def scored(held: vectors.Held, vector: list[float] | np.ndarray, parts: tuple[tuple[int, float], ...]) -> np.ndarray:
    """Each held piece's similarity to ``vector`` without the scope's common direction (-inf: never a match);
    ``parts``: the model's (width, share of the similarity), in the vector's order."""
    query = unit(vector)
    total = np.zeros(len(held.ids))
    for part in vectors.derived(held, f"common{parts}", lambda: _parts(held, parts)):
        centred = query[part.start : part.stop] - part.mean
        along = float(centred @ part.direction)
        length = np.sqrt(max(float(centred @ centred) - part.removed * along * along, 0.0))
        if length == 0:
            continue
        # Both sides without the direction: (d - mean) · (I - removed u uᵀ)(q - mean).
        wanted = centred - part.removed * along * part.direction
        products = held.matrix[:, part.start : part.stop] @ wanted.astype(held.matrix.dtype)
        cosines = (products - float(part.mean @ wanted)) / (part.lengths * length)
        total += part.share * np.where(part.lengths > 0, cosines, 0.0)
    return np.where(held.live, total, -np.inf)


def _parts(held: vectors.Held, parts: tuple[tuple[int, float], ...]) -> list[Part]:
    # The scope's rows stay float32 (one pass over each); only vectors as wide as a part are float64.
    live = np.flatnonzero(held.live)
    found, start = [], 0
    shrink = len(live) / (len(live) + PRIOR_PIECES)
    removed = 2 * shrink - shrink * shrink
    sample = live[np.linspace(0, len(live) - 1, min(len(live), SAMPLE_ROWS)).astype(np.int64)]
    for width, share in parts:
        block = held.matrix[:, start : start + width]
        mean = (held.live.astype(block.dtype) @ block).astype(np.float64) * (shrink / max(len(live), 1))
        direction = _first_direction(block[sample] - mean.astype(block.dtype))
        on_mean = block @ mean.astype(block.dtype)
        along = block @ direction.astype(block.dtype) - float(mean @ direction)
        squared = np.einsum("ij,ij->i", block, block) - 2 * on_mean + float(mean @ mean) - removed * along * along
        lengths = np.sqrt(np.maximum(squared.astype(np.float64), 0.0))
        found.append(Part(start, start + width, share, mean, direction, removed, lengths))
        start += width
    return found


def _first_direction(rows: np.ndarray) -> np.ndarray:
    """The unit vector along which ``rows`` vary most (zeros when they do not vary): subspace iteration over
    ``BLOCK`` directions at once, which converges where the first two variances are close, as in a conversation."""
    width = rows.shape[1]
    if not len(rows):
        return np.zeros(width)
    basis = np.linalg.qr(rows[np.linspace(0, len(rows) - 1, min(BLOCK, len(rows))).astype(np.int64)].T)[0]
    for _ in range(ITERATIONS):
        basis = np.linalg.qr(rows.T @ (rows @ basis))[0]
    projected = rows @ basis
    values, eigenvectors = np.linalg.eigh(projected.T.astype(np.float64) @ projected)
    if values[-1] <= 0:
        return np.zeros(width)
    return basis.astype(np.float64) @ eigenvectors[:, -1]
