"""The literal part of search_memory: a fixed number of SQL statements, whatever the number of hits.

``literal_search`` decides, writes, runs:

1. Decide: ``plan.py:plan_search`` returns one ``SearchPlan``, every input
   resolved there once (the knobs, the dialect, what the token index says of
   each term): the statements' shape (``MatchPlan``) and, per term, the
   ``Branch`` that finds it and why.
2. Write: ``match.py`` writes the match statement as the plan says, deciding
   nothing: the fragments every branch takes, once (``Dialect.statement_sql``,
   ``filters.statement_filters``), every branch (``union_sql``; the global
   scope's own kinds in ``branches.py``), and around them the rows in listing
   order, small fields with their windows.
3. Run: ``run_plan`` below, to the end or within a time budget
   (``budget.py``). When a budget runs out: in a thread too large to scan on
   PostgreSQL one more statement runs first (``spellings``, without
   threadmem_search) or after (a scan, with it, when the index ran out of
   time); a global search on PostgreSQL falls back to the newest messages
   (``recent.py``).

Then at most one windows statement (``windows.py``): for the few fields that
can be listed, each term's first position and the window around it, cut by
the database. Skipped when nothing matched, or when the match statement cut
every window the listing needs. Measurements and history: docs/search.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple, assert_never

from django.db import connection

from threadmem.models import Message
from threadmem.scope import SearchScope
from threadmem.search.bounded import SEARCH_COUNT_LIMIT, THREAD_LITERAL_MAX_CHARS, entries_budget, literal_part
from threadmem.search.cursor import CursorPosition
from threadmem.search.hits import Candidate, Coverage, LiteralPart, MatchedBy, hit_link, link_of
from threadmem.search.literal.budget import thread_index_budget_ms, within_budget
from threadmem.search.literal.dialects import (
    Dialect,
    PostgresDialect,
    SqliteDialect,
    like_contains,
    trigram_pattern,
)
from threadmem.search.literal.filters import scope_sql, searchable_sql
from threadmem.search.literal.match import MatchRow, index_match_sql, match_rows, scan_match_sql
from threadmem.search.literal.plan import MatchPlan, SearchPlan, has_search_extension, plan_search
from threadmem.search.literal.recent import recent_match_sql
from threadmem.search.literal.spelling import spellings
from threadmem.search.literal.windows import Cut, cut_windows, window_at

__all__ = [
    "Dialect",
    "MatchPlan",
    "Matches",
    "PostgresDialect",
    "SqliteDialect",
    "has_search_extension",
    "like_contains",
    "literal_search",
    "scope_sql",
    "searchable_sql",
    "trigram_pattern",
]


def literal_search(
    *,
    scope: SearchScope,
    terms: list[str],
    start: CursorPosition | None = None,
    sign: Callable[[CursorPosition], str] | None = None,
    described_max_chars: int | None = None,
) -> LiteralPart:
    """Run the literal part for ``terms`` in ``scope``: the plan's match statement(s), then at most one windows
    statement (none when nothing matches, or when the match cut every window the listing needs).

    ``start``: a later page (``cursor.py``) lists the candidates from its key on, the same statements running;
    ``sign`` makes the cursor of the page after this one. ``described_max_chars``: the literal part's cap
    when the query has several terms and the whole query matches nothing (a described question; the ranked
    lane takes the room, ``search/ranked/share.py``), first page only; None keeps ``THREAD_LITERAL_MAX_CHARS``.
    """
    if not terms:
        return literal_part([], terms, {}, candidate_count=0)
    plan = plan_search(scope, terms)
    key = start.key if start is not None else None
    started = time.perf_counter()
    matches = run_plan(plan, start=key, described_max_chars=described_max_chars)
    ran_ms = (time.perf_counter() - started) * 1000
    part = _literal_search(
        scope, terms, plan.dialect, matches, start=start, sign=sign, described_max_chars=described_max_chars
    )
    part.plan = plan.kind.value
    part.executed = executed_plan(plan, matches, ran_ms)
    return part


class Matches(NamedTuple):
    rows: list[MatchRow]
    coverage: Coverage
    matched_by: MatchedBy


def run_plan(
    plan: SearchPlan, *, start: tuple[int, int, int] | None, described_max_chars: int | None = None
) -> Matches:
    """Run ``plan``'s statements: one, or two when the first ran out of time or learnt the spellings, at most three.

    ``start``: a later page's cursor key, ``described_max_chars`` a described question's cap
    (``match.with_small_windows``).
    """
    scope, dialect, tuning = plan.scope, plan.dialect, plan.tuning
    terms = [term.term for term in plan.terms]
    capped = {"start": start, "described_max_chars": described_max_chars}
    match plan.kind:
        case MatchPlan.SCAN:
            rows = fetch_matches(*scan_match_sql(scope, terms, dialect, **capped))
            return Matches(rows, Coverage.ALL, MatchedBy.SCAN)
        case MatchPlan.SPELLED_INDEX:
            spelled = spellings(scope, terms, dialect, sample_bytes=tuning.spelling_sample_bytes)
            statement = index_match_sql(scope, terms, dialect, spelled=spelled, planned=plan.terms, **capped)
            return Matches(fetch_matches(*statement), Coverage.ALL, MatchedBy.SPELLED if spelled else MatchedBy.INDEX)
        case MatchPlan.INDEX_THEN_SCAN:
            statement, params = index_match_sql(scope, terms, dialect, planned=plan.terms, **capped)
            budgeted = within_budget(statement, params, thread_index_budget_ms(scope.visible_bytes, tuning))
            if budgeted is not None:
                return Matches(match_rows(budgeted), Coverage.ALL, MatchedBy.INDEX)
            # The index could not narrow the terms in time: read the thread.
            rows = fetch_matches(*scan_match_sql(scope, terms, dialect, **capped))
            return Matches(rows, Coverage.ALL, MatchedBy.SCAN)
        case MatchPlan.INDEX_THEN_RECENT | MatchPlan.WINDOW_THEN_RECENT:
            statement, params = index_match_sql(scope, terms, dialect, planned=plan.terms, **capped)
            budgeted = within_budget(statement, params, tuning.index_budget_ms, scale_by_load=True, tuning=tuning)
            if budgeted is not None:
                return Matches(match_rows(budgeted), Coverage.ALL, MatchedBy.INDEX)
            statement, params = recent_match_sql(scope, terms, dialect, start=start)
            budgeted = within_budget(statement, params, tuning.recent_budget_ms, scale_by_load=True, tuning=tuning)
            if budgeted is not None:
                return Matches(match_rows(budgeted), Coverage.RECENT, MatchedBy.RECENT)
            return Matches([], Coverage.NONE, MatchedBy.NONE)
        case _:
            assert_never(plan.kind)


def fetch_matches(statement: str, params: list[Any]) -> list[MatchRow]:
    """Run a match statement to the end."""
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return match_rows(cursor.fetchall())


def executed_plan(plan: SearchPlan, matches: Matches, ran_ms: float) -> dict[str, Any]:
    """What the tool-call log keeps of the plan that ran (search/log.py): its kind, each term's branch and why,
    the statement that found the rows, the coverage and the match statements' milliseconds."""
    return {
        "plan": plan.kind.value,
        "reason": plan.reason,
        "matched_by": matches.matched_by.value,
        "coverage": matches.coverage.value,
        "ms": round(ran_ms, 3),
        "terms": [{"term": term.term, "branch": term.branch.value, "reason": term.reason} for term in plan.terms],
    }


def _literal_search(
    scope: SearchScope,
    terms: list[str],
    dialect: Dialect,
    matches: Matches,
    *,
    start: CursorPosition | None,
    sign: Callable[[CursorPosition], str] | None,
    described_max_chars: int | None,
) -> LiteralPart:
    key = start.key if start is not None else None
    rows, coverage, matched_by = matches
    if coverage == Coverage.NONE:
        return literal_part([], terms, {}, candidate_count=0, coverage=coverage, matched_by=matched_by)
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
    described = len(terms) > 1 and not any(c.term == 0 for c in candidates)
    if described_max_chars is not None and described and key is None:
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
            matched_by=matched_by,
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
        matched_by=matched_by,
        seeds=seeds,
        listed_before=listed_before,
        links=links,
        sign=sign,
        max_chars=max_chars,
    )
