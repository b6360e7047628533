"""What the match statement's rows become: the literal part of search_memory's answer.

The rows come in listing order (``match.with_small_windows``), some with
their window already cut. The listing keeps a global term's first
SEARCH_COUNT_LIMIT fields, a later page's rows from its cursor on, and asks
``windows.py`` for the windows the cap leaves room for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from threadmem.models import Message
from threadmem.scope import SearchScope
from threadmem.search.bounded import SEARCH_COUNT_LIMIT, THREAD_LITERAL_MAX_CHARS, entries_budget, literal_part
from threadmem.search.cursor import CursorPosition
from threadmem.search.hits import Candidate, Coverage, LiteralPart, MatchedBy, hit_link, link_of
from threadmem.search.literal.dialects import Dialect
from threadmem.search.literal.windows import Cut, cut_windows, window_at


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

    def candidate(self) -> Candidate:
        return Candidate(
            term=self.term,
            message_id=self.message_id,
            arg_id=self.arg_id,
            path=self.path,
            min_chars=int(self.min_chars or 0),
            session_id=self.session_id,
            generation=self.generation,
            role=self.role,
        )


def match_rows(rows: Sequence[Sequence[Any]]) -> list[MatchRow]:
    return [MatchRow._make(row) for row in rows]


class Matches(NamedTuple):
    rows: list[MatchRow]
    coverage: Coverage
    matched_by: MatchedBy


def list_matches(
    scope: SearchScope,
    terms: list[str],
    dialect: Dialect,
    matches: Matches,
    *,
    start: CursorPosition | None,
    sign: Callable[[CursorPosition], str] | None,
    described_max_chars: int | None,
) -> LiteralPart:
    """The literal part of ``matches``: the candidates the listing keeps (a global term's first
    SEARCH_COUNT_LIMIT; a later page's from its key on), the windows that fit the cap, each hit's link.
    ``described_max_chars``: the cap when no candidate matches the whole query (``literal_search`` decides)."""
    key = start.key if start is not None else None
    rows, coverage = matches.rows, matches.coverage
    if coverage == Coverage.NONE:
        return literal_part([], terms, {}, candidate_count=0, coverage=coverage)
    candidates = [row.candidate() for row in rows]
    # Rows whose window came with the match: position (0 when the field no longer matches) and piece.
    cut = Cut(
        {
            ((row.message_id, row.arg_id), row.term): window_at(row.position, row.piece)
            for row in rows
            if row.position is not None
        },
        {
            (row.message_id, row.arg_id): link_of(row.link_tool, row.link_ids, row.link_arguments)
            for row in rows
            if row.position
        },
    )
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
    listed_before = start.listed_before if start is not None else 0
    if not candidates:
        return literal_part(
            [],
            terms,
            {},
            candidate_count=0,
            bounded=bounded,
            coverage=coverage,
            listed_before=listed_before,
        )
    budget = entries_budget(len(candidates), bounded=bounded, coverage=coverage, max_chars=max_chars)
    windows = cut_windows(candidates, terms, budget=budget, dialect=dialect, scope=scope, cut=cut, seeds=seeds)
    links = {
        key: hit_link(windows.links.get(key), arg_id=candidate.arg_id, role=candidate.role)
        for candidate in candidates
        if (key := candidate.field_key) in windows.links or candidate.arg_id or candidate.role == Message.Role.TOOL
    }
    return literal_part(
        candidates,
        terms,
        windows.windows,
        candidate_count=len(candidates),
        bounded=bounded,
        coverage=coverage,
        seeds=seeds,
        listed_before=listed_before,
        links=links,
        sign=sign,
        max_chars=max_chars,
    )
