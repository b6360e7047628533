"""The literal part of search_memory, in one direction: decide, run, read the rows, lay out.

``literal_search`` hands each step's data to the next:

1. Decide: ``plan.py:plan_search`` returns one ``SearchPlan``, every input
   resolved there once (the knobs, the dialect, what the token index says of
   each term): the statements' shape (``MatchPlan``), per term the ``Branch``
   that finds it and why, and the statements in the order they are tried
   (``Step``: each with its time budget, or none).
2. Run: ``run_plan`` below runs the steps in order until one finishes in time,
   ``match_sql.match_statement`` writing each as the plan says (deciding
   nothing) and ``statements.py`` running it: a thread too large to scan with
   threadmem_search falls back to a scan, a global search on PostgreSQL to the
   newest messages. A large thread without threadmem_search learns its
   spellings of the terms first (``spelling_sql.py``).
3. Rows: ``statement_rows.py`` reads them into the candidates the listing
   keeps; at most one windows statement (``window_sql.py``) cuts, for the
   few fields the listing's walk reaches (``window_walk.py``), each term's
   first position and the window around it. Skipped when nothing matched, or
   when the match statement cut every window the listing needs.
4. Lay out: ``answer_layout.lay_out``, once, on that data.

Measurements and history: docs/search.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from threadmem.domain.scope import SearchScope
from threadmem.features.search.answer_caps import WORDS_BY_CURSOR
from threadmem.features.search.answer_layout import entries_budget, lay_out, literal_part
from threadmem.features.search.hits import Coverage, Cut, Listing, LiteralPart, MatchedBy
from threadmem.features.search.literal.dialects import Dialect
from threadmem.features.search.literal.match_sql import match_statement
from threadmem.features.search.literal.plan import MatchPlan, SearchPlan, plan_search
from threadmem.features.search.literal.spelling_sql import spellings, spellings_sql
from threadmem.features.search.literal.statement_rows import Matches, listing_of, match_rows, window_rows
from threadmem.features.search.literal.window_sql import window_sql
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
    # What the tool-call log keeps of the plan that ran (search/log.py): each term's branch and why, the statement
    # that found the rows, the coverage and the match statements' milliseconds.
    part.executed = {
        "plan": plan.kind.value,
        "reason": plan.reason,
        "matched_by": matches.matched_by.value,
        "coverage": matches.coverage.value,
        "ms": round(ran_ms, 3),
        "terms": [{"term": term.term, "branch": term.branch.value, "reason": term.reason} for term in plan.terms],
    }
    return part


# Where the words' hits start: the first word (term 1; ``literal_search`` ran the whole query, term 0, alone), from the
# newest message on.
WORDS_START = CursorPosition(term=1, message_id=10**12 - 1, arg_id=0, listed_before=0)


def words_by_cursor(whole: LiteralPart, sign: Callable[[CursorPosition], str]) -> LiteralPart:
    """The literal part of a global described question's first page: no hit of the whole query, and the cursor
    to its words' hits (``WORDS_START``), whose page runs the whole plan."""
    cursor = sign(WORDS_START)
    return replace(whole, text=WORDS_BY_CURSOR.format(cursor), next_position=WORDS_START, next_cursor=cursor)


def run_plan(
    plan: SearchPlan, *, start: tuple[int, int, int] | None, described_max_chars: int | None = None
) -> Matches:
    """Run ``plan``'s statements: its steps in order until one finishes in time (``Step``), after the statement that
    learns the thread's spellings when the plan has one.

    ``start``: a later page's cursor key, ``described_max_chars`` a described question's first page's cap,
    applied when no row matches the whole query (``listing_sql.with_small_windows``).
    """
    spelled: dict[int, str] = {}
    if plan.kind == MatchPlan.SPELLED_INDEX:
        wanted = spellings_sql(plan)
        spelled = spellings(fetch_rows(*wanted)) if wanted is not None else {}
    for step in plan.steps:
        statement, params = match_statement(
            plan, step, spelled=spelled, start=start, described_max_chars=described_max_chars
        )
        if step.budget_ms is None:
            rows = fetch_rows(statement, params)
        else:
            rows = within_budget(statement, params, step.budget_ms, scaled=step.scaled)
        if rows is not None:
            return Matches(match_rows(rows), step.coverage, MatchedBy.SPELLED if spelled else step.matched_by)
    return Matches([], Coverage.NONE, MatchedBy.NONE)


def cut_windows(listing: Listing, terms: list[str], dialect: Dialect, scope: SearchScope, *, budget: int) -> Cut:
    """(field, term) -> (position, Window), or None when the field no longer matches; and each field's link.

    Pairs the walk does not reach are absent: they cannot be listed. When
    the match statement cut every pair already (``listing.cut``), no
    statement runs.
    """
    pairs, costs = window_pairs(listing.candidates, terms, budget=budget, seeds=listing.seeds)
    if not pairs:
        return Cut({}, {})
    cut = listing.cut
    if not all(pair in cut.windows for _, pair in pairs):
        statement, params = window_sql(pairs, terms, costs, budget=budget, dialect=dialect, scope=scope)
        cut = window_rows(pairs, fetch_rows(statement, params), every=dialect.vendor != "postgresql")
    return Cut(walk_reach(pairs, costs, cut.windows, budget=budget), cut.links)
