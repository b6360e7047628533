"""The global scope's token branches: a term's fields found in the token index, re-checked newest first.

The token index (``search/database.py``, ``threadmem/lib/tokens.py``) selects every
field that can hold the term, from exact posting lists. The branch sorts
those fields' ids, newest first, reading only the rows' small columns (the
scope and searchability), and re-checks the text literally one field at a
time until SEARCH_COUNT_LIMIT + 1 match: a term in thousands of fields reads
about a hundred of them, not all. ``Dialect.scan_matches`` re-checks: a
function no trigram index serves.
"""

from __future__ import annotations

import math
import time
from typing import Any

from django.db import connection

from threadmem.lib.tokens import UNINDEXED_QUERY, token_query, word_lexeme
from threadmem.search.bounded import SEARCH_COUNT_LIMIT
from threadmem.search.literal.dialects import Dialect


def token_terms(terms: list[str] | tuple[str, ...], dialect: Dialect) -> dict[int, str]:
    """The terms the token index can narrow, by index: their tsquery (none without the index)."""
    if not dialect.has_tokens:
        return {}
    return {index: query for index, term in enumerate(terms) if (query := token_query(term)) is not None}


# How long a connection keeps the index statistics it read (common_words):
# they change only when ANALYZE runs, after large batches.
COMMON_WORDS_SECONDS = 60.0
_COMMON_WORDS_SQL = (
    "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, "
    "(SELECT c.reltuples FROM pg_class c WHERE c.oid = to_regclass('threadmem_message')) "
    "FROM pg_stats s WHERE s.schemaname = current_schema() AND s.tablename = 'message_content_tokens'"
)


def common_words() -> dict[str, float]:
    """The lexemes of the content token index held by so many fields that reading newest first wins, with
    their shares of the fields.

    A word in a share ``f`` of N fields costs the newest-first read about
    (SEARCH_COUNT_LIMIT + 1) / f fields and the index about f * N of them to
    re-check and sort, so reading newest first costs less from
    f = sqrt((SEARCH_COUNT_LIMIT + 1) / N). The shares come from the
    statistics ANALYZE keeps of the index's expression (PostgreSQL's most
    common elements of a tsvector). Read once per COMMON_WORDS_SECONDS per
    connection.
    """
    cached = getattr(connection, "threadmem_common_words", None)
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    # On the driver's cursor, as the capabilities' probe: a catalogue read once a minute, not a search's statement.
    connection.ensure_connection()
    with connection.connection.cursor() as cursor:
        cursor.execute(_COMMON_WORDS_SQL)
        found = cursor.fetchone()
    words: dict[str, float] = {}
    if found is not None and found[0] and found[2] and found[2] > 0:
        lexemes, shares, fields = found
        least = math.sqrt((SEARCH_COUNT_LIMIT + 1) / fields)
        words = {lexeme: share for lexeme, share in zip(lexemes, shares, strict=False) if share >= least}
    connection.threadmem_common_words = (time.monotonic() + COMMON_WORDS_SECONDS, words)
    return words


def forget_common_words() -> None:
    """Read the index statistics again at the next search (after ANALYZE; ``database.forget_probe`` also does)."""
    connection.threadmem_common_words = None


def newest_first_terms(terms: list[str] | tuple[str, ...], dialect: Dialect) -> frozenset[int]:
    """The terms whose global content branch reads newest first, with no index: words the statistics call common.

    The trigram index's estimate of a word comes from the column's histogram,
    which holds short fields only, so it underestimates a word common in long
    ones and the planner reads all of its posting list. The token index's
    statistics count whole words in every field: a floor on the term's share.
    Tool arguments are short, so their histogram estimates well; there the
    planner's choice costs less than reading newest first (docs/search.md, "The token index").
    """
    if not dialect.has_tokens:
        return frozenset()
    lexemes = {index: lexeme for index, term in enumerate(terms) if (lexeme := word_lexeme(term)) is not None}
    if not lexemes:
        return frozenset()
    common = common_words()
    return frozenset(index for index, lexeme in lexemes.items() if lexeme in common)


# Per field kind: the column, the candidates (ids in listing order, read from
# the index and the rows' small columns), the join back to the row, the order.
# The candidates are the fields whose lexemes the term asks for, in the scope,
# then (UNION ALL) the fields too large to index, found alone and only then
# held to the scope: the unindexed lexeme has no statistics, and ORed into the
# term's query it would make every term look common to the planner. The fence
# (OFFSET 0) keeps the scope out of the unindexed fields' index scan, and each
# argument of theirs finds its message by id (docs/search.md, "The token index").
_KINDS = {
    "content": (
        "m.content",
        "SELECT u.id FROM ("
        "SELECT m.id FROM threadmem_message m WHERE {where} AND threadmem_tokens(m.content) @@ CAST(%s AS tsquery) "
        "UNION ALL SELECT m.id FROM (SELECT * FROM threadmem_message x "
        "WHERE threadmem_tokens(x.content) @@ CAST(%s AS tsquery) OFFSET 0) m WHERE {where}"
        ") u ORDER BY u.id DESC OFFSET 0",
        "JOIN threadmem_message m ON m.id = k.id",
        "k.id DESC",
    ),
    "argument": (
        "a.value",
        "SELECT u.id, u.message_id FROM ("
        "SELECT a.id, a.message_id FROM threadmem_toolargument a JOIN threadmem_message m ON m.id = a.message_id "
        "WHERE {where} AND threadmem_tokens(a.value) @@ CAST(%s AS tsquery) "
        "UNION ALL SELECT a.id, a.message_id FROM (SELECT * FROM threadmem_toolargument x "
        "WHERE threadmem_tokens(x.value) @@ CAST(%s AS tsquery) OFFSET 0) a "
        "CROSS JOIN LATERAL (SELECT * FROM threadmem_message y WHERE y.id = a.message_id OFFSET 0) m WHERE {where}"
        ") u ORDER BY u.message_id DESC, u.id OFFSET 0",
        "JOIN threadmem_toolargument a ON a.id = k.id JOIN threadmem_message m ON m.id = k.message_id",
        "k.message_id DESC, k.id",
    ),
}


def token_branch(
    kind: str,
    index: int,
    term: str,
    query: str,
    dialect: Dialect,
    *,
    columns: str,
    where: str,
    where_params: list[Any],
    limit: int,
) -> tuple[str, list[Any]]:
    """The newest ``limit`` fields of ``kind`` ("content" or "argument") holding ``term`` among those ``where`` admits.

    ``where``: the scope and searchability, on message alias ``m`` (and argument alias ``a``).
    """
    column, candidates, join, order = _KINDS[kind]
    recheck, needle = dialect.scan_matches(column, term)
    statement = (
        f"SELECT {index} AS term, {columns} FROM ({candidates.format(where=where)}) k "
        f"{join} WHERE {recheck} ORDER BY {order} LIMIT %s"
    )
    return statement, [*where_params, query, UNINDEXED_QUERY, *where_params, needle, limit]
