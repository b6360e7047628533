"""The literal part of search_memory: a fixed number of SQL statements, whatever the number of hits.

1. The match statement (``match.py``): which (term, field) pairs match, newest
   first, as small rows; small fields that could be listed get their windows
   with it. ``plan.py`` chooses how it matches (a scan of the scope's rows or
   the trigram indexes, with or without a time budget) and what follows when
   a budget runs out: in a thread too large to scan on PostgreSQL one more
   statement runs first (``spellings``, without threadmem_search) or after (a
   scan, with it, when the index ran out of time); a global search on
   PostgreSQL falls back to the newest messages.
2. The windows statement (``windows.py``): for the few fields that can be
   listed, each term's first position and the window around it, cut by the
   database. Skipped when nothing matched, or when the match statement cut
   every window the listing needs.

``dialects.py`` says how each database matches literally and
case-insensitively, ``filters.py`` holds the rules every statement shares.
Measurements and history: docs/search.md.
"""

from __future__ import annotations

from threadmem.lib.windows import Window
from threadmem.scope import SearchScope
from threadmem.search.bounded import (
    SEARCH_COUNT_LIMIT,
    Candidate,
    Coverage,
    LiteralPart,
    WindowKey,
    entries_budget,
    literal_part,
)
from threadmem.search.literal import dialects
from threadmem.search.literal.dialects import (
    Dialect,
    PostgresDialect,
    SqliteDialect,
    has_search_extension,
    like_contains,
    trigram_pattern,
)
from threadmem.search.literal.filters import scope_sql, searchable_sql
from threadmem.search.literal.plan import MatchPlan, choose_plan, run_plan
from threadmem.search.literal.windows import cut_windows, window_at

__all__ = [
    "Dialect",
    "MatchPlan",
    "PostgresDialect",
    "SqliteDialect",
    "has_search_extension",
    "like_contains",
    "literal_search",
    "scope_sql",
    "searchable_sql",
    "trigram_pattern",
]


def literal_search(*, scope: SearchScope, terms: list[str]) -> LiteralPart:
    """Run the literal part for ``terms`` in ``scope``: the plan's match statement(s), then at most one windows
    statement (none when nothing matches, or when the match cut every window the listing needs).
    """
    if not terms:
        return literal_part([], terms, {}, candidate_count=0)
    dialect = dialects.dialect()
    dialect.prepare()
    rows, coverage, matched_by = run_plan(choose_plan(scope, dialect), scope, terms, dialect)
    if coverage == Coverage.NONE:
        return literal_part([], terms, {}, candidate_count=0, coverage=coverage, matched_by=matched_by)
    candidates = [row.candidate() for row in rows]
    # Rows whose window came with the match: position (0 when the field no longer matches) and piece.
    cut: dict[WindowKey, tuple[int, Window] | None] = {
        ((row.message_id, row.arg_id), row.term): window_at(row.position, row.piece)
        for row in rows
        if row.position is not None
    }
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
    if not candidates:
        return literal_part([], terms, {}, candidate_count=0, bounded=bounded, coverage=coverage, matched_by=matched_by)
    budget = entries_budget(len(candidates), bounded=bounded, coverage=coverage)
    windows = cut_windows(candidates, terms, budget=budget, dialect=dialect, cut=cut)
    return literal_part(
        candidates,
        terms,
        windows,
        candidate_count=len(candidates),
        bounded=bounded,
        coverage=coverage,
        matched_by=matched_by,
    )
