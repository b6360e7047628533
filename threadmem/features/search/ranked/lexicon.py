"""A thread's keyword index kept in this process: per scope, each lexeme's pieces and counts.

The database ranks a thread by keyword with a statement that unnests every
matching piece's lexemes on every search: most of the lane's time in a
thread of thousands of pieces (docs/scaling.md, "Ranked lane at 1M"). Here a
scope's pieces' lexemes (their ``search_vector``, which never changes for a
piece: a re-embedding stores a new piece) are read once into postings,
extended by the pieces appended since, and a search reads only the postings
of its own lexemes. Pieces the scope no longer shows (a flag, an isolation)
stay in the postings and are filtered out by the ids the search read
(``vectors.scope_pieces``: the filter of every path). PostgreSQL only.

At most about ``KEPT_MAX_BYTES`` are kept over every scope, the least
recently used scope dropped first (one is always kept).
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from contextlib import nullcontext
from dataclasses import dataclass, field

from threadmem.domain.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.features.search.ranked import warm

# Bytes kept over every scope, as ``Lexicon.bytes`` estimates them from tracemalloc's count for a large thread
# (docs/search.md, "The ranked lane's latency").
KEPT_MAX_BYTES = 64 * 1024 * 1024
POSTING_BYTES, LEXEME_BYTES, PIECE_BYTES = 12, 400, 150
# Pieces read per statement when a scope is indexed first.
READ_BATCH = 1_000


@dataclass
class Lexicon:
    """One scope's postings: lexeme -> (pieces, counts), and each indexed piece's (message, number of lexemes)."""

    pieces: dict[int, tuple[int, int]] = field(default_factory=dict)
    postings: dict[str, tuple[array, array]] = field(default_factory=dict)
    held: int = 0  # postings

    def bytes(self) -> int:
        return POSTING_BYTES * self.held + LEXEME_BYTES * len(self.postings) + PIECE_BYTES * len(self.pieces)

    def add(self, chunk_id: int, message_id: int, counts: dict[str, int]) -> None:
        self.pieces[chunk_id] = (message_id, len(counts))
        for lexeme, count in counts.items():
            held = self.postings.get(lexeme)
            if held is None:
                held = self.postings[lexeme] = (array("q"), array("l"))
            held[0].append(chunk_id)
            held[1].append(count)
        self.held += len(counts)

    def rows(self, lexemes: list[str], in_scope: AbstractSet[int]) -> Iterator[tuple[int, str, int, int, int]]:
        """(piece, lexeme, count, piece's lexemes, message) of the scope's pieces holding each lexeme, lexeme by
        lexeme: a piece's rows come in the order of ``lexemes``."""
        for lexeme in lexemes:
            held = self.postings.get(lexeme)
            if held is None:
                continue
            for chunk_id, count in zip(held[0], held[1], strict=True):
                if chunk_id in in_scope:
                    message_id, length = self.pieces[chunk_id]
                    yield chunk_id, lexeme, count, length, message_id


# Each piece's lexemes and their numbers of positions, as arrays: ~3 times faster to read than the tsvector's
# text parsed here.
_PIECES_SQL = (
    "SELECT c.id, c.message_id, tsvector_to_array(c.search_vector), "
    "ARRAY(SELECT coalesce(cardinality(u.positions), 0) FROM unnest(c.search_vector) u) "
    "FROM threadmem_chunk c WHERE c.id = ANY(%s)"
)

_lock = threading.Lock()
_kept: OrderedDict[tuple, Lexicon] = OrderedDict()


def clear() -> None:
    with _lock:
        _kept.clear()


def rows(cursor, key: tuple, shown: AbstractSet[int], lexemes: list[str]) -> list[tuple[int, str, int, int, int]]:
    """``Lexicon.rows`` of the scope ``key`` (``vectors.ScopePieces.key``), whose pieces now are ``shown``; the
    pieces not indexed yet are read first (a statement per ``READ_BATCH``)."""
    lexicon, missing = _missing(key, shown)
    if len(missing) > READ_BATCH:
        # A cold scope is read to the end whatever this search's deadline (warm.py); a search queued behind
        # another's read of the same scope finds little or nothing left to read by then.
        lexicon = warm.uncancelled(lambda: _index(key, *_missing(key, shown)))
    elif missing:
        _index(key, lexicon, missing, cursor)
    with _lock:
        return list(lexicon.rows(lexemes, shown))


def _missing(key: tuple, shown: AbstractSet[int]) -> tuple[Lexicon, list[int]]:
    """The scope's kept index (a new one if none) and the pieces of ``shown`` it does not hold yet."""
    with _lock:
        lexicon = _kept.get(key)
        if lexicon is not None:
            _kept.move_to_end(key)
    if lexicon is None:
        lexicon = Lexicon()
    return lexicon, sorted(chunk_id for chunk_id in shown if chunk_id not in lexicon.pieces)


def _index(key: tuple, lexicon: Lexicon, missing: list[int], cursor=None) -> Lexicon:
    """Read ``missing`` pieces into ``lexicon`` and keep it, in batches, each kept as soon as it is read;
    ``cursor`` None: on a cursor of this thread's connection (the warming thread's)."""
    for first in range(0, len(missing), READ_BATCH):
        with nullcontext(cursor) if cursor is not None else connection.cursor() as reading:
            reading.execute(_PIECES_SQL, [missing[first : first + READ_BATCH]])
            read = reading.fetchall()
        with _lock:  # another search of the same scope may be reading it too
            for chunk_id, message_id, piece_lexemes, counts in read:
                if chunk_id not in lexicon.pieces:
                    lexicon.add(chunk_id, message_id, dict(zip(piece_lexemes or (), counts or (), strict=True)))
            _kept[key] = lexicon
            _kept.move_to_end(key)
            while len(_kept) > 1 and sum(kept.bytes() for kept in _kept.values()) > KEPT_MAX_BYTES:
                _kept.popitem(last=False)
    return lexicon
