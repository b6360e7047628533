"""The fallback of a global search the indexes cannot narrow in time: the query in the newest messages only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from threadmem.domain.scope import SearchScope
from threadmem.features.search.answer_caps import (
    GLOBAL_RECENT_BYTES,
    GLOBAL_RECENT_IDS,
    GLOBAL_RECENT_MESSAGES,
    SEARCH_COUNT_LIMIT,
)
from threadmem.features.search.literal.dialects import Dialect
from threadmem.features.search.literal.filter_sql import scope_sql
from threadmem.features.search.literal.match_sql import ARGUMENT_COLUMNS, CONTENT_COLUMNS, with_small_windows
from threadmem.features.search.shared_sql import searchable_sql


def recent_match_sql(
    scope: SearchScope, terms: Sequence[str], dialect: Dialect, *, start: tuple[int, int, int] | None = None
) -> tuple[str, list[Any]]:
    """The fallback of a global search the index cannot narrow in time: the newest messages only.

    The whole query (not each word: the words are what made it too broad) in
    the scope's searchable messages among the newest GLOBAL_RECENT_IDS ids, up
    to GLOBAL_RECENT_BYTES of content or GLOBAL_RECENT_MESSAGES messages, and
    their tool arguments: a fixed amount of work whatever the terms.
    ``octet_length`` reads stored sizes without decompressing anything; the id
    range keeps a caller who owns a sliver of the store from sorting all of it.
    """
    searchable, searchable_params = searchable_sql("m")
    in_scope, scope_params = scope_sql(scope, dialect, message="m")
    content_match, pattern = dialect.matches("m.content", terms[0])
    argument_match, _ = dialect.matches("a.value", terms[0])
    limit = SEARCH_COUNT_LIMIT + 1
    statement = (
        "WITH r AS MATERIALIZED (SELECT n.id, n.content, n.session_id, n.generation, n.role FROM ("
        "SELECT m.id, m.content, m.session_id, m.generation, m.role, "
        "sum(octet_length(m.content)) OVER (ORDER BY m.id DESC ROWS UNBOUNDED PRECEDING) AS seen "
        f"FROM threadmem_message m WHERE {in_scope} AND {searchable} "
        "AND m.id > (SELECT max(l.id) FROM threadmem_message l) - %s "
        "ORDER BY m.id DESC LIMIT %s"
        ") n WHERE n.seen - octet_length(n.content) < %s) "
        f"SELECT * FROM (SELECT 0 AS term, {CONTENT_COLUMNS.format(min_chars=dialect.min_chars('m.content'))} "
        f"FROM r m WHERE {content_match} ORDER BY m.id DESC LIMIT %s) c0 "
        "UNION ALL "
        # LATERAL: each recent message's own arguments by index, not a scan of every argument.
        f"SELECT * FROM (SELECT 0 AS term, {ARGUMENT_COLUMNS.format(min_chars=dialect.min_chars('a.value'))} "
        "FROM r m CROSS JOIN LATERAL (SELECT * FROM threadmem_toolargument x WHERE x.message_id = m.id OFFSET 0) a "
        f"WHERE {argument_match} ORDER BY a.message_id DESC, a.id LIMIT %s) a0"
    )
    params = [
        *scope_params,
        *searchable_params,
        GLOBAL_RECENT_IDS,
        GLOBAL_RECENT_MESSAGES,
        GLOBAL_RECENT_BYTES,
        pattern,
        limit,
        pattern,
        limit,
    ]
    return with_small_windows(statement, params, terms[:1], dialect, scope=scope, start=start)
