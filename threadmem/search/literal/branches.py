"""The global scope's own branches of the match statement, as the plan names them, deciding nothing.

``match.union_sql`` writes one ``UNION ALL`` branch per term and field kind,
the ``SCAN`` and ``TRIGRAM`` ones itself; a global search's terms may take
these others, written here from the fragments the statement computed once
(``dialects.StatementSql``, ``filters.StatementFilters``). Each stops at
SEARCH_COUNT_LIMIT + 1 rows, newest first.

* ``TOKEN``: the token index (``search/database.py``, ``lib/tokens.py``)
  selects every field that can hold the term, from exact posting lists. The
  branch sorts those fields' ids, newest first, reading only the rows' small
  columns (the scope and searchability), and re-checks the text literally one
  field at a time until the limit: a term in thousands of fields reads about
  a hundred of them, not all.
* ``NEWEST``: the content branch tests each field with
  ``Dialect.scan_matches``, so that it reads newest first until the limit.
  ``SHARED_NEWEST``: ``connection refused`` asks for the phrase and for each
  word, so two such branches would read the same newest rows, and
  decompressing them is most of what each costs
  (docs/search.md, "Common words share one read"). One CTE (``nf``) reads the plan's rows of the
  newest messages once and tests every such word in it; each word takes its
  hits from it, then goes on in older messages while it lacks hits.
* ``WINDOW``: an owner's newest messages come from the (thread, id) index:
  the newest ``OWNER_WINDOW_MESSAGES`` of each thread, the newest of those
  overall, up to ``OWNER_WINDOW_BYTES`` of content. That window is every
  searchable message of the scope from some id on, so a term's hits in it are
  its newest hits; its index branches then read only older messages, and run
  only while the window holds at most SEARCH_COUNT_LIMIT of its hits (a
  one-time filter: PostgreSQL skips the branch otherwise). Figures:
  docs/search.md, "An owner's window".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from threadmem.scope import SearchScope
from threadmem.search.bounded import SEARCH_COUNT_LIMIT
from threadmem.search.database import UNINDEXED_QUERY
from threadmem.search.hits import candidate_columns
from threadmem.search.literal.dialects import StatementSql, TermSql
from threadmem.search.literal.filters import StatementFilters, searchable_sql
from threadmem.search.literal.plan import Branch, TermPlan

# Enough for a word in a fifth of the window to pass SEARCH_COUNT_LIMIT hits,
# cheap enough for a rare one (docs/search.md, "An owner's window").
OWNER_WINDOW_MESSAGES = 1_000
OWNER_WINDOW_BYTES = 4_000_000
# Older than every message when the window holds none.
_NO_WINDOW = 2**63 - 1
# Candidate's columns on the CTEs' aliases, the same for every statement.
_WINDOW_COLUMNS = candidate_columns("c")
_STREAM_COLUMNS = candidate_columns("x", term=False)
_STREAMED_COLUMNS = candidate_columns("n", term=False)

# Per field kind, a token branch's candidates (ids in listing order, read from the index and the rows' small
# columns), the join back to the row, the order. The candidates are the fields whose lexemes the term asks for,
# in the scope, then (UNION ALL) the fields too large to index, found alone and only then held to the scope: the
# unindexed lexeme has no statistics, and ORed into the term's query it would make every term look common to the
# planner. The fence (OFFSET 0) keeps the scope out of the unindexed fields' index scan, and each argument of
# theirs finds its message by id (docs/search.md, "The token index").
_TOKEN_KINDS = {
    "content": (
        "SELECT u.id FROM ("
        "SELECT m.id FROM threadmem_message m WHERE {where} AND threadmem_tokens(m.content) @@ CAST(%s AS tsquery) "
        "UNION ALL SELECT m.id FROM (SELECT * FROM threadmem_message x "
        "WHERE threadmem_tokens(x.content) @@ CAST(%s AS tsquery) OFFSET 0) m WHERE {where}"
        ") u ORDER BY u.id DESC OFFSET 0",
        "JOIN threadmem_message m ON m.id = k.id",
        "k.id DESC",
    ),
    "argument": (
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

Sql = tuple[str, list[Any]]


def global_ctes(
    scope: SearchScope, planned: Sequence[TermPlan], sql: StatementSql, filters: StatementFilters, content: str
) -> list[Sql]:
    """The CTEs a global statement's branches read first: the owner's window (``ow``) when a term reads it, the
    newest messages two or more common words share (``nf``). ``content``: the content branches' columns."""
    ctes = [window_sql(scope)] if any(term.branch == Branch.WINDOW for term in planned) else []
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
    candidates, join, order = _TOKEN_KINDS[kind]
    test, needle = recheck
    branch = (
        f"SELECT {index} AS term, {columns} FROM ({candidates.format(where=where)}) k "
        f"{join} WHERE {test} ORDER BY {order} LIMIT %s"
    )
    return branch, [*where_params, query, UNINDEXED_QUERY, *where_params, needle, limit]


def stream_sql(
    indexes: Sequence[int], scans: Sequence[tuple[str, Any]], columns: str, where: str, where_params: list, rows: int
) -> Sql:
    """The CTE ``nf``: the newest ``rows`` messages ``where`` admits, newest first, with a hit flag per term.

    ``columns``: the content branches' columns on message alias ``m``; ``nf``
    has them, then ``h<index>`` for each term at ``indexes`` (``scans``: its
    test on ``x.body``).
    """
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
    """A shared word's content branch: its hits in ``nf`` in nf's order (newest first), then in older messages.

    The older read runs only when ``nf`` held fewer than ``limit`` hits (the
    outer LIMIT stops the ``UNION ALL`` before it), and only after nf was
    read to its end, so it starts below nf's oldest message.
    """
    test, needle = fragments.scans["m.content"]
    statement = (
        f"SELECT * FROM (SELECT {index} AS term, {_STREAMED_COLUMNS} FROM nf n WHERE n.h{index} "
        "UNION ALL "
        f"SELECT * FROM (SELECT {index} AS term, {columns} FROM threadmem_message m WHERE {where} "
        f"AND m.id < (SELECT min(o.message_id) FROM nf o) AND {test} ORDER BY m.id DESC LIMIT %s) older) s LIMIT %s"
    )
    return statement, [*where_params, needle, limit, limit]


def window_sql(scope: SearchScope) -> Sql:
    """The CTE ``ow``: the owner's newest searchable messages, newest first, up to the window's caps.

    Its rows come out newest first as they are fetched (the ids sorted first,
    each row then joined in that order), and PostgreSQL runs a CTE only as far
    as its readers ask: a term that finds its hits in the first rows fetches
    only those. ``rn`` numbers them.
    """
    condition, searchable_params = searchable_sql("m")
    statement = (
        "ow AS MATERIALIZED (SELECT n.id, n.content, n.session_id, n.generation, n.role, n.rn FROM ("
        "SELECT m.id, m.content, m.session_id, m.generation, m.role, "
        "row_number() OVER (ORDER BY x.id DESC) AS rn, "
        "sum(octet_length(m.content)) OVER (ORDER BY x.id DESC ROWS UNBOUNDED PRECEDING) AS seen FROM ("
        "SELECT x.id FROM unnest(CAST(%s AS bigint[])) t(id) CROSS JOIN LATERAL "
        "(SELECT i.id FROM threadmem_message i WHERE i.thread_id = t.id ORDER BY i.id DESC LIMIT %s) x "
        f"ORDER BY x.id DESC LIMIT %s) x JOIN threadmem_message m ON m.id = x.id WHERE {condition}"
        ") n WHERE n.seen - octet_length(n.content) < %s)"
    )
    threads = list(scope.readable_thread_ids or ())
    return statement, [threads, OWNER_WINDOW_MESSAGES, OWNER_WINDOW_MESSAGES, *searchable_params, OWNER_WINDOW_BYTES]


def term_window_sql(index: int, fragments: TermSql, *, content: str, argument: str) -> list[Sql]:
    """The CTEs ``wc<index>`` and ``w<index>``: the term's newest hits in the window, in content, then content
    and arguments (``content``/``argument``: the columns each selects).

    Both read the window in its order, newest first, and stop at the limit.
    Arguments are read only in the rows up to the content's last hit once
    the content holds the limit: an argument of an older message (or of
    that one: its content comes first) is never among the term's first
    SEARCH_COUNT_LIMIT + 1 fields (as ``match.not_older_than_content_sql``).
    """
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
