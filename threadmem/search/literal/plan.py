"""How a search matches, decided once: ``plan_search`` returns a ``SearchPlan`` naming the statements' shape and,
per term, the branch that finds it and why; ``literal_search`` runs it (``run_plan``) and ``match.py`` writes
its SQL without deciding anything.

A thread's count is always exact; a global search on PostgreSQL answers
within about the sum of two time budgets, whatever the terms, each scaled by
the machine's load (``budget.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from threadmem.lib.tokens import word_lexeme
from threadmem.scope import SearchScope
from threadmem.search.literal.dialects import Dialect
from threadmem.search.literal.owner import has_owner_window
from threadmem.search.literal.tokens import common_words, newest_first_terms, token_terms
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
    # PostgreSQL, global scope: the indexes within SearchTuning.index_budget_ms
    # (each term's Branch: index_term_plans), else the whole query in the
    # newest messages within recent_budget_ms, else nothing.
    INDEX_THEN_RECENT = "index-then-recent"
    # PostgreSQL, a non-operator's global scope too large to scan: the same,
    # with the owner's newest messages read first in the index statement and
    # the indexes asked only for older ones (owner.py).
    WINDOW_THEN_RECENT = "window-then-recent"


class Branch(StrEnum):
    """How one term's branch of the match statement finds its fields (``match._match_sql`` writes each)."""

    SCAN = "scan"  # every row of the scope, with a test no index serves
    TRIGRAM = "trigram index"
    TOKEN = "token index"  # exact posting lists (tokens.py), re-checked newest first
    NEWEST = "newest first"  # a common word's content, newest first with no index (tokens.newest_first_terms)
    SHARED_NEWEST = "shared newest first"  # the same, one read shared by two or more such words (newest.py)
    WINDOW = "owner's window, then trigram index"  # owner.py


@dataclass(frozen=True)
class TermPlan:
    term: str
    branch: Branch
    reason: str
    query: str | None = None  # Branch.TOKEN: the term's tsquery


@dataclass(frozen=True)
class SearchPlan:
    kind: MatchPlan
    reason: str
    terms: tuple[TermPlan, ...]
    tuning: SearchTuning


def choose_plan(scope: SearchScope, dialect: Dialect, tuning: SearchTuning | None = None) -> MatchPlan:
    """The statements' shape for ``scope`` (``plan_search`` adds the terms')."""
    return _choose(scope, dialect, tuning or SearchTuning.from_settings())[0]


def _choose(scope: SearchScope, dialect: Dialect, tuning: SearchTuning) -> tuple[MatchPlan, str]:
    """The plan and why (docs/search.md, "The plan").

    A small thread is scanned: there the index path costs more than reading
    it (planning compiles the pattern into a trigram graph; a common word's
    posting lists are long). A larger thread goes through the indexes: with
    threadmem_search within about a scan's time (a term of common trigrams
    can cost the index more than the thread), without it after learning the
    thread's spelling of the terms. The global scope has no end to scan, so
    it gets time budgets, unless it is an owner's no larger than a scanned
    thread. THREADMEM_SEARCH_PATH=scan or index forces a thread's choice;
    scan also reads a global scope to the end.
    """
    if dialect.vendor != "postgresql":
        return MatchPlan.SCAN, "no index serves SQLite's match function"
    if tuning.path == SearchPath.SCAN:
        return MatchPlan.SCAN, "THREADMEM_SEARCH_PATH=scan"
    small = scope.visible_bytes <= tuning.thread_scan_bytes
    if scope.is_global:
        # An owner's whole store as small as a scanned thread is read to the
        # end too: complete, with no time budget to run out of under load. An
        # operator's (every thread) never is.
        if scope.readable_thread_ids is not None and small and tuning.path != SearchPath.INDEX:
            return MatchPlan.SCAN, "the owner's store is as small as a scanned thread"
        if has_owner_window(scope):
            return MatchPlan.WINDOW_THEN_RECENT, "global: the indexes within a budget, else the newest messages"
        return MatchPlan.INDEX_THEN_RECENT, "global: the indexes within a budget, else the newest messages"
    if tuning.path == SearchPath.AUTO and small:
        return MatchPlan.SCAN, "small thread: reading it costs less than the index"
    if dialect.has_extension:
        return MatchPlan.INDEX_THEN_SCAN, "large thread: the trigram index within a scan's time, else a scan"
    return MatchPlan.SPELLED_INDEX, "large thread without threadmem_search: its spelling first, then the index"


def plan_search(scope: SearchScope, terms: Sequence[str], dialect: Dialect, tuning: SearchTuning) -> SearchPlan:
    """The whole plan. A global index plan reads the token index's statistics here, before the match statement
    (``common_words``: on the driver's cursor, at most once a minute per connection)."""
    kind, reason = _choose(scope, dialect, tuning)
    if kind in (MatchPlan.INDEX_THEN_RECENT, MatchPlan.WINDOW_THEN_RECENT):
        planned = index_term_plans(scope, terms, dialect, window=kind == MatchPlan.WINDOW_THEN_RECENT)
    else:
        branch = Branch.SCAN if kind == MatchPlan.SCAN else Branch.TRIGRAM
        planned = tuple(TermPlan(term, branch, reason) for term in terms)
    return SearchPlan(kind, reason, planned, tuning)


def index_term_plans(
    scope: SearchScope, terms: Sequence[str], dialect: Dialect, *, window: bool = False
) -> tuple[TermPlan, ...]:
    """Per term, the branch of an index statement: in a thread the trigram index; in the global scope the token
    index where the term allows it, else (over every thread) newest first for a word the statistics call common,
    else the trigram index, after the owner's newest messages when ``window``."""
    if not scope.is_global:
        return tuple(TermPlan(term, Branch.TRIGRAM, "large thread: the trigram index narrows") for term in terms)
    tokens = token_terms(list(terms), dialect)
    every_thread = scope.readable_thread_ids is None
    newest_first = newest_first_terms(list(terms), dialect) if every_thread else frozenset()
    shares = common_words() if newest_first else {}
    planned = []
    for index, term in enumerate(terms):
        if index in tokens:
            why = "its runs pair in the token index: exact posting lists"
            planned.append(TermPlan(term, Branch.TOKEN, why, tokens[index]))
        elif index in newest_first:
            share = shares.get(word_lexeme(term) or "", 0.0)
            if len(newest_first) > 1:
                why = f"common word ({share:.0%} of fields): one newest-first read shared by {len(newest_first)} words"
                planned.append(TermPlan(term, Branch.SHARED_NEWEST, why))
            else:
                planned.append(TermPlan(term, Branch.NEWEST, f"common word ({share:.0%} of fields): newest first"))
        elif window:
            why = "the owner's newest messages first, the trigram index for older ones"
            planned.append(TermPlan(term, Branch.WINDOW, why))
        else:
            why = "no token pairs, not a common word: the trigram index narrows"
            planned.append(TermPlan(term, Branch.TRIGRAM, why if dialect.has_tokens else "the trigram index narrows"))
    return tuple(planned)
