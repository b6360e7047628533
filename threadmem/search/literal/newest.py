"""Common words over every thread: one newest-first read of the messages, shared by all of them.

A word the token index's statistics call common (``tokens.newest_first_terms``)
is found with no index: its content branch reads the newest messages until
SEARCH_COUNT_LIMIT + 1 of them hold it. ``connection refused`` asks for the
phrase and for each word, so two such branches read the same newest rows,
and decompressing them is most of what each branch costs (docs/search.md,
"Common words share one read"). With two or more such words one CTE (``nf``) reads the
newest messages once, decompresses each once and tests every word in it;
each word's branch takes its hits from that CTE, which PostgreSQL runs only
as far as its readers ask: as far as the word that needs the most rows.

The read has an end so that the planner reads the id index backwards
instead of the whole table and a sort: STREAM_MARGIN times the rows the
least common of the words needs by its share, at most STREAM_ROWS_MAX. A
word that finds fewer than SEARCH_COUNT_LIMIT + 1 hits in those rows goes on
with its own newest-first read of the older messages, as a lone common word
does, so the hits are the same as separate reads would find.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from threadmem.lib.tokens import word_lexeme
from threadmem.search.bounded import SEARCH_COUNT_LIMIT
from threadmem.search.hits import candidate_columns
from threadmem.search.literal.dialects import Dialect

# The shared read's rows: this many times what the least common word needs
# by its share of fields, and never more than STREAM_ROWS_MAX.
STREAM_MARGIN = 4
STREAM_ROWS_MAX = 50_000


def stream_rows(terms: Sequence[str], indexes: frozenset[int], shares: Mapping[str, float]) -> int:
    """How many of the newest messages the shared read may read for the terms at ``indexes``."""
    least = min((shares.get(word_lexeme(terms[index]) or "", 0.0) for index in indexes), default=0.0)
    if least <= 0:
        return STREAM_ROWS_MAX
    return min(STREAM_ROWS_MAX, math.ceil(STREAM_MARGIN * (SEARCH_COUNT_LIMIT + 1) / least))


def stream_sql(
    terms: Sequence[str],
    indexes: frozenset[int],
    dialect: Dialect,
    *,
    columns: str,
    where: str,
    where_params: list[Any],
    rows: int,
) -> tuple[str, list[Any]]:
    """The CTE ``nf``: the newest ``rows`` messages ``where`` admits, newest first, with a hit flag per term.

    ``columns``: the content branches' columns (``match.CONTENT_COLUMNS``) on message alias ``m``;
    ``nf`` has them, then ``h<index>`` for each term at ``indexes``.
    """
    flags, flag_params = [], []
    for index in sorted(indexes):
        test, needle = dialect.scan_matches("x.body", terms[index])
        flags.append(f"{test} AS h{index}")
        flag_params.append(needle)
    statement = (
        # Not the text itself: the CTE keeps its rows in memory, and would spill the decompressed text to disk.
        f"nf AS MATERIALIZED (SELECT {candidate_columns('x', term=False)}, {', '.join(flags)} FROM ("
        # content || '': the value decompressed once, for every term's test.
        f"SELECT {columns}, m.content || '' AS body FROM threadmem_message m WHERE {where} "
        "ORDER BY m.id DESC LIMIT %s) x)"
    )
    return statement, [*flag_params, *where_params, rows]


def term_branch(
    index: int,
    term: str,
    dialect: Dialect,
    *,
    columns: str,
    where: str,
    where_params: list[Any],
    limit: int,
) -> tuple[str, list[Any]]:
    """The term's content branch: its hits in ``nf`` in nf's order (newest first), then in older messages.

    The older read runs only when ``nf`` held fewer than ``limit`` hits (the
    outer LIMIT stops the ``UNION ALL`` before it), and only after nf was
    read to its end, so it starts below nf's oldest message.
    """
    test, needle = dialect.scan_matches("m.content", term)
    statement = (
        f"SELECT * FROM (SELECT {index} AS term, {candidate_columns('n', term=False)} FROM nf n WHERE n.h{index} "
        "UNION ALL "
        f"SELECT * FROM (SELECT {index} AS term, {columns} FROM threadmem_message m WHERE {where} "
        f"AND m.id < (SELECT min(o.message_id) FROM nf o) AND {test} ORDER BY m.id DESC LIMIT %s) older) s LIMIT %s"
    )
    return statement, [*where_params, needle, limit, limit]
