"""A large thread's spelling of the terms: what the trigram index path tries before the regex, without
threadmem_search (``MatchPlan.SPELLED_INDEX``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from threadmem.features.search.literal.plan import SearchPlan
from threadmem.features.search.shared_sql import searchable_sql


def spellings_sql(plan: SearchPlan) -> tuple[str, list[Any]] | None:
    """PostgreSQL: the statement that reads how the thread's newest content spells each ASCII term (``spellings``
    reads its rows) for a plan that learns them (``MatchPlan.SPELLED_INDEX``); None when no term has one to learn.

    The index path re-checks every candidate row with the regex, which reads
    the whole field: when a term fills a
    large thread (the keyword in every tool result of the stress thread, or
    a word common across the store), that re-check is the whole cost. A term
    that the newest ``sample_bytes`` (``SearchTuning.spelling_sample_bytes``) of the thread mention is
    likely to be such a term, and to be spelled the same way elsewhere:
    ``match_sql`` then tries that spelling with a case-sensitive ``LIKE``
    before the regex, which decides a row so spelled at its first occurrence.
    Rows spelled otherwise still get the regex, so the answer is the same;
    only the cost moves. With both patterns as constants the planner picks
    between a scan of the thread and a ``BitmapOr`` of the two over the
    trigram index (docs/search.md has the figures, the worst case included).

    One statement for all terms, over the newest messages of the current
    thread (its ancestry's are older), each cut to the sample's size, with
    ``Dialect.needle``'s ASCII-only lowering and ``strpos``: cheaper than the
    regex on text that does not match.
    """
    scope, terms, sample_bytes = plan.scope, [term.term for term in plan.terms], plan.tuning.spelling_sample_bytes
    wanted = [
        (index, needle, len(term))
        for index, term in enumerate(terms)
        if (needle := plan.dialect.needle(term)) is not None
    ]
    if not wanted or not sample_bytes:
        return None
    searchable, searchable_params = searchable_sql("m")
    statement = (
        "WITH sample AS MATERIALIZED (SELECT CASE WHEN octet_length(n.content) > %s "
        "THEN left(n.content, %s) ELSE n.content END AS body FROM ("
        "SELECT m.content, sum(octet_length(m.content)) OVER (ORDER BY m.seq DESC) AS seen "
        f"FROM threadmem_message m WHERE m.thread_id = %s AND {searchable} ORDER BY m.seq DESC LIMIT 64"
        ") n WHERE n.seen - octet_length(n.content) < %s) "
        "SELECT t.term, (SELECT substr(s.body, f.pos, t.length) FROM sample s "
        'CROSS JOIN LATERAL (SELECT strpos(lower(s.body COLLATE "C"), t.needle) AS pos OFFSET 0) f '
        "WHERE f.pos > 0 LIMIT 1) "
        "FROM unnest(CAST(%s AS integer[]), CAST(%s AS text[]), CAST(%s AS integer[])) AS t(term, needle, length)"
    )
    budget = sample_bytes
    params = [
        budget,
        budget,
        scope.thread_id,
        *searchable_params,
        budget,
        *(list(column) for column in zip(*wanted, strict=True)),
    ]
    return statement, params


def spellings(rows: Iterable[Sequence[Any]]) -> dict[int, str]:
    """The spellings statement's rows: each term found in the sample, by index, as the thread spells it."""
    return {term: spelled for term, spelled in rows if spelled}
