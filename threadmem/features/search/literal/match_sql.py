"""Which (term, field) pairs match: the match statement, as small rows newest first.

Each statement selects ids, metadata and a length bound per matching field;
text leaves the database only in the windows of small fields that could be
listed (``listing_sql.with_small_windows``). Which statements run, and each
term's branch, is the plan's choice (``plan.py``): this module writes the
statement of each of its steps (``match_statement``), deciding nothing and
running nothing. It takes the fragments every branch needs once per
statement (``Dialect.statement_sql``, ``filter_sql.statement_filters``),
writes one ``UNION ALL`` branch per term and field kind (``union_sql``), and
wraps them in the listing order; a global search's fallback reads the whole
query in the newest messages instead (``recent_sql``). The kinds, as
``plan.Branch`` names them:

* ``SCAN``: every row of the scope, a test no index serves; ``TRIGRAM``: the
  trigram index (``Dialect.matches``). A thread's terms take only these.
* A global scope's branches stop at SEARCH_COUNT_LIMIT + 1 rows, newest
  first, and may also be:
* ``TOKEN``: the fields the token index selects from exact posting lists,
  sorted newest first on their small columns, each re-checked literally
  until the limit (``token_branch``);
* ``NEWEST``: the content tested newest first with no index;
  ``SHARED_NEWEST``: one read of the newest messages (``nf``) shared by
  several common words, since decompressing them is most of the cost
  (``stream_sql``);
* ``WINDOW``: the owner's newest messages first (``ow``,
  ``filter_sql.window_sql``), every searchable message of the scope from some
  id on; the term's index branches then read only older messages, and only
  while the window holds at most SEARCH_COUNT_LIMIT of its hits.

Figures and reasons: docs/search.md ("The token index", "Common words share
one read", "An owner's window").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from threadmem.domain.scope import SearchScope
from threadmem.features.search.answer_caps import (
    GLOBAL_RECENT_BYTES,
    GLOBAL_RECENT_IDS,
    GLOBAL_RECENT_MESSAGES,
    SEARCH_COUNT_LIMIT,
)
from threadmem.features.search.database.capabilities import TOKEN_CANDIDATES
from threadmem.features.search.database.term_tokens import UNINDEXED_QUERY
from threadmem.features.search.hits import candidate_columns
from threadmem.features.search.literal.dialects import Dialect, StatementSql, TermSql, like_contains
from threadmem.features.search.literal.filter_sql import StatementFilters, statement_filters
from threadmem.features.search.literal.listing_sql import with_small_windows
from threadmem.features.search.literal.plan import Branch, SearchPlan, Step, TermPlan

Sql = tuple[str, list[Any]]


def match_statement(
    plan: SearchPlan,
    step: Step,
    *,
    spelled: Mapping[int, str] | None = None,
    start: tuple[int, int, int] | None = None,
    described_max_chars: int | None = None,
) -> Sql:
    """The statement of one of ``plan``'s steps (``match_sql``): its terms' branches, or, for a step without
    terms, the whole query in the newest messages."""
    newest = step.terms is None
    return match_sql(
        plan.scope,
        plan.terms[:1] if step.terms is None else step.terms,
        plan.dialect,
        newest=newest,
        spelled=spelled,
        start=start,
        described_max_chars=None if newest else described_max_chars,
    )


def match_sql(
    scope: SearchScope,
    planned: Sequence[TermPlan],
    dialect: Dialect,
    *,
    newest: bool = False,
    spelled: Mapping[int, str] | None = None,
    start: tuple[int, int, int] | None = None,
    described_max_chars: int | None = None,
) -> tuple[str, list[Any]]:
    """Every (term, field) match in the scope, each term's branches as its ``TermPlan.branch`` says (a scan
    reads the scope's rows, ``Dialect.scan_matches``; the others go through the indexes), in listing order with
    the small fields' windows. ``spelled``: as ``union_sql``.

    ``newest``: the fallback of a global search the indexes could not narrow in time: the whole query (``planned``
    holds its one term) in the newest messages (``recent_sql``), with no described cap (``described_max_chars``).
    """
    terms = [term.term for term in planned]
    sql = dialect.statement_sql(terms, narrow=not scope.is_global)
    window = not newest and any(term.branch == Branch.WINDOW for term in planned)
    filters = statement_filters(scope, dialect, window=window)
    if newest:
        matches, params = recent_sql(sql, filters)
    else:
        matches, params = union_sql(scope, planned, sql, filters, spelled=spelled)
    return with_small_windows(
        matches, params, terms, dialect, sql=sql, filters=filters, start=start, described_max_chars=described_max_chars
    )


CONTENT_COLUMNS = (
    "m.id AS message_id, 0 AS arg_id, '' AS path, {min_chars} AS min_chars, m.session_id, m.generation, m.role"
)
ARGUMENT_COLUMNS = (
    "a.message_id AS message_id, a.id AS arg_id, a.path AS path, {min_chars} AS min_chars, "
    "m.session_id, m.generation, m.role"
)
# Per field kind: the column matched, the columns selected, the rows read, the order a global branch stops in.
_FIELD_KINDS = (
    ("content", "m.content", CONTENT_COLUMNS, "FROM threadmem_message m", "m.id DESC"),
    (
        "argument",
        "a.value",
        ARGUMENT_COLUMNS,
        "FROM threadmem_toolargument a JOIN threadmem_message m ON m.id = a.message_id",
        "a.message_id DESC, a.id",
    ),
)


def union_sql(
    scope: SearchScope,
    planned: Sequence[TermPlan],
    sql: StatementSql,
    filters: StatementFilters,
    *,
    spelled: Mapping[int, str] | None,
) -> tuple[str, list[Any]]:
    """Every (term, field) branch of the plan, ``UNION ALL``, with the CTEs they read first (the module docstring
    names the kinds). ``spelled`` maps a term's index to the thread's spelling of it (``spellings``), tried in
    content before the regex."""
    limit = SEARCH_COUNT_LIMIT + 1 if scope.is_global else None
    searchable, searchable_params = filters.searchable
    scopes = {"content": filters.content, "argument": filters.argument}
    listed = {kind: columns.format(min_chars=sql.min_chars[column]) for kind, column, columns, *_ in _FIELD_KINDS}
    ctes = global_ctes(planned, sql, filters, listed["content"]) if scope.is_global else []
    selects: list[str] = []
    params: list[Any] = []
    for index, term in enumerate(planned):
        fragments = sql.terms[index]
        if term.branch == Branch.WINDOW:
            ctes += term_window_sql(index, fragments, **listed)
            selects.append(f"SELECT * FROM w{index}")
        for kind, column, _columns, rows, order in _FIELD_KINDS:
            where, where_params = scopes[kind]
            if term.branch == Branch.WINDOW:
                where = f"{where} AND {before_window_sql(index)}"
            if kind == "argument" and limit:
                bound = not_older_than_content_sql(index, indexed=term.branch != Branch.TOKEN)
                where = f"{where} AND {bound}"
            where, where_params = f"{where} AND {searchable}", [*where_params, *searchable_params]
            if term.branch == Branch.TOKEN:
                branch, branch_params = token_branch(
                    index, kind, term.query, fragments.scans[column], listed[kind], where, where_params, limit
                )
            elif kind == "content" and term.branch == Branch.SHARED_NEWEST:
                branch, branch_params = streamed_branch(index, fragments, listed[kind], where, where_params, limit)
            else:
                scanned = term.branch == Branch.SCAN or (kind == "content" and term.branch == Branch.NEWEST)
                match, pattern = fragments.scans[column] if scanned else fragments.matches[column]
                match_params = [pattern]
                if kind == "content" and spelled and index in spelled:
                    match = f"({column} LIKE %s OR {match})"
                    match_params = [like_contains(spelled[index]), *match_params]
                branch = f"SELECT {index} AS term, {listed[kind]} {rows} WHERE {where} AND {match}"
                branch_params = [*where_params, *match_params]
                if limit:
                    branch += f" ORDER BY {order} LIMIT %s"
                    branch_params.append(limit)
            if kind == "content" and limit:
                # A CTE: the term's argument branch reads where its content branch stopped.
                ctes.append((f"c{index} AS MATERIALIZED ({branch})", branch_params))
                selects.append(f"SELECT * FROM c{index}")
            else:
                selects.append(f"SELECT * FROM ({branch}) {kind[0]}{index}")
                params += branch_params
    matches = " UNION ALL ".join(selects)
    if ctes:
        matches = f"WITH {', '.join(cte for cte, _ in ctes)} {matches}"
        params = [*(param for _, cte_params in ctes for param in cte_params), *params]
    return matches, params


def not_older_than_content_sql(index: int, *, indexed: bool) -> str:
    """What a global term's argument branch adds to its WHERE: no message older than its content branch's last row
    once that branch reached the limit (a term lists its newest fields, a message's content before its arguments,
    so such an argument is never among them: a common word's argument branch stops where its content did).

    ``indexed``: the bound may narrow the trigram index's candidates through the (message id) index before their
    costly re-check; a token branch's exact, short posting list only filters by it (docs/search.md).
    """
    message_id = "a.message_id" if indexed else "(a.message_id + 0)"
    return (
        f"{message_id} >= coalesce((SELECT min(c.message_id) FROM c{index} c "
        f"HAVING count(*) > {SEARCH_COUNT_LIMIT}), 0)"
    )


# Older than every message when the window holds none.
_NO_WINDOW = 2**63 - 1
# Candidate's columns on the CTEs' aliases, the same for every statement.
_WINDOW_COLUMNS = candidate_columns("c")
_STREAM_COLUMNS = candidate_columns("x", term=False)
_STREAMED_COLUMNS = candidate_columns("n", term=False)


def global_ctes(planned: Sequence[TermPlan], sql: StatementSql, filters: StatementFilters, content: str) -> list[Sql]:
    """The CTEs a global statement's branches read first: the owner's window (``ow``) when a term reads it, the
    newest messages two or more common words share (``nf``). ``content``: the content branches' columns."""
    ctes = [filters.window] if filters.window is not None else []
    shared = [index for index, term in enumerate(planned) if term.branch == Branch.SHARED_NEWEST]
    if shared:
        where, where_params = filters.content
        searchable, searchable_params = filters.searchable
        scans = [sql.terms[index].scans["x.body"] for index in shared]
        where, where_params = f"{where} AND {searchable}", [*where_params, *searchable_params]
        ctes.append(stream_sql(shared, scans, content, where, where_params, planned[shared[0]].rows))
    return ctes


def token_branch(
    index: int,
    kind: str,
    query: str | None,
    recheck: tuple[str, Any],
    columns: str,
    where: str,
    where_params: list[Any],
    limit: int | None,
) -> Sql:
    """A term's ``TOKEN`` branch on field ``kind``: the fields the token index selects (``query``), in the scope
    (``where``), newest first, each re-checked literally (``recheck``: the scan's condition and its parameter)
    until ``limit``."""
    candidates, join, order = TOKEN_CANDIDATES[kind]
    test, needle = recheck
    branch = (
        f"SELECT {index} AS term, {columns} FROM ({candidates.format(where=where)}) k "
        f"{join} WHERE {test} ORDER BY {order} LIMIT %s"
    )
    return branch, [*where_params, query, UNINDEXED_QUERY, *where_params, needle, limit]


def stream_sql(
    indexes: Sequence[int], scans: Sequence[tuple[str, Any]], columns: str, where: str, where_params: list, rows: int
) -> Sql:
    """The CTE ``nf``: the newest ``rows`` messages ``where`` admits, newest first: the content branches'
    ``columns``, then a flag ``h<index>`` for each term at ``indexes`` (``scans``: its test on ``x.body``)."""
    flags = [f"{test} AS h{index}" for index, (test, _) in zip(indexes, scans, strict=True)]
    statement = (
        # Not the text itself: the CTE keeps its rows in memory, and would spill the decompressed text to disk.
        f"nf AS MATERIALIZED (SELECT {_STREAM_COLUMNS}, {', '.join(flags)} FROM ("
        # content || '': the value decompressed once, for every term's test.
        f"SELECT {columns}, m.content || '' AS body FROM threadmem_message m WHERE {where} "
        "ORDER BY m.id DESC LIMIT %s) x)"
    )
    return statement, [*(needle for _, needle in scans), *where_params, rows]


def streamed_branch(
    index: int, fragments: TermSql, columns: str, where: str, where_params: list[Any], limit: int | None
) -> Sql:
    """A shared word's content branch: its hits in ``nf``, newest first, then in older messages: that read runs
    only when ``nf`` held fewer than ``limit`` (the outer LIMIT stops the ``UNION ALL`` before it)."""
    test, needle = fragments.scans["m.content"]
    statement = (
        f"SELECT * FROM (SELECT {index} AS term, {_STREAMED_COLUMNS} FROM nf n WHERE n.h{index} "
        "UNION ALL "
        f"SELECT * FROM (SELECT {index} AS term, {columns} FROM threadmem_message m WHERE {where} "
        f"AND m.id < (SELECT min(o.message_id) FROM nf o) AND {test} ORDER BY m.id DESC LIMIT %s) older) s LIMIT %s"
    )
    return statement, [*where_params, needle, limit, limit]


def term_window_sql(index: int, fragments: TermSql, *, content: str, argument: str) -> list[Sql]:
    """The CTEs ``wc<index>`` and ``w<index>``: the term's newest hits in the window, in content, then content
    and arguments (``content``/``argument``: the columns each selects), newest first up to the limit; arguments
    only up to the content's last hit once it holds the limit (as ``not_older_than_content_sql``)."""
    in_content, content_needle = fragments.scans["m.content"]
    in_argument, argument_needle = fragments.scans["a.value"]
    limit = SEARCH_COUNT_LIMIT + 1
    in_window = (
        f"wc{index} AS MATERIALIZED (SELECT {index} AS term, {content}, m.rn FROM ow m WHERE {in_content} LIMIT %s)"
    )
    rows_read = f"(SELECT max(c.rn) FROM wc{index} c HAVING count(*) > {SEARCH_COUNT_LIMIT})"
    both = (
        f"w{index} AS MATERIALIZED ("
        f"SELECT {_WINDOW_COLUMNS} FROM wc{index} c "
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


def recent_sql(sql: StatementSql, filters: StatementFilters) -> Sql:
    """The fallback of a global search the index cannot narrow in time: the newest messages only.

    The whole query (not each word: the words are what made it too broad) in
    the scope's searchable messages among the newest GLOBAL_RECENT_IDS ids, up
    to GLOBAL_RECENT_BYTES of content or GLOBAL_RECENT_MESSAGES messages, and
    their tool arguments: a fixed amount of work whatever the terms.
    ``octet_length`` reads stored sizes without decompressing anything; the id
    range keeps a caller who owns a sliver of the store from sorting all of it.
    """
    searchable, searchable_params = filters.searchable
    in_scope, scope_params = filters.scope
    content_match, pattern = sql.terms[0].matches["m.content"]
    argument_match, _ = sql.terms[0].matches["a.value"]
    limit = SEARCH_COUNT_LIMIT + 1
    statement = (
        "WITH r AS MATERIALIZED (SELECT n.id, n.content, n.session_id, n.generation, n.role FROM ("
        "SELECT m.id, m.content, m.session_id, m.generation, m.role, "
        "sum(octet_length(m.content)) OVER (ORDER BY m.id DESC ROWS UNBOUNDED PRECEDING) AS seen "
        f"FROM threadmem_message m WHERE {in_scope} AND {searchable} "
        "AND m.id > (SELECT max(l.id) FROM threadmem_message l) - %s "
        "ORDER BY m.id DESC LIMIT %s"
        ") n WHERE n.seen - octet_length(n.content) < %s) "
        f"SELECT * FROM (SELECT 0 AS term, {CONTENT_COLUMNS.format(min_chars=sql.min_chars['m.content'])} "
        f"FROM r m WHERE {content_match} ORDER BY m.id DESC LIMIT %s) c0 "
        "UNION ALL "
        # LATERAL: each recent message's own arguments by index, not a scan of every argument.
        f"SELECT * FROM (SELECT 0 AS term, {ARGUMENT_COLUMNS.format(min_chars=sql.min_chars['a.value'])} "
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
    return statement, params
