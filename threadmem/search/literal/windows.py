"""The windows statement: each listable field's first position of a term and the window around it, cut by the database.

For the few fields that can be listed, in listing order until the listed
entries fill the literal cap: ``fields_to_window`` picks them, the statement
cuts them, ``walk_reach`` keeps what the walk reaches, all here, so a hit's
window is decided in one module. Only ``WINDOW_CHARS + 1`` characters of a field
ever leave the database. Skipped when the match statement cut every window the
listing needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from threadmem.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.lib.windows import Window, min_window_chars, window_from_slice
from threadmem.scope import SearchScope
from threadmem.search.bounded import (
    HEAD_MARK,
    TAIL_MARK,
    WINDOW_CHARS,
    WINDOW_LEAD,
    WindowKey,
)
from threadmem.search.entries import hit_header
from threadmem.search.hits import Candidate, Link, link_of
from threadmem.search.literal.dialects import Dialect
from threadmem.search.literal.filters import link_sql, searchable_sql


class WindowRow(NamedTuple):
    """One row of the windows statement."""

    ordinal: int  # the pair's place in the listing order
    position: int | None  # the term's first position in the field; 0 or None: it no longer matches
    piece: str | None  # the window's characters
    link_tool: str | list[str | None] | None  # the field's tool and other half (hits.link_of)
    link_ids: str | None
    link_arguments: str | None


def _pairs_values(pairs: Sequence[tuple[int, WindowKey]], terms: Sequence[str], dialect: Dialect) -> tuple[str, list]:
    rows = []
    params: list[Any] = []
    for ordinal, ((message_id, arg_id), term) in pairs:
        rows.append("(CAST(%s AS integer), CAST(%s AS bigint), CAST(%s AS bigint), CAST(%s AS text), CAST(%s AS text))")
        params += [ordinal, message_id, arg_id, dialect.pattern(terms[term]), dialect.needle(terms[term])]
    return ", ".join(rows), params


def window_sql_walk(
    pairs: Sequence[tuple[int, WindowKey]],
    terms: Sequence[str],
    costs: Sequence[int],
    *,
    budget: int,
    dialect: Dialect,
    scope: SearchScope,
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


def window_sql_all(
    pairs: Sequence[tuple[int, WindowKey]], terms: Sequence[str], dialect: Dialect, *, scope: SearchScope
) -> tuple[str, list[Any]]:
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


def window_at(position: int | None, piece: str | None) -> tuple[int, Window] | None:
    """(position, Window) from what the database cut, or None when the field no longer matches."""
    if not position:
        return None
    return position, window_from_slice(position=position, piece=piece, width=WINDOW_CHARS, lead=WINDOW_LEAD)


class Cut(NamedTuple):
    """What the windows statement (or the match statement before it) cut."""

    windows: dict[WindowKey, tuple[int, Window] | None]  # (field, term) -> (position, Window); None: no match
    links: dict[tuple[int, int], Link]  # field -> its tool and other half, for the fields with a window


def fields_to_window(candidates: list[Candidate], terms: list[str], *, budget: int) -> list[WindowKey]:
    """The (field, term) pairs whose windows the database must cut.

    Walks the candidates in listing order, adding the fewest characters each
    new field's entry could take, until not even that fits: no later candidate
    can be listed. A field seen before costs nothing in the walk (its later
    terms may merge into its window). For every walked field, every term that
    matched it is included, since its position decides whether that term's
    hit merges into a listed window.
    """
    used = 0
    walked: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    for candidate in candidates:
        key = candidate.field_key
        if key in seen:
            continue
        least = min_window_chars(
            field_chars_at_least=candidate.min_chars,
            term_chars=len(terms[candidate.term]),
            width=WINDOW_CHARS,
            lead=WINDOW_LEAD,
        )
        cost = len(hit_header(candidate)) + 1 + least + (1 if walked else 0)
        if used + cost > budget:
            break
        used += cost
        seen.add(key)
        walked.append(key)
    terms_by_field: dict[tuple[int, int], list[int]] = {key: [] for key in walked}
    for candidate in candidates:
        matched = terms_by_field.get(candidate.field_key)
        if matched is not None and candidate.term not in matched:
            matched.append(candidate.term)
    return [(key, term) for key in walked for term in terms_by_field[key]]


def cut_windows(
    candidates: Sequence[Candidate],
    terms: Sequence[str],
    *,
    budget: int,
    dialect: Dialect,
    scope: SearchScope,
    cut: Cut,
    seeds: Sequence[Candidate] = (),
) -> Cut:
    """(field, term) -> (position, Window), or None when the field no longer matches; and each field's link.

    Pairs the walk did not reach are absent: they cannot be listed. ``cut``
    holds what the match statement cut already (``match.with_small_windows``):
    when it has every pair, no statement runs. ``seeds`` (a later page's
    earlier candidates, ``bounded.literal_part``) add their pairs on the
    fields the walk reaches, first and at no cost.
    """
    walked = fields_to_window(list(candidates), list(terms), budget=budget)
    reached = {key for key, _ in walked}
    seeded = list(dict.fromkeys((seed.field_key, seed.term) for seed in seeds if seed.field_key in reached))
    pairs = list(enumerate([*seeded, *walked]))
    if not pairs:
        return Cut({}, {})
    first_candidate: dict[tuple[int, int], Candidate] = {}
    for candidate in candidates:
        first_candidate.setdefault(candidate.field_key, candidate)
    opened: set[tuple[int, int]] = set()
    costs = [-1] * len(seeded)
    for key, term in walked:
        opener = first_candidate[key]
        if key not in opened and term == opener.term:
            opened.add(key)
            costs.append(len(hit_header(opener)))
        else:
            costs.append(-1)
    if all(pair in cut.windows for _, pair in pairs):
        return Cut(walk_reach(pairs, costs, cut.windows, budget=budget), cut.links)
    cut_here: dict[WindowKey, tuple[int, Window] | None] = {}
    if dialect.vendor == "postgresql":
        statement, params = window_sql_walk(pairs, terms, costs, budget=budget, dialect=dialect, scope=scope)
    else:
        cut_here = {pair: None for _, pair in pairs}
        statement, params = window_sql_all(pairs, terms, dialect, scope=scope)
    links: dict[tuple[int, int], Link] = {}
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        for row in map(WindowRow._make, cursor.fetchall()):
            _, pair = pairs[row.ordinal]
            cut_here[pair] = window_at(row.position, row.piece)
            if row.position:
                links[pair[0]] = link_of(row.link_tool, row.link_ids, row.link_arguments)
    return Cut(walk_reach(pairs, costs, cut_here, budget=budget), links)


def walk_reach(
    pairs: Sequence[tuple[int, WindowKey]],
    costs: Sequence[int],
    windows: dict[WindowKey, tuple[int, Window] | None],
    *,
    budget: int,
) -> dict[WindowKey, tuple[int, Window] | None]:
    """The windows ``window_sql_walk`` would cut: the pairs up to where its running cost passes ``budget``.

    Whichever statement cut the windows (the match's small ones, SQLite's
    all), the listing then reaches the same hits: identical windows and one
    entry per call make entries cheaper than the walk counts them, so
    without this the listing would run on into windows only one path cut.
    """
    used = 0
    reached: dict[WindowKey, tuple[int, Window] | None] = {}
    for (_, pair), cost in zip(pairs, costs, strict=True):
        if used > budget:
            break
        if pair not in windows:
            continue
        computed = reached[pair] = windows[pair]
        if cost >= 0 and computed:
            used += cost + 1 + len(computed[1].render(head_mark=HEAD_MARK, tail_mark=TAIL_MARK))
    return reached
