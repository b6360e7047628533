"""How a search matches, decided once: ``plan_search`` returns a ``SearchPlan`` naming the statements' shape and,
per term, the branch that finds it and why; ``literal_search`` runs it (``run_plan``) and ``match_sql.py`` writes
its SQL without deciding anything.

The plan resolves its inputs itself, once per search, and carries them as
data: the tuning (``TUNING``, read here and nowhere
else), the database's capabilities as those knobs use them (``dialect``,
probed by ``database.capabilities``) and, in the global scope, what the token
index can tell of each term (``database.term_tokens``: its tsquery, or its
share of fields when it is a word the index's statistics call common).

A thread's count is always exact; a global search on PostgreSQL answers
within about the sum of two time budgets, whatever the terms, each scaled by
the machine's load (``within_budget``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple, assert_never

from threadmem.domain.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.domain.scope import SearchScope
from threadmem.features.search.answer_caps import SEARCH_COUNT_LIMIT
from threadmem.features.search.database.capabilities import capabilities
from threadmem.features.search.database.term_tokens import TermTokens, term_tokens
from threadmem.features.search.hits import Coverage, MatchedBy
from threadmem.features.search.literal.dialects import Dialect, PostgresDialect, SqliteDialect

# More threads than this: one lookup each would cost more than the owner's window saves (match_sql.py, "An owner's
# window").
OWNER_WINDOW_THREADS_MAX = 1_000
# The shared newest-first read's rows (Branch.SHARED_NEWEST): this many times what the least common word needs
# by its share of fields, and never more than STREAM_ROWS_MAX.
STREAM_MARGIN = 4
STREAM_ROWS_MAX = 50_000


class SearchPath(StrEnum):
    """How a thread search on PostgreSQL matches (``SearchTuning.path``)."""

    AUTO = "auto"  # scan a thread up to thread_scan_bytes, else the indexes
    SCAN = "scan"  # always read the scope's rows (the global scope too: the exhaustive search)
    INDEX = "index"  # always start with the trigram indexes


@dataclass(frozen=True)
class SearchTuning:
    """The literal search's tuning, measured by the benches (docs/search.md has the figures behind each value).

    ``TUNING`` is the one in force, read per search; a bench or a test replaces it
    (``dataclasses.replace``) to measure one path against another.
    """

    # Global search on PostgreSQL: time for the trigram-index path, then for the fallback over the newest
    # messages, in an idle machine's milliseconds (statements.within_budget).
    index_budget_ms: int = 45
    recent_budget_ms: int = 30
    # On a loaded machine both are multiplied by the load (statements active in the database or threads runnable
    # on this host, per CPU), at most this many times (1: the clock's milliseconds).
    budget_scale_max: int = 20
    db_cpus: int = 0  # the database's CPUs, for that load; 0: this host's
    # Thread search on PostgreSQL: a thread (with its fork ancestry) of at most this many bytes of text is scanned;
    # a larger one is searched through the trigram indexes (0: always the indexes).
    thread_scan_bytes: int = 1_000_000
    # Without threadmem_search, a larger thread is searched through the indexes after reading this many bytes of
    # its newest content, to learn how it spells each term (0: do not).
    spelling_sample_bytes: int = 65_536
    # Match ASCII terms with threadmem_search (pg/) where the database has it; off only for comparison.
    pg_extension: bool = True
    # Global search: the token index where it exists (search/database/); off only for comparison.
    tokens: bool = True
    # With threadmem_search, a larger thread's index path has the time a scan of it would take at this rate.
    scan_bytes_per_ms: int = 400_000
    path: SearchPath = SearchPath.AUTO


TUNING = SearchTuning()


def dialect(tuning: SearchTuning | None = None) -> Dialect:
    """The dialect of the connection's database, its capabilities as ``tuning`` (default: ``TUNING``) uses
    them, the connection made ready for it (``Dialect.prepare``). SQLite offers nothing to probe."""
    if connection.vendor == "sqlite":
        sqlite = SqliteDialect()
        sqlite.prepare()
        return sqlite
    found = capabilities()
    if found.vendor != "postgresql":
        raise NotImplementedError(f"search_memory does not support the {found.vendor} backend")
    tuning = tuning or TUNING
    return PostgresDialect(
        has_extension=tuning.pg_extension and found.trigram_ops,
        has_tokens=tuning.tokens and found.token_indexes,
        has_link_function=found.link_function,
    )


def has_search_extension() -> bool:
    """PostgreSQL: whether search uses threadmem_search (``TUNING.pg_extension``, and the database has it)."""
    return TUNING.pg_extension and capabilities().trigram_ops


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
    # the indexes asked only for older ones (Branch.WINDOW).
    WINDOW_THEN_RECENT = "window-then-recent"


class Branch(StrEnum):
    """How one term's branches of the match statement find its fields (``match_sql.py`` writes each)."""

    SCAN = "scan"  # every row of the scope, with a test no index serves
    TRIGRAM = "trigram index"
    TOKEN = "token index"  # exact posting lists (database.token_query), re-checked newest first
    NEWEST = "newest first"  # a common word's content, newest first with no index (_common_shares)
    SHARED_NEWEST = "shared newest first"  # the same, one read shared by two or more such words (stream_rows)
    WINDOW = "owner's window, then trigram index"  # has_owner_window


@dataclass(frozen=True)
class TermPlan:
    term: str
    branch: Branch
    reason: str
    query: str | None = None  # Branch.TOKEN: the term's tsquery
    rows: int | None = None  # Branch.SHARED_NEWEST: how many of the newest messages the shared read reads


class Step(NamedTuple):
    """One statement of a plan. The steps run in order until one finishes in time, and its rows are the matches."""

    terms: tuple[TermPlan, ...] | None  # each term's branch; None: the whole query in the newest messages
    matched_by: MatchedBy
    coverage: Coverage = Coverage.ALL
    budget_ms: int | None = None  # None: to the end
    scaled: tuple[int, int] | None = None  # the budget times the load (statements.within_budget)


@dataclass(frozen=True)
class SearchPlan:
    kind: MatchPlan
    reason: str
    terms: tuple[TermPlan, ...]
    scope: SearchScope
    dialect: Dialect
    tuning: SearchTuning
    steps: tuple[Step, ...]  # the statements, in the order they are tried


def choose(scope: SearchScope, dialect: Dialect, tuning: SearchTuning) -> tuple[MatchPlan, str]:
    """The statements' shape for ``scope`` and why (docs/search.md, "The plan"); ``plan_search`` adds the terms'.

    A small thread is scanned: there the index path costs more than reading
    it (planning compiles the pattern into a trigram graph; a common word's
    posting lists are long). A larger thread goes through the indexes: with
    threadmem_search within about a scan's time (a term of common trigrams
    can cost the index more than the thread), without it after learning the
    thread's spelling of the terms. The global scope has no end to scan, so
    it gets time budgets, unless it is an owner's no larger than a scanned
    thread. ``tuning.path`` scan or index forces a thread's choice;
    scan also reads a global scope to the end.
    """
    if dialect.vendor != "postgresql":
        return MatchPlan.SCAN, "no index serves SQLite's match function"
    if tuning.path == SearchPath.SCAN:
        return MatchPlan.SCAN, "path=scan"
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


def has_owner_window(scope: SearchScope) -> bool:
    """Whether a global search of ``scope`` reads the owner's newest messages first (a non-operator's, few threads).

    An owner's threads are interleaved with every other owner's, so the
    trigram index of a word common across the store reads its whole posting
    list before it keeps the owner's fields, and the newest-messages
    fallback, which reads the store's newest ids, holds few of theirs. Their
    own newest messages come cheaply from the (thread, id) index instead.
    """
    threads = scope.readable_thread_ids
    return scope.is_global and threads is not None and 0 < len(threads) <= OWNER_WINDOW_THREADS_MAX


def plan_search(scope: SearchScope, terms: Sequence[str], *, tuning: SearchTuning | None = None) -> SearchPlan:
    """The whole plan, its inputs resolved here (``tuning``: ``TUNING`` unless given). A global index plan
    reads the token index's statistics here, before the match statement (``database.term_tokens``: on the
    driver's cursor, at most once a minute per connection)."""
    tuning = tuning or TUNING
    resolved = dialect(tuning)
    kind, reason = choose(scope, resolved, tuning)
    if kind in (MatchPlan.INDEX_THEN_RECENT, MatchPlan.WINDOW_THEN_RECENT):
        planned = index_term_plans(scope, terms, resolved, window=kind == MatchPlan.WINDOW_THEN_RECENT)
    else:
        branch = Branch.SCAN if kind == MatchPlan.SCAN else Branch.TRIGRAM
        planned = tuple(TermPlan(term, branch, reason) for term in terms)
    return SearchPlan(kind, reason, planned, scope, resolved, tuning, steps_of(kind, planned, scope, tuning))


def steps_of(
    kind: MatchPlan, planned: tuple[TermPlan, ...], scope: SearchScope, tuning: SearchTuning
) -> tuple[Step, ...]:
    """The statements of a plan of ``kind``, in the order they are tried (``MatchPlan`` says why each)."""
    match kind:
        case MatchPlan.SCAN:
            return (Step(planned, MatchedBy.SCAN),)
        case MatchPlan.SPELLED_INDEX:
            # MatchedBy.SPELLED when the thread spelled a term (literal_search.run_plan learns the spellings first).
            return (Step(planned, MatchedBy.INDEX),)
        case MatchPlan.INDEX_THEN_SCAN:
            # The index could not narrow the terms in time: read the thread.
            index = Step(planned, MatchedBy.INDEX, budget_ms=thread_index_budget_ms(scope.visible_bytes, tuning))
            return (index, Step(scan_plans(term.term for term in planned), MatchedBy.SCAN))
        case MatchPlan.INDEX_THEN_RECENT | MatchPlan.WINDOW_THEN_RECENT:
            scaled = (tuning.budget_scale_max, tuning.db_cpus)
            index = Step(planned, MatchedBy.INDEX, budget_ms=tuning.index_budget_ms, scaled=scaled)
            recent = Step(None, MatchedBy.RECENT, Coverage.RECENT, tuning.recent_budget_ms, scaled)
            return (index, recent)
        case _:
            assert_never(kind)


def thread_index_budget_ms(visible_bytes: int, tuning: SearchTuning) -> int:
    """Thread scope with threadmem_search: the index path's time, about what a scan of the thread would take.

    ``tuning.scan_bytes_per_ms``: how fast a scan reads (docs/search.md, "The plan"). At least 1 ms: 0 is no limit.
    """
    return max(1, visible_bytes // tuning.scan_bytes_per_ms)


def scan_plans(terms: Iterable[str]) -> tuple[TermPlan, ...]:
    """Every term read from the scope's rows: a thread the index could not narrow in time (``steps_of``)."""
    return tuple(TermPlan(term, Branch.SCAN, "") for term in terms)


def index_term_plans(
    scope: SearchScope, terms: Sequence[str], dialect: Dialect, *, window: bool = False
) -> tuple[TermPlan, ...]:
    """Per term, the branch of an index statement: in a thread the trigram index; in the global scope the token
    index where the term allows it, else (over every thread) newest first for a word the statistics call common,
    else the trigram index, after the owner's newest messages when ``window``.

    A term the token index narrows skips the owner's window: its exact posting
    list holds the fields that can match and nothing else, so reading the
    window for it would cost a rare host or path more than the whole index
    branch (docs/search.md, "An owner's window").
    """
    if not scope.is_global:
        return tuple(TermPlan(term, Branch.TRIGRAM, "large thread: the trigram index narrows") for term in terms)
    told = (
        term_tokens(terms, shares=scope.readable_thread_ids is None)
        if dialect.has_tokens
        else [TermTokens(None, None, None)] * len(terms)
    )
    shares = _common_shares(told)
    rows = stream_rows(shares.values()) if len(shares) > 1 else None
    planned = []
    for index, term in enumerate(terms):
        if told[index].query is not None:
            why = "its runs pair in the token index: exact posting lists"
            planned.append(TermPlan(term, Branch.TOKEN, why, told[index].query))
        elif index in shares:
            share = shares[index]
            if rows is not None:
                why = f"common word ({share:.0%} of fields): one newest-first read shared by {len(shares)} words"
                planned.append(TermPlan(term, Branch.SHARED_NEWEST, why, rows=rows))
            else:
                planned.append(TermPlan(term, Branch.NEWEST, f"common word ({share:.0%} of fields): newest first"))
        elif window:
            why = "the owner's newest messages first, the trigram index for older ones"
            planned.append(TermPlan(term, Branch.WINDOW, why))
        else:
            why = "no token pairs, not a common word: the trigram index narrows"
            planned.append(TermPlan(term, Branch.TRIGRAM, why if dialect.has_tokens else "the trigram index narrows"))
    return tuple(planned)


def _common_shares(told: Sequence[TermTokens]) -> dict[int, float]:
    """The terms that are words the statistics call common, by index: their shares of the fields.

    Their global content branch reads newest first, with no index. The trigram
    index's estimate of a word comes from the column's histogram, which holds
    short fields only, so it underestimates a word common in long ones and the
    planner reads all of its posting list. The token index's statistics count
    whole words in every field: a floor on the term's share. Tool arguments are
    short, so their histogram estimates well; there the planner's choice costs
    less than reading newest first (docs/search.md, "The token index").
    """
    return {index: tokens.share for index, tokens in enumerate(told) if tokens.share is not None}


def stream_rows(shares: Iterable[float]) -> int:
    """How many of the newest messages one read shared by common words of these shares may read.

    Decompressing the newest messages is most of what a common word's
    newest-first branch costs, so two or more such words share one read
    (``match_sql.py``, ``nf``). It has an end so that the planner reads the id
    index backwards instead of the whole table and a sort; a word short of
    hits there goes on in the older messages, so the hits are the same.
    """
    least = min(shares, default=0.0)
    if least <= 0:
        return STREAM_ROWS_MAX
    return min(STREAM_ROWS_MAX, math.ceil(STREAM_MARGIN * (SEARCH_COUNT_LIMIT + 1) / least))
