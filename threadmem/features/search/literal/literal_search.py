"""The literal part of search_memory, in one direction: decide, run, read the rows, lay out.

``literal_search`` hands each step's data to the next:

1. Decide: ``plan.py:plan_search`` returns one ``SearchPlan``, every input
   resolved there once (the knobs, the dialect, what the token index says of
   each term): the statements' shape (``MatchPlan``) and, per term, the
   ``Branch`` that finds it and why.
2. Run: ``run_plan`` below has ``match_sql.py`` write the match statement as the
   plan says (deciding nothing) and ``statements.py`` run it, to the end or
   within a time budget. When a budget runs out: in a thread too large to
   scan on PostgreSQL one more statement runs first (``spelling_sql.py``,
   without threadmem_search) or after (a scan, with it, when the index ran
   out of time); a global search on PostgreSQL falls back to the newest
   messages (``recent_sql.py``).
3. Rows: ``statement_rows.py`` reads them into the candidates the listing
   keeps; at most one windows statement (``window_sql.py``) cuts, for the
   few fields the listing's walk reaches (``window_walk.py``), each term's
   first position and the window around it. Skipped when nothing matched, or
   when the match statement cut every window the listing needs.
4. Lay out: ``answer_layout.literal_part``, once, on that data.

Measurements and history: docs/search.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, assert_never

from threadmem.domain.scope import SearchScope
from threadmem.features.search.answer_layout import entries_budget, literal_part, words_by_cursor
from threadmem.features.search.hits import Coverage, LiteralPart, MatchedBy, hit_links
from threadmem.features.search.literal.dialects import Dialect
from threadmem.features.search.literal.match_sql import match_sql
from threadmem.features.search.literal.plan import MatchPlan, SearchPlan, SearchTuning, plan_search, scan_plans
from threadmem.features.search.literal.recent_sql import recent_match_sql
from threadmem.features.search.literal.spelling_sql import spellings, spellings_sql
from threadmem.features.search.literal.statement_rows import (
    Cut,
    Listing,
    Matches,
    MatchRow,
    listing_of,
    match_rows,
    window_rows,
)
from threadmem.features.search.literal.window_sql import window_sql_all, window_sql_walk
from threadmem.features.search.page_cursor import CursorPosition
from threadmem.features.search.statements import fetch_rows, within_budget
from threadmem.features.search.window_walk import walk_reach, window_pairs


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

    ``start``: a later page (``page_cursor.py``) lists the candidates from its key on, the same statements running;
    ``sign`` makes the cursor of the page after this one. ``described_max_chars``: the literal part's cap
    when the query has several terms and the whole query matches nothing (a described question; the ranked
    lane takes the room, ``search/ranked/share.py``), first page only; None keeps ``THREAD_LITERAL_MAX_CHARS``.
    """
    if not terms:
        return literal_part([], terms, {}, candidate_count=0)
    # Decided here once; the match statement (in SQL) and the listing (in Python) apply it when the whole
    # query has no hit, which only the rows tell.
    described = described_max_chars if start is None and len(terms) > 1 else None
    if scope.is_global and described is not None and sign:
        whole = literal_search(scope=scope, terms=terms[:1], sign=sign)
        if not whole.hits and whole.coverage == Coverage.ALL:
            return words_by_cursor(whole, sign)
    plan = plan_search(scope, terms)
    key = start.key if start is not None else None
    started = time.perf_counter()
    matches = run_plan(plan, start=key, described_max_chars=described)
    ran_ms = (time.perf_counter() - started) * 1000
    listing = listing_of(scope, matches, start=start, described_max_chars=described)
    budget = entries_budget(
        len(listing.candidates), bounded=listing.bounded, coverage=listing.coverage, max_chars=listing.max_chars
    )
    cut = cut_windows(listing, terms, plan.dialect, scope, budget=budget)
    part = lay_out(listing, cut, terms, sign=sign)
    part.plan = plan.kind.value
    part.matched_by = matches.matched_by
    part.executed = executed_plan(plan, matches, ran_ms)
    return part


def run_plan(
    plan: SearchPlan, *, start: tuple[int, int, int] | None, described_max_chars: int | None = None
) -> Matches:
    """Run ``plan``'s statements: one, or two when the first ran out of time or learnt the spellings, at most three.

    ``start``: a later page's cursor key, ``described_max_chars`` a described question's first page's cap,
    applied when no row matches the whole query (``match_sql.with_small_windows``).
    """
    scope, dialect, tuning = plan.scope, plan.dialect, plan.tuning
    terms = [term.term for term in plan.terms]
    capped = {"start": start, "described_max_chars": described_max_chars}
    match plan.kind:
        case MatchPlan.SCAN:
            rows = fetch_matches(*match_sql(scope, plan.terms, dialect, **capped))
            return Matches(rows, Coverage.ALL, MatchedBy.SCAN)
        case MatchPlan.SPELLED_INDEX:
            wanted = spellings_sql(scope, terms, dialect, sample_bytes=tuning.spelling_sample_bytes)
            spelled = spellings(fetch_rows(*wanted)) if wanted is not None else {}
            statement = match_sql(scope, plan.terms, dialect, spelled=spelled, **capped)
            return Matches(fetch_matches(*statement), Coverage.ALL, MatchedBy.SPELLED if spelled else MatchedBy.INDEX)
        case MatchPlan.INDEX_THEN_SCAN:
            statement, params = match_sql(scope, plan.terms, dialect, **capped)
            budgeted = within_budget(statement, params, thread_index_budget_ms(scope.visible_bytes, tuning))
            if budgeted is not None:
                return Matches(match_rows(budgeted), Coverage.ALL, MatchedBy.INDEX)
            # The index could not narrow the terms in time: read the thread.
            rows = fetch_matches(*match_sql(scope, scan_plans(terms), dialect, **capped))
            return Matches(rows, Coverage.ALL, MatchedBy.SCAN)
        case MatchPlan.INDEX_THEN_RECENT | MatchPlan.WINDOW_THEN_RECENT:
            scaled = (tuning.budget_scale_max, tuning.db_cpus)
            statement, params = match_sql(scope, plan.terms, dialect, **capped)
            budgeted = within_budget(statement, params, tuning.index_budget_ms, scaled=scaled)
            if budgeted is not None:
                return Matches(match_rows(budgeted), Coverage.ALL, MatchedBy.INDEX)
            statement, params = recent_match_sql(scope, terms, dialect, start=start)
            budgeted = within_budget(statement, params, tuning.recent_budget_ms, scaled=scaled)
            if budgeted is not None:
                return Matches(match_rows(budgeted), Coverage.RECENT, MatchedBy.RECENT)
            return Matches([], Coverage.NONE, MatchedBy.NONE)
        case _:
            assert_never(plan.kind)


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


def fetch_matches(statement: str, params: list[Any]) -> list[MatchRow]:
    """Run a match statement to the end."""
    return match_rows(fetch_rows(statement, params))


def thread_index_budget_ms(visible_bytes: int, tuning: SearchTuning) -> int:
    """Thread scope with threadmem_search: the index path's time, about what a scan of the thread would take.

    ``tuning.scan_bytes_per_ms``: how fast a scan reads (docs/search.md, "The plan"). At least 1 ms: 0 is no limit.
    """
    return max(1, visible_bytes // tuning.scan_bytes_per_ms)


def cut_windows(listing: Listing, terms: list[str], dialect: Dialect, scope: SearchScope, *, budget: int) -> Cut:
    """(field, term) -> (position, Window), or None when the field no longer matches; and each field's link.

    Pairs the walk does not reach are absent: they cannot be listed. When
    the match statement cut every pair already (``listing.cut``), no
    statement runs.
    """
    pairs, costs = window_pairs(listing.candidates, terms, budget=budget, seeds=listing.seeds)
    if not pairs:
        return Cut({}, {})
    if all(pair in listing.cut.windows for _, pair in pairs):
        return Cut(walk_reach(pairs, costs, listing.cut.windows, budget=budget), listing.cut.links)
    if dialect.vendor == "postgresql":
        statement, params = window_sql_walk(pairs, terms, costs, budget=budget, dialect=dialect, scope=scope)
    else:
        statement, params = window_sql_all(pairs, terms, dialect, scope=scope)
    cut = window_rows(pairs, fetch_rows(statement, params))
    # SQLite cuts every pair: one without a row no longer matches. PostgreSQL's walk leaves out what it did not reach.
    windows = cut.windows if dialect.vendor == "postgresql" else {pair: cut.windows.get(pair) for _, pair in pairs}
    return Cut(walk_reach(pairs, costs, windows, budget=budget), cut.links)


def lay_out(
    listing: Listing, cut: Cut, terms: list[str], *, sign: Callable[[CursorPosition], str] | None
) -> LiteralPart:
    """The literal part of ``listing`` with the windows ``cut`` and each hit's link: the layout, once."""
    if not listing.candidates:
        return literal_part(
            [],
            terms,
            {},
            candidate_count=0,
            bounded=listing.bounded,
            coverage=listing.coverage,
            listed_before=listing.listed_before,
        )
    return literal_part(
        listing.candidates,
        terms,
        cut.windows,
        candidate_count=len(listing.candidates),
        bounded=listing.bounded,
        coverage=listing.coverage,
        seeds=listing.seeds,
        listed_before=listing.listed_before,
        links=hit_links(listing.candidates, cut.links),
        sign=sign,
        max_chars=listing.max_chars,
    )
