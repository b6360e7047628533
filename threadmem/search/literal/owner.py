"""An owner's global search: their newest messages first, the search indexes only for what lies before them.

An owner's threads are interleaved with every other owner's, so the trigram
index of a word common across the store reads its whole posting list before
it keeps the owner's fields, and the newest-messages fallback, which reads
the store's newest ids, holds few of theirs. Their own newest messages come cheaply from
the (thread, id) index instead: the newest ``OWNER_WINDOW_MESSAGES`` of each
thread, the newest of those overall, up to ``OWNER_WINDOW_BYTES`` of content.

That window is every searchable message of the scope from some id on (a
contiguous newest range), so a term's hits in it are its newest hits.
Each term's index branches then read only messages older than the window,
and run only when the window holds at most SEARCH_COUNT_LIMIT of the term's
hits (a one-time filter: PostgreSQL skips the branch otherwise). One
statement, the same candidates a scan of the owner's messages would give:
a common word is answered from the window, a rare one by the indexes.

A term the token index narrows (``tokens.py``) skips the window: its exact
posting list holds the fields that can match and nothing else, so reading
the window for it would cost a rare host or path more than the whole index
branch. Figures: docs/search.md, "An owner's window".
"""

from __future__ import annotations

from typing import Any

from threadmem.scope import SearchScope
from threadmem.search.bounded import SEARCH_COUNT_LIMIT
from threadmem.search.hits import candidate_columns
from threadmem.search.literal.dialects import Dialect
from threadmem.search.literal.filters import searchable_sql

# Enough for a word in a fifth of the window to pass SEARCH_COUNT_LIMIT hits,
# cheap enough for a rare one (docs/search.md, "An owner's window").
OWNER_WINDOW_MESSAGES = 1_000
OWNER_WINDOW_BYTES = 4_000_000
# More threads than this: one lookup each would cost more than the window saves.
OWNER_WINDOW_THREADS_MAX = 1_000
# Older than every message when the window holds none.
_NO_WINDOW = 2**63 - 1


def has_owner_window(scope: SearchScope) -> bool:
    """Whether a global search of ``scope`` reads the owner's newest window first (a non-operator's, few threads)."""
    threads = scope.readable_thread_ids
    return scope.is_global and threads is not None and 0 < len(threads) <= OWNER_WINDOW_THREADS_MAX


def window_sql(scope: SearchScope) -> tuple[str, list[Any]]:
    """The CTE ``ow``: the owner's newest searchable messages, newest first, up to the window's caps.

    Its rows come out newest first as they are fetched (the ids sorted first,
    each row then joined in that order), and PostgreSQL runs a CTE only as far
    as its readers ask: a term that finds its hits in the first rows fetches
    only those. ``rn`` numbers them.
    """
    searchable, searchable_params = searchable_sql("m")
    statement = (
        "ow AS MATERIALIZED (SELECT n.id, n.content, n.session_id, n.generation, n.role, n.rn FROM ("
        "SELECT m.id, m.content, m.session_id, m.generation, m.role, "
        "row_number() OVER (ORDER BY x.id DESC) AS rn, "
        "sum(octet_length(m.content)) OVER (ORDER BY x.id DESC ROWS UNBOUNDED PRECEDING) AS seen FROM ("
        "SELECT x.id FROM unnest(CAST(%s AS bigint[])) t(id) CROSS JOIN LATERAL "
        "(SELECT i.id FROM threadmem_message i WHERE i.thread_id = t.id ORDER BY i.id DESC LIMIT %s) x "
        f"ORDER BY x.id DESC LIMIT %s) x JOIN threadmem_message m ON m.id = x.id WHERE {searchable}"
        ") n WHERE n.seen - octet_length(n.content) < %s)"
    )
    threads = list(scope.readable_thread_ids or ())
    return statement, [threads, OWNER_WINDOW_MESSAGES, OWNER_WINDOW_MESSAGES, *searchable_params, OWNER_WINDOW_BYTES]


def term_window_sql(
    index: int, term: str, dialect: Dialect, *, content: str, argument: str
) -> list[tuple[str, list[Any]]]:
    """The CTEs ``wc<index>`` and ``w<index>``: the term's newest hits in the window, in content, then content
    and arguments (``content``/``argument``: the columns each selects).

    Both read the window in its order, newest first, and stop at the limit.
    Arguments are read only in the rows up to the content's last hit once
    the content holds the limit: an argument of an older message (or of
    that one: its content comes first) is never among the term's first
    SEARCH_COUNT_LIMIT + 1 fields (as ``match._not_older_than_content_sql``).
    """
    in_content, content_needle = dialect.scan_matches("m.content", term)
    in_argument, argument_needle = dialect.scan_matches("a.value", term)
    limit = SEARCH_COUNT_LIMIT + 1
    in_window = (
        f"wc{index} AS MATERIALIZED (SELECT {index} AS term, {content}, m.rn FROM ow m WHERE {in_content} LIMIT %s)"
    )
    rows_read = f"(SELECT max(c.rn) FROM wc{index} c HAVING count(*) > {SEARCH_COUNT_LIMIT})"
    both = (
        f"w{index} AS MATERIALIZED ("
        f"SELECT {candidate_columns('c')} FROM wc{index} c "
        "UNION ALL "
        f"SELECT * FROM (SELECT {index} AS term, {argument} FROM (SELECT * FROM ow LIMIT {rows_read}) m "
        "CROSS JOIN LATERAL (SELECT * FROM threadmem_toolargument x WHERE x.message_id = m.id ORDER BY x.id "
        "OFFSET 0) a "
        f"WHERE {in_argument} LIMIT %s) a)"
    )
    return [(in_window, [content_needle, limit]), (both, [argument_needle, limit])]


def before_window_sql(index: int) -> str:
    """What a term's index branch adds to its WHERE: messages older than the window, and only while it lacks hits."""
    return (
        f"m.id < (SELECT coalesce(min(o.id), {_NO_WINDOW}) FROM ow o) "
        f"AND (SELECT count(*) FROM w{index}) <= {SEARCH_COUNT_LIMIT}"
    )
