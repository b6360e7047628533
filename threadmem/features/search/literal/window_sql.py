"""The windows statement: each listable field's first position of a term and the window around it, cut by the
database, for the pairs the listing's walk reaches (``window_walk.window_pairs``: the pairs and their costs, as
data). PostgreSQL stops where the entries fill the budget; SQLite cuts every pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from threadmem.domain.scope import SearchScope
from threadmem.features.search.answer_caps import TAIL_MARK, WINDOW_CHARS, WINDOW_LEAD
from threadmem.features.search.hits import WindowKey
from threadmem.features.search.literal.dialects import Dialect
from threadmem.features.search.literal.filter_sql import link_sql
from threadmem.features.search.shared_sql import searchable_sql

# The pairs the walk reaches, in listing order: (ordinal, (the field's message and argument ids, the term's index)).
Pairs = Sequence[tuple[int, WindowKey]]


def _pairs_values(pairs: Pairs, terms: Sequence[str], dialect: Dialect) -> tuple[str, list]:
    rows = []
    params: list[Any] = []
    for ordinal, ((message_id, arg_id), term) in pairs:
        rows.append("(CAST(%s AS integer), CAST(%s AS bigint), CAST(%s AS bigint), CAST(%s AS text), CAST(%s AS text))")
        params += [ordinal, message_id, arg_id, dialect.pattern(terms[term]), dialect.needle(terms[term])]
    return ", ".join(rows), params


def window_sql(
    pairs: Pairs, terms: Sequence[str], costs: Sequence[int], *, budget: int, dialect: Dialect, scope: SearchScope
) -> tuple[str, list[Any]]:
    """The windows statement of ``pairs``: PostgreSQL's walk to the budget, SQLite's every pair."""
    if dialect.vendor == "postgresql":
        return _walk_sql(pairs, terms, costs, budget, dialect, scope)
    return _every_pair_sql(pairs, terms, dialect, scope)


def _walk_sql(
    pairs: Pairs, terms: Sequence[str], costs: Sequence[int], budget: int, dialect: Dialect, scope: SearchScope
) -> tuple[str, list[Any]]:
    """PostgreSQL: cut windows in listing order and stop once the listed entries fill the budget.

    A recursive walk over the pairs: each step reads one field once (``|| ''``
    detoasts it a single time for both the position and the cut), and adds the
    entry's length when the pair opens its field's first entry (``costs`` holds
    that entry's header length, or -1 for a pair that opens nothing). Entries
    of later terms on a field already seen count as nothing here, so the walk
    may cut a few windows more than get listed, never fewer, and far fewer
    than a fixed bound would (docs/search.md).
    """
    rows = []
    params: list[Any] = []
    for (ordinal, ((message_id, arg_id), term)), cost in zip(pairs, costs, strict=True):
        rows.append(
            "(CAST(%s AS integer), CAST(%s AS bigint), CAST(%s AS bigint), CAST(%s AS text), CAST(%s AS text), "
            "CAST(%s AS integer))"
        )
        params += [ordinal, message_id, arg_id, dialect.pattern(terms[term]), dialect.needle(terms[term]), cost]
    searchable, searchable_params = searchable_sql("m")
    links, links_params = link_sql(scope, dialect, message_id="p.message_id", arg_id="p.arg_id", when="w.pos > 0")
    lead, width, tail = WINDOW_LEAD, WINDOW_CHARS, len(TAIL_MARK)
    statement = (
        f"WITH RECURSIVE p(ord, message_id, arg_id, pattern, needle, hdr) AS (VALUES {', '.join(rows)}), "
        "w(ord, pos, piece, used) AS ("
        "SELECT -1, CAST(NULL AS integer), CAST(NULL AS text), 0 "
        "UNION ALL "
        "SELECT p.ord, x.pos, x.piece, w.used + CASE WHEN p.hdr >= 0 AND x.pos > 0 THEN "
        f"p.hdr + 1 + char_length(left(x.piece, {width})) + CASE WHEN x.pos > {lead + 1} THEN 1 ELSE 0 END "
        f"+ CASE WHEN char_length(x.piece) > {width} THEN {tail} ELSE 0 END ELSE 0 END "
        "FROM w JOIN p ON p.ord = w.ord + 1 CROSS JOIN LATERAL ("
        f"SELECT y.pos, {dialect.window('y.body', 'y.pos', 'p.needle')} AS piece FROM ("
        f"SELECT b.body, {dialect.position('b.body', 'p.pattern', 'p.needle')} AS pos FROM ("
        "SELECT (CASE WHEN p.arg_id = 0 "
        f"THEN (SELECT m.content FROM threadmem_message m WHERE m.id = p.message_id AND {searchable}) "
        "ELSE (SELECT a.value FROM threadmem_toolargument a JOIN threadmem_message m ON m.id = a.message_id "
        f"WHERE a.id = p.arg_id AND {searchable}) END) || '' AS body OFFSET 0"
        ") b OFFSET 0) y OFFSET 0) x "
        "WHERE w.used <= %s"
        ") "
        f"SELECT w.ord, w.pos, w.piece, {links} FROM w JOIN p ON p.ord = w.ord"
    )
    return statement, [*params, *searchable_params, *searchable_params, budget, *links_params]


def _every_pair_sql(pairs: Pairs, terms: Sequence[str], dialect: Dialect, scope: SearchScope) -> tuple[str, list[Any]]:
    """SQLite: cut the windows of every pair (a file database on a laptop; no walk needed)."""
    values, params = _pairs_values(pairs, terms, dialect)
    searchable, searchable_params = searchable_sql("m")
    links, links_params = link_sql(scope, dialect, message_id="s.message_id", arg_id="s.arg_id", when="s.pos > 0")
    statement = (
        f"WITH p(ord, message_id, arg_id, pattern, needle) AS (VALUES {values}), "
        "s AS MATERIALIZED ("
        "SELECT p.ord AS ord, p.message_id AS message_id, p.arg_id AS arg_id, m.content AS body, "
        f"{dialect.position('m.content', 'p.pattern', 'p.needle')} AS pos "
        f"FROM p JOIN threadmem_message m ON m.id = p.message_id WHERE p.arg_id = 0 AND {searchable} "
        "UNION ALL "
        f"SELECT p.ord, p.message_id, p.arg_id, a.value, {dialect.position('a.value', 'p.pattern', 'p.needle')} "
        "FROM p JOIN threadmem_toolargument a ON a.id = p.arg_id JOIN threadmem_message m ON m.id = a.message_id "
        f"WHERE p.arg_id <> 0 AND {searchable}"
        ") "
        f"SELECT s.ord, s.pos, {dialect.window('s.body', 's.pos', 'NULL')}, {links} FROM s"
    )
    return statement, [*params, *searchable_params, *searchable_params, *links_params]
