"""Which match statements a search runs: one plan per database and scope, chosen in ``choose_plan``.

Every plan answers with ``Matches``: the rows, how much of the scope they
cover and which statement found them. A thread's count is always exact; a
global search on PostgreSQL answers within about the sum of two time budgets,
whatever the terms, each scaled by the machine's load (``budget.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import NamedTuple, assert_never

from threadmem.scope import SearchScope
from threadmem.search.hits import Coverage, MatchedBy
from threadmem.search.literal.budget import index_budget_ms, recent_budget_ms, thread_index_budget_ms, within_budget
from threadmem.search.literal.dialects import Dialect
from threadmem.search.literal.match import (
    MatchRow,
    fetch_matches,
    index_match_sql,
    match_rows,
    scan_match_sql,
)
from threadmem.search.literal.owner import has_owner_window
from threadmem.search.literal.recent import recent_match_sql
from threadmem.search.literal.spelling import spellings
from threadmem.search.tuning import SearchPath, SearchTuning


class MatchPlan(StrEnum):
    # Read the scope's rows to the end: SQLite (no index serves its registered
    # function), and on PostgreSQL a thread of at most thread_scan_bytes.
    SCAN = "scan"
    # PostgreSQL without threadmem_search, a larger thread: one statement
    # learns how the thread spells the terms (``spellings``), then the trigram
    # indexes run to the end.
    SPELLED_INDEX = "spelled-index"
    # PostgreSQL with threadmem_search, a larger thread: the indexes within
    # about the time a scan of the thread would take, else a scan.
    INDEX_THEN_SCAN = "index-then-scan"
    # PostgreSQL, global scope: the indexes within index_budget_ms() (per term
    # the token index where the term allows it, else the trigram index:
    # Dialect.token_matches), else the whole query in the newest messages
    # within recent_budget_ms(), else nothing.
    INDEX_THEN_RECENT = "index-then-recent"
    # PostgreSQL, a non-operator's global scope too large to scan: the same,
    # with the owner's newest messages read first in the index statement and
    # the indexes asked only for older ones (owner.py).
    WINDOW_THEN_RECENT = "window-then-recent"


def choose_plan(scope: SearchScope, dialect: Dialect) -> MatchPlan:
    """The one place that decides how a search matches.

    A small thread is scanned because there the index path costs more than
    reading it: planning compiles the pattern into a trigram graph, and a
    word common across the store makes the index read long posting lists. A
    larger thread goes through the indexes, and so does a non-operator's global
    scope (their own threads) only when it holds more than a scanned thread
    would. With threadmem_search they get
    about a scan's time, since a term whose trigrams are all common across
    the store costs the index more than the thread; without it the thread's
    spelling of the terms is learnt first. The global scope has no end to
    scan, so it gets time budgets instead (docs/search.md has the figures).
    THREADMEM_SEARCH_PATH=scan or index forces a thread's choice either way;
    scan also reads a global scope to the end (seconds on a large store).
    """
    if dialect.vendor != "postgresql":
        return MatchPlan.SCAN
    tuning = SearchTuning.from_settings()
    if scope.is_global:
        # An owner's whole store, when it is as small as a thread that would be
        # scanned, is read to the end too: complete, with no time budget to run
        # out of under load. An operator's (every thread) never is.
        # THREADMEM_SEARCH_PATH=scan reads any global scope to the end: the
        # exhaustive search bench/search.py checks the index paths against.
        small_owner = scope.readable_thread_ids is not None and scope.visible_bytes <= tuning.thread_scan_bytes
        if tuning.path == SearchPath.SCAN or (small_owner and tuning.path != SearchPath.INDEX):
            return MatchPlan.SCAN
        return MatchPlan.WINDOW_THEN_RECENT if has_owner_window(scope) else MatchPlan.INDEX_THEN_RECENT
    if tuning.path == SearchPath.SCAN or (
        tuning.path == SearchPath.AUTO and scope.visible_bytes <= tuning.thread_scan_bytes
    ):
        return MatchPlan.SCAN
    if dialect.has_extension:
        return MatchPlan.INDEX_THEN_SCAN
    return MatchPlan.SPELLED_INDEX


class Matches(NamedTuple):
    rows: list[MatchRow]
    coverage: Coverage
    matched_by: MatchedBy


def run_plan(
    plan: MatchPlan,
    scope: SearchScope,
    terms: Sequence[str],
    dialect: Dialect,
    *,
    start: tuple[int, int, int] | None = None,
) -> Matches:
    """Run ``plan``'s statements: one, or two when the first ran out of time or learnt the spellings, at most three.

    ``start``: a later page's cursor key (``with_small_windows``).
    """
    match plan:
        case MatchPlan.SCAN:
            rows = fetch_matches(*scan_match_sql(scope, terms, dialect, start=start))
            return Matches(rows, Coverage.ALL, MatchedBy.SCAN)
        case MatchPlan.SPELLED_INDEX:
            spelled = spellings(scope, terms, dialect)
            rows = fetch_matches(*index_match_sql(scope, terms, dialect, spelled=spelled, start=start))
            return Matches(rows, Coverage.ALL, MatchedBy.SPELLED if spelled else MatchedBy.INDEX)
        case MatchPlan.INDEX_THEN_SCAN:
            statement, params = index_match_sql(scope, terms, dialect, start=start)
            budgeted = within_budget(statement, params, thread_index_budget_ms(scope.visible_bytes))
            if budgeted is not None:
                return Matches(match_rows(budgeted), Coverage.ALL, MatchedBy.INDEX)
            # The index could not narrow the terms in time: read the thread.
            rows = fetch_matches(*scan_match_sql(scope, terms, dialect, start=start))
            return Matches(rows, Coverage.ALL, MatchedBy.SCAN)
        case MatchPlan.INDEX_THEN_RECENT | MatchPlan.WINDOW_THEN_RECENT:
            window = plan == MatchPlan.WINDOW_THEN_RECENT
            statement, params = index_match_sql(scope, terms, dialect, start=start, window=window)
            budgeted = within_budget(statement, params, index_budget_ms(), scale_by_load=True)
            if budgeted is not None:
                return Matches(match_rows(budgeted), Coverage.ALL, MatchedBy.INDEX)
            statement, params = recent_match_sql(scope, terms, dialect, start=start)
            budgeted = within_budget(statement, params, recent_budget_ms(), scale_by_load=True)
            if budgeted is not None:
                return Matches(match_rows(budgeted), Coverage.RECENT, MatchedBy.RECENT)
            return Matches([], Coverage.NONE, MatchedBy.NONE)
        case _:
            assert_never(plan)
