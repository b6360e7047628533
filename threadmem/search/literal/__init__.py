"""The literal part of search_memory: a fixed number of SQL statements, whatever the number of hits.

``literal_search`` decides, writes, runs:

1. Decide: ``plan.py:plan_search`` returns one ``SearchPlan``, every input
   resolved there once (the knobs, the dialect, what the token index says of
   each term): the statements' shape (``MatchPlan``) and, per term, the
   ``Branch`` that finds it and why.
2. Write: ``match.py`` writes the match statement as the plan says, deciding
   nothing: the fragments every branch takes, once (``Dialect.statement_sql``,
   ``filters.statement_filters``), every branch (``union_sql``), and around
   them the rows in listing order, small fields with their windows.
3. Run: ``run_plan`` below, to the end or within a time budget
   (``within_budget``, below). When a budget runs out: in a thread too large
   to scan on PostgreSQL one more statement runs first (``spellings``,
   without threadmem_search) or after (a scan, with it, when the index ran
   out of time); a global search on PostgreSQL falls back to the newest
   messages (``recent.py``).

Then the rows become the literal part (``listing.py``), with at most one
windows statement (``windows.py``): for the few fields that can be listed,
each term's first position and the window around it, cut by the database.
Skipped when nothing matched, or when the match statement cut every window
the listing needs. Measurements and history: docs/search.md.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, assert_never

from django.db import DatabaseError

from threadmem.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.scope import SearchScope
from threadmem.search.bounded import literal_part
from threadmem.search.cursor import CursorPosition
from threadmem.search.hits import Coverage, LiteralPart, MatchedBy
from threadmem.search.literal import plan
from threadmem.search.literal.dialects import (
    Dialect,
    PostgresDialect,
    SqliteDialect,
    like_contains,
    trigram_pattern,
)
from threadmem.search.literal.filters import scope_sql, searchable_sql
from threadmem.search.literal.listing import Matches, MatchRow, list_matches, match_rows
from threadmem.search.literal.match import index_match_sql, scan_match_sql
from threadmem.search.literal.plan import MatchPlan, SearchPlan, SearchTuning, has_search_extension, plan_search
from threadmem.search.literal.recent import recent_match_sql
from threadmem.search.literal.spelling import spellings

__all__ = [
    "Dialect",
    "MatchPlan",
    "Matches",
    "PostgresDialect",
    "SqliteDialect",
    "has_search_extension",
    "is_timeout",
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
    part = list_matches(scope, terms, plan.dialect, matches, start=start, sign=sign, described_max_chars=described)
    part.plan = plan.kind.value
    part.matched_by = matches.matched_by
    part.executed = executed_plan(plan, matches, ran_ms)
    return part


# A global described question's first page (the whole query matched nothing): its words are not matched one by one
# over every thread, costly for common words and listed on no first page anyway (``ranked.share``).
WORDS_BY_CURSOR = (
    "The whole query has no literal hit. Its words were not searched one by one in every thread (the ranked "
    'results below answer a described question); for their literal hits, newest first, call again with cursor="{}".'
)
# Where the words' hits start: the first word (term 1), from the newest message on.
WORDS_START = CursorPosition(term=1, message_id=10**12 - 1, arg_id=0, listed_before=0)


def words_by_cursor(whole: LiteralPart, sign: Callable[[CursorPosition], str]) -> LiteralPart:
    """The literal part of a global described question's first page: no hit of the whole query, and the cursor
    to its words' hits (``WORDS_START``), whose page runs the whole plan."""
    cursor = sign(WORDS_START)
    return replace(whole, text=WORDS_BY_CURSOR.format(cursor), next_position=WORDS_START, next_cursor=cursor)


def run_plan(
    plan: SearchPlan, *, start: tuple[int, int, int] | None, described_max_chars: int | None = None
) -> Matches:
    """Run ``plan``'s statements: one, or two when the first ran out of time or learnt the spellings, at most three.

    ``start``: a later page's cursor key, ``described_max_chars`` a described question's first page's cap,
    applied when no row matches the whole query (``match.with_small_windows``).
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


# Statements with a time budget: a PostgreSQL statement timeout sent with the
# statement, in one round trip. A global search's index path may take
# SearchTuning.index_budget_ms before it falls back to the newest messages
# for recent_budget_ms (a term whose trigrams are all common leaves the
# trigram index thousands of large rows to re-check:
# docs/search.md, "The plan"). Those are an idle machine's milliseconds: a
# saturated one shares its cores, so a global statement's timeout is its
# budget times the load, capped at budget_scale_max times
# (docs/search.md, "Under load").


def thread_index_budget_ms(visible_bytes: int, tuning: SearchTuning) -> int:
    """Thread scope with threadmem_search: the index path's time, about what a scan of the thread would take.

    ``tuning.scan_bytes_per_ms``: how fast a scan reads (docs/search.md, "The plan"). At least 1 ms: 0 is no limit.
    """
    return max(1, visible_bytes // tuning.scan_bytes_per_ms)


def host_runnable() -> int:
    """How many threads this host runs or could run right now (the kernel's count, /proc/loadavg's fourth
    field); 0 where there is no such file. The database often shares the host; where it does not, the
    database's own count of active statements decides (``_SCALED_TIMEOUT``)."""
    try:
        with open("/proc/loadavg", encoding="ascii") as loadavg:
            return int(loadavg.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 0


def cpus(tuning: SearchTuning) -> int:
    """``tuning.db_cpus``, else this host's CPUs: how many statements run at once without waiting."""
    return tuning.db_cpus or os.cpu_count() or 1


def is_timeout(error: DatabaseError) -> bool:
    """The statement timeout fired: a cancelled query, or a cancelled regex compilation.

    pg_trgm compiles the pattern into a trigram graph when the index scan
    starts, and reports a cancel that arrives then as an invalid regular
    expression ("operation cancelled"); the ``***=`` patterns of this module
    are always valid, so that error can only be the timeout.
    """
    try:
        from psycopg.errors import InvalidRegularExpression, QueryCanceled
    except ImportError:  # pragma: no cover - psycopg is a requirement
        return False
    cause = error.__cause__
    if isinstance(cause, InvalidRegularExpression):
        return "cancel" in str(cause)
    return isinstance(cause, QueryCanceled)


# The settings of a budgeted statement. No parallel workers: they start slower
# than these LIMITed scans finish, and do work the LIMIT throws away. No JIT:
# the planner prices every branch as if it read to its end, so on a large store
# it compiles expressions for longer than the statement runs (docs/search.md, "The plan").
_BUDGET_SETTINGS = (
    "SELECT set_config('statement_timeout', {timeout}, true), "
    "set_config('max_parallel_workers_per_gather', '0', true), set_config('jit', 'off', true)"
)
_FIXED_TIMEOUT = "%s"
# A load-scaled budget: the budget times the load, at least 1 and at most the
# cap; the load is the larger of the statements active in the database (this
# one included) and the threads runnable on the web host, per CPU. Computed
# by the server, in the same round trip.
_SCALED_TIMEOUT = (
    "(%s::float8 * least(%s::float8, greatest(1.0, greatest(%s::float8, "
    "(SELECT count(*) FROM pg_stat_activity WHERE state = 'active')) / %s::float8)))::bigint::text"
)
_SAVEPOINT = "threadmem_search_budget"


def within_budget(
    statement: str,
    params: list[Any],
    budget_ms: int,
    *,
    scale_by_load: bool = False,
    tuning: SearchTuning | None = None,
) -> list[tuple] | None:
    """Run ``statement`` with a statement timeout, in one round trip; None when it ran out of time.

    ``scale_by_load``: ``budget_ms`` is an idle machine's, multiplied by the
    load as the statement starts (the module docstring); else milliseconds on
    the clock.

    The settings, the statement and what follows it go as one query string
    (Django's psycopg cursor binds parameters client-side and sends it with
    the simple query protocol, which runs several statements). Outside a
    transaction the server runs them as one implicit transaction, so the
    transaction-local settings end with it. Inside a caller's transaction a
    savepoint wraps them and is rolled back after the statement (which only
    reads), which gives the caller's settings back; after a timeout that
    rollback is one more round trip.

    A timer that fires after the statement's last check for interrupts is
    reported by PostgreSQL at the next command. That command is the rollback
    to the savepoint, or ``SELECT 1`` outside a transaction: either way part
    of this query string, so such a late timeout counts as running out of
    time here instead of failing the caller's next statement.
    """
    nested = not connection.get_autocommit()
    if scale_by_load:
        tuning = tuning or plan.TUNING
        budget_settings = _BUDGET_SETTINGS.format(timeout=_SCALED_TIMEOUT)
        budget_params = [budget_ms, tuning.budget_scale_max, host_runnable(), cpus(tuning)]
    else:
        budget_settings = _BUDGET_SETTINGS.format(timeout=_FIXED_TIMEOUT)
        budget_params = [str(budget_ms)]
    if nested:
        batch = (
            f"SAVEPOINT {_SAVEPOINT}; {budget_settings}; {statement}; "
            f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}; RELEASE SAVEPOINT {_SAVEPOINT}"
        )
        before = 2  # the savepoint, the settings
    else:
        batch = f"{budget_settings}; {statement}; SELECT 1"
        before = 1  # the settings
    with connection.cursor() as cursor:
        try:
            cursor.execute(batch, [*budget_params, *params])
        except DatabaseError as error:
            if not is_timeout(error):
                raise
            if nested:
                cursor.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}; RELEASE SAVEPOINT {_SAVEPOINT}")
            return None
        for _ in range(before):
            cursor.nextset()
        return cursor.fetchall()
