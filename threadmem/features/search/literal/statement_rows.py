"""What the literal statements return, read into data: the match statement's rows, the windows statement's, and
the candidates the listing keeps of them.

The rows come in listing order (``listing_sql.with_small_windows``), some with their
window already cut. ``listing_of`` keeps a global term's first
SEARCH_COUNT_LIMIT fields and a later page's rows from its cursor on, and
says which cap applies: the data the windows statement and the layout
(``answer_layout.literal_part``) then take. Nothing here runs a statement or
writes text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from threadmem.domain.scope import SearchScope
from threadmem.features.search.answer_caps import (
    SEARCH_COUNT_LIMIT,
    THREAD_LITERAL_MAX_CHARS,
    WINDOW_CHARS,
    WINDOW_LEAD,
)
from threadmem.features.search.hits import (
    Candidate,
    Coverage,
    Cut,
    Listing,
    MatchedBy,
    WindowKey,
    candidates_of,
    links_of,
)
from threadmem.features.search.page_cursor import CursorPosition
from threadmem.lib.windows import windows_from_slices


class MatchRow(NamedTuple):
    """One row of a match statement, in ``with_small_windows``'s column order."""

    term: int  # index into the query's terms
    message_id: int
    arg_id: int  # 0: the message content; else the ToolArgument id
    path: str
    min_chars: int | None
    session_id: str
    generation: int
    role: str
    position: int | None  # the term's first position (0: no longer matches); None: left to the windows statement
    piece: str | None  # the window's characters when position > 0
    link_tool: str | list[str | None] | None  # with a window: the tool and other half (hits.link_of)
    link_ids: str | None
    link_arguments: str | None


def match_rows(rows: Sequence[Sequence[Any]]) -> list[MatchRow]:
    return [MatchRow._make(row) for row in rows]


class Matches(NamedTuple):
    rows: list[MatchRow]
    coverage: Coverage
    matched_by: MatchedBy


class WindowRow(NamedTuple):
    """One row of the windows statement (``window_sql.py``)."""

    ordinal: int  # the pair's place in the listing order
    position: int | None  # the term's first position in the field; 0 or None: it no longer matches
    piece: str | None  # the window's characters
    link_tool: str | list[str | None] | None  # the field's tool and other half (hits.link_of)
    link_ids: str | None
    link_arguments: str | None


def cut_of(rows: Sequence[Any], keys: Iterable[WindowKey]) -> Cut:
    """What ``rows`` cut, row i being ``keys``' (field, term) i: the (position, Window) of its ``position`` and
    ``piece`` (None: the field no longer matches), and its field's link columns when it got a window
    (``hits.links_of``). A match statement's rows and a windows statement's carry the same columns."""
    keys = list(keys)
    windows = windows_from_slices([(row.position, row.piece) for row in rows], width=WINDOW_CHARS, lead=WINDOW_LEAD)
    cut = [(key[0], row) for key, row in zip(keys, rows, strict=True) if row.position]
    links = links_of([(row.link_tool, row.link_ids, row.link_arguments) for _, row in cut])
    return Cut(dict(zip(keys, windows, strict=True)), dict(zip((field for field, _ in cut), links, strict=True)))


def window_rows(pairs: Sequence[tuple[int, WindowKey]], rows: Iterable[Sequence[Any]], *, every: bool) -> Cut:
    """The windows statement's rows as what it cut, by (field, term): ``pairs`` as the statement numbered them.

    ``every``: the statement cut every pair (SQLite's), so a pair without a row no longer matches; else (the walk
    of PostgreSQL's) a pair without a row was not reached, and stays absent.
    """
    read = [WindowRow._make(row) for row in rows]
    cut = cut_of(read, (pairs[row.ordinal][1] for row in read))
    if every:
        return Cut({pair: cut.windows.get(pair) for _, pair in pairs}, cut.links)
    return cut


def listing_of(
    scope: SearchScope, matches: Matches, *, start: CursorPosition | None, described_max_chars: int | None
) -> Listing:
    """The candidates the listing keeps of ``matches`` (a global term's first SEARCH_COUNT_LIMIT; a later
    page's from its key on) and the cap: ``described_max_chars`` when no candidate matches the whole query
    (``literal_search`` decides)."""
    key = start.key if start is not None else None
    listed_before = start.listed_before if start is not None else 0
    rows, coverage = matches.rows, matches.coverage
    if coverage == Coverage.NONE:
        return Listing([], [], Cut({}, {}), False, coverage, THREAD_LITERAL_MAX_CHARS, 0)
    # Rows whose window came with the match: position (0 when the field no longer matches) and piece.
    windowed = [row for row in rows if row.position is not None]
    cut = cut_of(windowed, (((row.message_id, row.arg_id), row.term) for row in windowed))
    candidates = candidates_of(rows)
    bounded = False
    if scope.is_global:
        kept: list[Candidate] = []
        per_term: dict[int, int] = {}
        for candidate in candidates:
            count = per_term.get(candidate.term, 0)
            if count == SEARCH_COUNT_LIMIT:
                bounded = True
                continue
            per_term[candidate.term] = count + 1
            kept.append(candidate)
        candidates = kept
    max_chars = THREAD_LITERAL_MAX_CHARS
    if described_max_chars is not None and not any(c.term == 0 for c in candidates):
        max_chars = described_max_chars
    seeds: list[Candidate] = []
    if key is not None:
        page = [candidate for candidate in candidates if candidate.listing_key >= key]
        fields = {candidate.field_key for candidate in page}
        seeds = [c for c in candidates if c.listing_key < key and c.field_key in fields]
        candidates = page
    return Listing(candidates, seeds, cut, bounded, coverage, max_chars, listed_before)
