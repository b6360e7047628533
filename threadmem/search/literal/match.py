"""Which (term, field) pairs match: the match statements, as small rows newest first.

Each statement selects ids, metadata and a length bound per matching field
(``MatchRow``); text leaves the database only in the windows of small fields
that could be listed (``with_small_windows``). Which statement runs, and each
term's branch, is the plan's choice (``plan.py``): this module writes it,
deciding nothing and running nothing. It takes the fragments every branch
needs once per statement (the dialect's, the scope's filters), writes the
union of the branches (``union_sql``: a thread's are all here, the global
scope's other kinds in ``branches.py``), and wraps it in the listing order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from threadmem.scope import SearchScope
from threadmem.search.bounded import SEARCH_COUNT_LIMIT, THREAD_LITERAL_MAX_CHARS, hit_header
from threadmem.search.hits import Candidate
from threadmem.search.literal import branches
from threadmem.search.literal.dialects import Dialect, StatementSql, like_contains
from threadmem.search.literal.filters import StatementFilters, statement_filters
from threadmem.search.literal.plan import Branch, TermPlan, index_term_plans


class MatchRow(NamedTuple):
    """One row of a match statement, in ``with_small_windows``'s column order."""

    term: int  # index into the query's terms
    message_id: int
    arg_id: int  # 0: the message content; else the ToolArgument id
    path: str
    min_chars: int | None
    session_id: str
    generation: int
    role: str
    position: int | None  # the term's first position (0: no longer matches); None: left to the windows statement
    piece: str | None  # the window's characters when position > 0
    link_tool: str | list[str | None] | None  # with a window: the tool and other half (hits.link_of)
    link_ids: str | None
    link_arguments: str | None

    def candidate(self) -> Candidate:
        return Candidate(
            term=self.term,
            message_id=self.message_id,
            arg_id=self.arg_id,
            path=self.path,
            min_chars=int(self.min_chars or 0),
            session_id=self.session_id,
            generation=self.generation,
            role=self.role,
        )


def match_rows(rows: Sequence[Sequence[Any]]) -> list[MatchRow]:
    return [MatchRow._make(row) for row in rows]


def index_match_sql(
    scope: SearchScope,
    terms: Sequence[str],
    dialect: Dialect,
    *,
    spelled: Mapping[int, str] | None = None,
    start: tuple[int, int, int] | None = None,
    window: bool = False,
    planned: Sequence[TermPlan] | None = None,
    described_max_chars: int | None = None,
) -> tuple[str, list[Any]]:
    """Every (term, field) match in the scope through the indexes, each term as ``planned`` says
    (default: ``plan.index_term_plans``, with the owner's window when ``window``).

    ``spelled`` maps a term's index to the thread's spelling of it
    (``spellings``), tried in content before the regex.
    """
    if planned is None:
        planned = index_term_plans(scope, terms, dialect, window=window)
    return _match_sql(scope, planned, dialect, spelled=spelled, start=start, described_max_chars=described_max_chars)


def scan_match_sql(
    scope: SearchScope,
    terms: Sequence[str],
    dialect: Dialect,
    *,
    start: tuple[int, int, int] | None = None,
    described_max_chars: int | None = None,
) -> tuple[str, list[Any]]:
    """Every (term, field) match in the scope by reading the scope's rows (``Dialect.scan_matches``)."""
    planned = [TermPlan(term, Branch.SCAN, "") for term in terms]
    return _match_sql(scope, planned, dialect, spelled=None, start=start, described_max_chars=described_max_chars)


def _match_sql(
    scope: SearchScope,
    planned: Sequence[TermPlan],
    dialect: Dialect,
    *,
    spelled: Mapping[int, str] | None,
    start: tuple[int, int, int] | None,
    described_max_chars: int | None = None,
) -> tuple[str, list[Any]]:
    """Every (term, field) match in the scope, each term's branches written as its ``TermPlan.branch`` says
    (``union_sql``), in listing order with the small fields' windows.

    The fragments every branch takes come once per statement: the dialect's
    (``Dialect.statement_sql``) and the filters (``statement_filters``).
    """
    terms = [term.term for term in planned]
    sql = dialect.statement_sql(terms, narrow=not scope.is_global)
    filters = statement_filters(scope, dialect)
    matches, params = union_sql(scope, planned, sql, filters, spelled=spelled)
    return with_small_windows(
        matches,
        params,
        terms,
        dialect,
        scope=scope,
        start=start,
        sql=sql,
        filters=filters,
        described_max_chars=described_max_chars,
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
    """Every (term, field) branch of the plan, ``UNION ALL``, with the CTEs they read first.

    One branch per term and field kind, one indexable condition evaluated
    once per row: ``SCAN`` and ``TRIGRAM`` are written here (``Dialect.scan_matches``,
    which no index serves, or ``Dialect.matches``), and in a thread they are
    all there is. The global scope's branches stop at SEARCH_COUNT_LIMIT + 1
    rows, newest first, a term's argument branch reading no message older
    than its content branch's last row; its other kinds (the token index,
    newest first, an owner's window) are ``branches.py``'s. ``spelled`` maps a
    term's index to the thread's spelling of it (``spellings``), tried in
    content before the regex.
    """
    limit = SEARCH_COUNT_LIMIT + 1 if scope.is_global else None
    searchable, searchable_params = filters.searchable
    scopes = {"content": filters.content, "argument": filters.argument}
    listed = {kind: columns.format(min_chars=sql.min_chars[column]) for kind, column, columns, *_ in _FIELD_KINDS}
    ctes = branches.global_ctes(scope, planned, sql, filters, listed["content"]) if scope.is_global else []
    selects: list[str] = []
    params: list[Any] = []
    for index, term in enumerate(planned):
        fragments = sql.terms[index]
        if term.branch == Branch.WINDOW:
            ctes += branches.term_window_sql(index, fragments, **listed)
            selects.append(f"SELECT * FROM w{index}")
        for kind, column, _columns, rows, order in _FIELD_KINDS:
            where, where_params = scopes[kind]
            if term.branch == Branch.WINDOW:
                where = f"{where} AND {branches.before_window_sql(index)}"
            if kind == "argument" and limit:
                bound = not_older_than_content_sql(index, indexed=term.branch != Branch.TOKEN)
                where = f"{where} AND {bound}"
            where, where_params = f"{where} AND {searchable}", [*where_params, *searchable_params]
            if term.branch == Branch.TOKEN:
                branch, branch_params = branches.token_branch(
                    index, kind, term.query, fragments.scans[column], listed[kind], where, where_params, limit
                )
            elif kind == "content" and term.branch == Branch.SHARED_NEWEST:
                branch, branch_params = branches.streamed_branch(
                    index, fragments, listed[kind], where, where_params, limit
                )
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
    when that branch reached the limit.

    A term lists its first SEARCH_COUNT_LIMIT + 1 fields, newest message first
    and a message's content before its arguments: once the content branch
    holds that many, an argument of an older message is never among them.
    A common word's argument branch then stops where its content did instead
    of reading arguments back until its own hundred-and-first hit.

    ``indexed``: the bound may narrow the trigram index's candidates through
    the (message id) index, before their costly re-check. A token branch's
    posting list is exact and short; ANDed with that range (tens of thousands
    of ids on a large store) it costs more than it saves, so there the bound
    only filters the candidates (docs/search.md).
    """
    message_id = "a.message_id" if indexed else "(a.message_id + 0)"
    return (
        f"{message_id} >= coalesce((SELECT min(c.message_id) FROM c{index} c "
        f"HAVING count(*) > {SEARCH_COUNT_LIMIT}), 0)"
    )


# A field this small (Dialect.min_chars) gets its window with the match
# (with_small_windows): on PostgreSQL at most 2 KB, stored in the row itself.
SMALL_FIELD_CHARS = 500
# The fewest characters of a hit's header line (message id, generation and
# session id of one character, no role, the shortest field name).
_HEADER_CHARS_AT_LEAST = len(
    hit_header(Candidate(term=0, message_id=0, arg_id=0, path="", min_chars=0, session_id="", generation=0, role=""))
)


def with_small_windows(
    matches: str,
    params: list[Any],
    terms: Sequence[str],
    dialect: Dialect,
    *,
    scope: SearchScope,
    start: tuple[int, int, int] | None = None,
    sql: StatementSql | None = None,
    filters: StatementFilters | None = None,
    described_max_chars: int | None = None,
) -> tuple[str, list[Any]]:
    """The rows of ``matches`` in listing order, with the window of each small field that could be listed.

    ``matches`` selects the match columns (``CONTENT_COLUMNS``); ``MatchRow`` names them all. Two columns
    follow them: the term's position in the field and the window's
    characters (``windows.windows``), or NULL for a row left to the windows
    statement. A row gets them when its field is small (``min_chars`` at most
    SMALL_FIELD_CHARS: on PostgreSQL 2 KB, text that sits in the row itself)
    and the entries before it in its term, each at the fewest characters
    ``fields_to_window`` could count for it, leave room under the literal
    cap: every field that walk can reach, and a few more. When every field
    the listing needs is such a field, as it is for most rare terms, the
    windows statement does not run: one statement less.
    A large field is left to that statement, which cuts in listing order and
    stops at the cap, instead of being read here on the chance of a listing.

    ``start``: a later page's cursor (``cursor.listing_key``): only rows from
    it on get windows, counted from it. Each row with a window also gets its
    tool and other half (``StatementFilters.links``). ``described_max_chars``: the
    cap of a described question's first page (``literal_search``), in force
    when no row matches the whole query (term 0): the windows it cannot list
    are not cut.
    """
    # ``sql``, ``filters``: the match statement's, else the same here (recent.py).
    sql = sql or dialect.statement_sql(terms, narrow=not scope.is_global)
    filters = filters or statement_filters(scope, dialect)
    cost = f"{_HEADER_CHARS_AT_LEAST} + {sql.least_window}"
    rows = ", ".join("(CAST(%s AS integer), CAST(%s AS text), CAST(%s AS text), CAST(%s AS integer))" for _ in terms)
    terms_params: list[Any] = []
    for index, term in enumerate(terms):
        terms_params += [index, sql.terms[index].pattern, sql.terms[index].needle, len(term)]
    after, after_params = "1 = 1", []
    if start is not None:
        term, negative_message_id, arg_id = start
        after = "(u.term > %s OR (u.term = %s AND (u.message_id < %s OR (u.message_id = %s AND u.arg_id >= %s))))"
        message_id = -negative_message_id
        after_params = [term, term, message_id, message_id, arg_id]
    links, links_params = filters.links
    # search_memory's filters, again on every candidate: the branches of the newest messages and an owner's
    # window do not apply them (a no-op "1 = 1" without filters).
    filtered, filtered_params = filters.candidates
    cap, cap_params, whole = "%s", [THREAD_LITERAL_MAX_CHARS], ""
    if described_max_chars is not None and start is None and len(terms) > 1:
        cap, cap_params = "CASE WHEN s.whole = 1 THEN %s ELSE %s END", [THREAD_LITERAL_MAX_CHARS, described_max_chars]
        whole = ", max(CASE WHEN u.term = 0 THEN 1 ELSE 0 END) OVER () AS whole"
    body = (
        "CASE WHEN s.arg_id = 0 THEN (SELECT m.content FROM threadmem_message m WHERE m.id = s.message_id) "
        "ELSE (SELECT a.value FROM threadmem_toolargument a WHERE a.id = s.arg_id) END"
    )
    statement = (
        f"WITH t(term, pattern, needle, length) AS (VALUES {rows}) "
        "SELECT w.term, w.message_id, w.arg_id, w.path, w.min_chars, w.session_id, w.generation, w.role, w.pos, "
        f"CASE WHEN w.pos > 0 THEN {sql.window} END, "
        f"{links} "
        "FROM ("
        "SELECT v.*, "
        f"CASE WHEN v.body IS NOT NULL THEN {sql.position} END AS pos "
        "FROM ("
        f"SELECT s.*, CASE WHEN s.min_chars <= %s AND s.before < {cap} AND s.after = 1 THEN {body} || '' END AS body "
        "FROM ("
        "SELECT u.*, t.pattern, t.needle, "
        f"sum(CASE WHEN {after} THEN {cost} ELSE 0 END) OVER (PARTITION BY u.term ORDER BY u.message_id DESC, "
        f"u.arg_id ROWS UNBOUNDED PRECEDING) - CASE WHEN {after} THEN {cost} ELSE 0 END AS before, "
        f"CASE WHEN {after} THEN 1 ELSE 0 END AS after{whole} "
        f"FROM ({matches}) u JOIN t ON t.term = u.term WHERE {filtered}"
        f") s {dialect.fence}) v {dialect.fence}) w "
        "ORDER BY w.term, w.message_id DESC, w.arg_id"
    )
    return statement, [
        *terms_params,
        *links_params,
        SMALL_FIELD_CHARS,
        *cap_params,
        *after_params * 3,
        *params,
        *filtered_params,
    ]
