"""The literal part of search_memory: at most two SQL statements, whatever the number of hits.

(Three in a thread too large to scan on PostgreSQL: without threadmem_search
``spellings`` first; with it, a scan after an index path that ran out of time.)

1. ``_match_sql``: which (term, field) pairs match, newest first, as small rows
   (ids, metadata and a length bound; text only in the windows of small
   fields, see below). One ``UNION ALL`` branch per
   term and field kind, so each branch is one indexable condition that is
   evaluated once per row. On PostgreSQL a small thread is scanned instead
   of asking the index, a larger one tries the spelling of its newest
   content first, and the global scope gives this a time budget and falls
   back to the newest messages (``_match_rows``). Small fields that could be
   listed get their windows here already (``_with_small_windows``).
2. ``_window_sql_*``: for the few fields that can be listed, each term's first
   position and the window around it, cut by the database, in listing order
   until the listed entries fill the literal cap. Only ``WINDOW_CHARS + 1``
   characters of a field ever leave the database. Skipped when nothing
   matched, or when the first statement cut every window the listing needs.

Matching is literal and case-insensitive on both backends:

* PostgreSQL: ``col ~* '***=<term>'``. The ``***=`` director makes the rest of
  the pattern a literal string (``%``, ``_``, ``\\`` and regex characters are
  plain characters, nothing to escape), the trigram GIN indexes of migration
  0002 serve it, and the regex engine matches case-insensitively without
  lower-casing the whole field first, which measured about twice as fast as
  ``ILIKE`` on large rows. (Django's ``__icontains`` compiles to
  ``UPPER(col) LIKE UPPER(...)``, which those indexes do not serve.)
  Positions come from ``strpos`` in the field lowered ASCII-only for an ASCII
  term (the same first match, a third to a half cheaper on large fields),
  else from ``regexp_instr`` with the same pattern and flag, so a row that
  matched has a position. Needs PostgreSQL 15 or newer.
* PostgreSQL with threadmem's extension ``threadmem_search`` (pg/, migration
  0007; ``PostgresDialect.fast``): for an ASCII term, its operator
  ``col ~~~ '%<term>%'`` (the LIKE form pg_trgm reads trigrams from, served
  by the same indexes; ``~~~~``, the same test at a cost that makes the
  planner narrow with the index first, in one large thread),
  ``threadmem_icontains`` in scans and
  ``threadmem_ipos``/``threadmem_iwindow`` for windows. They compare bytes,
  folding ASCII letters, which is what ``~*`` does for an ASCII term, and
  cost about what decompressing the field costs. Other terms keep ``~*``.
* SQLite: a deterministic Python function ``threadmem_ifind(field, folded)``
  registered on the connection: SQLite's own ``LIKE``/``lower`` fold ASCII
  only, which would make non-ASCII queries case-sensitive.

Both fold case one character to one (``fold``), and ``substr`` counts
characters on both, so a window never splits a character.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection

from threadmem.lib.terms import fold
from threadmem.lib.windows import window_from_slice
from threadmem.models import Message
from threadmem.search.bounded import (
    GLOBAL_RECENT_BYTES,
    GLOBAL_RECENT_IDS,
    GLOBAL_RECENT_MESSAGES,
    SEARCH_COUNT_LIMIT,
    TAIL_MARK,
    THREAD_LITERAL_MAX_CHARS,
    WINDOW_CHARS,
    WINDOW_LEAD,
    Candidate,
    LiteralPart,
    WindowKey,
    entries_budget,
    fields_to_window,
    hit_header,
    literal_part,
)
from threadmem.search.scope import SearchScope

# Global scope on PostgreSQL: how long the index path may take before the
# search falls back to the newest messages, and how long that may take
# (settings THREADMEM_SEARCH_INDEX_BUDGET_MS, THREADMEM_SEARCH_RECENT_BUDGET_MS).
# A trigram index narrows a rare term to a few rows in milliseconds, but a
# term whose trigrams are all common (a phrase of common words, a path of
# common parts) leaves it thousands of large rows to re-check: seconds on a
# store of a million messages (bench/search.py).


def index_budget_ms() -> int:
    return settings.THREADMEM_SEARCH_INDEX_BUDGET_MS


def thread_scan_bytes() -> int:
    return settings.THREADMEM_SEARCH_THREAD_SCAN_BYTES


def thread_index_budget_ms(visible_bytes: int) -> int:
    """Thread scope with threadmem_search: the index path's time, about what a scan of the thread would take.

    THREADMEM_SEARCH_SCAN_BYTES_PER_MS is how fast a scan reads (bench/search.py:
    the stress thread's 7.3 MB in ~10 ms). At least 1 ms: 0 would be no limit.
    """
    return max(1, visible_bytes // settings.THREADMEM_SEARCH_SCAN_BYTES_PER_MS)


def spelling_sample_bytes() -> int:
    return settings.THREADMEM_SEARCH_SPELLING_SAMPLE_BYTES


def recent_budget_ms() -> int:
    return settings.THREADMEM_SEARCH_RECENT_BUDGET_MS


class Dialect:
    vendor = ""
    fast = False  # PostgreSQL with threadmem's extension (PostgresDialect)

    def pattern(self, term: str) -> str:
        raise NotImplementedError

    def matches(self, column: str, term: str, *, narrow: bool = False) -> tuple[str, Any]:
        """``(condition, its one parameter)``: ``column`` contains ``term``, in any case.

        The indexed form: on PostgreSQL the trigram indexes serve it.
        ``narrow``: the rows are one large thread's, which the index should
        narrow before any field is read.
        """
        raise NotImplementedError

    def needle(self, term: str) -> str | None:
        """What ``position`` may use besides ``pattern(term)``: None when nothing."""
        return None

    def scan_matches(self, column: str, term: str) -> tuple[str, Any]:
        """The condition of ``matches`` for a scan of one thread's rows: ``(sql, its one parameter)``.

        No index serves it; it only has to be the cheapest exact test.
        """
        return self.matches(column, term)

    def position(self, column: str, pattern_column: str, needle_column: str) -> str:
        """The 1-based position of the first match in ``column``, 0 when none.

        ``pattern_column`` holds ``pattern(term)``, ``needle_column`` ``needle(term)``.
        """
        raise NotImplementedError

    def window(self, body: str, position: str, needle_column: str) -> str:
        """The characters of ``body`` from WINDOW_LEAD before ``position`` on, WINDOW_CHARS + 1 of them."""
        return f"substr({body}, {self.greatest(f'{position} - {WINDOW_LEAD}', '1')}, {WINDOW_CHARS + 1})"

    def min_chars(self, column: str) -> str:
        raise NotImplementedError

    def greatest(self, left: str, right: str) -> str:
        raise NotImplementedError

    def least(self, left: str, right: str) -> str:
        raise NotImplementedError

    # Ends a subquery that the planner must run as it is written, not merge
    # into the query around it (which would repeat its expressions there).
    fence = "OFFSET 0"

    def in_ids(self, column: str, ids: Sequence[int]) -> tuple[str, list[Any]]:
        """``column`` is one of ``ids``, as one parameter whatever their number."""
        raise NotImplementedError

    def in_subquery(self, column: str, subquery: str) -> str:
        """``column`` is one of the values ``subquery`` selects."""
        return f"{column} IN ({subquery})"

    def prepare(self) -> None:
        """Make the connection ready for the statements below."""


class PostgresDialect(Dialect):
    """``~*`` and ``strpos(lower(...))``, or with ``fast`` the functions of threadmem's extension.

    ``fast``: the database has ``threadmem_search`` (pg/, migration 0007) and
    its operator class serves the trigram indexes. An ASCII term is then
    matched with its operator ``~~~`` (indexed) or ``threadmem_icontains``
    (scans), found with ``threadmem_ipos`` and cut with ``threadmem_iwindow``:
    each reads the field once with memchr and compares bytes, where ``~*``
    and ``lower()`` convert every character first (bench/search.py: a scan
    of the stress thread at the cost of decompressing it, 4-6x faster). A
    term with other characters keeps ``~*``, whose case folding is Unicode's.
    """

    vendor = "postgresql"

    def __init__(self, *, fast: bool = False) -> None:
        self.fast = fast

    def pattern(self, term: str) -> str:
        return f"***={term}"

    def matches(self, column: str, term: str, *, narrow: bool = False) -> tuple[str, Any]:
        if self.fast and term.isascii():
            # ~~~~ is ~~~ with a test the planner is told is costly: it then
            # narrows a large thread with the trigram index instead of taking
            # the thread for an average one and reading it (pg/*.sql).
            return f"{column} {'~~~~' if narrow else '~~~'} %s", trigram_pattern(term)
        return f"{column} ~* %s", self.pattern(term)

    def needle(self, term: str) -> str | None:
        # An ASCII term is found with strpos in the field lowered ASCII-only
        # (COLLATE "C"): a third to a half cheaper than regexp_instr on large
        # fields (bench/search.py), which collects every match, not just the first.
        return term.lower() if term.isascii() else None

    def scan_matches(self, column: str, term: str) -> tuple[str, Any]:
        # Functions, not the ~* operator, so the planner cannot pick the
        # trigram index. For an ASCII term, lowering ASCII-only and strpos
        # read bytes: about twice as cheap as the regex engine on a field
        # that does not match (it converts the field to wide characters).
        needle = self.needle(term)
        if needle is None:
            return f"regexp_like({column}, %s, 'i')", self.pattern(term)
        if self.fast:
            return f"threadmem_icontains({column}, %s)", needle
        return f'strpos(lower({column} COLLATE "C"), %s) > 0', needle

    def position(self, column: str, pattern_column: str, needle_column: str) -> str:
        # ~* folds just the ASCII letters of an ASCII pattern, so both find the
        # same first match; where strpos finds none the regex decides.
        regex = f"regexp_instr({column}, {pattern_column}, 1, 1, 0, 'i')"
        if self.fast:
            return f"CASE WHEN {needle_column} IS NULL THEN {regex} ELSE threadmem_ipos({column}, {needle_column}) END"
        return (
            f"CASE WHEN {needle_column} IS NULL THEN {regex} "
            f'ELSE coalesce(nullif(strpos(lower({column} COLLATE "C"), {needle_column}), 0), {regex}) END'
        )

    def window(self, body: str, position: str, needle_column: str) -> str:
        cut = super().window(body, position, needle_column)
        if not self.fast:
            return cut
        # The same characters without substr's walk to the position, one character at a time.
        return (
            f"CASE WHEN {needle_column} IS NULL THEN {cut} "
            f"ELSE threadmem_iwindow({body}, {needle_column}, {WINDOW_LEAD}, {WINDOW_CHARS + 1}) END"
        )

    def min_chars(self, column: str) -> str:
        # octet_length reads the stored size without decompressing the value;
        # UTF-8 needs at most 4 bytes a character.
        return f"((octet_length({column}) + 3) / 4)"

    def greatest(self, left: str, right: str) -> str:
        return f"greatest({left}, {right})"

    def least(self, left: str, right: str) -> str:
        return f"least({left}, {right})"

    def in_ids(self, column: str, ids: Sequence[int]) -> tuple[str, list[Any]]:
        # One array literal: the driver quotes a string at once, where it would
        # adapt a list element by element (a caller's readable threads).
        return f"{column} = ANY(CAST(%s AS bigint[]))", ["{" + ",".join(str(int(i)) for i in ids) + "}"]

    def in_subquery(self, column: str, subquery: str) -> str:
        # The subquery runs once, as an array (an InitPlan), before the scan:
        # the planner keeps the plans it makes for a constant array (an IN
        # would become a hashed subplan, which read a common word's rows by
        # id order, 4x slower in bench/search.py).
        return f"{column} = ANY(ARRAY({subquery}))"


def ifind(field: str | None, folded_term: str | None) -> int:
    """1-based position of the first case-insensitive occurrence, 0 when absent."""
    if field is None or not folded_term:
        return 0
    return fold(field).find(folded_term) + 1


class SqliteDialect(Dialect):
    vendor = "sqlite"

    def pattern(self, term: str) -> str:
        return fold(term)

    def matches(self, column: str, term: str, *, narrow: bool = False) -> tuple[str, Any]:
        return f"threadmem_ifind({column}, %s) > 0", self.pattern(term)

    def position(self, column: str, pattern_column: str, needle_column: str) -> str:
        return f"threadmem_ifind({column}, {pattern_column})"

    def min_chars(self, column: str) -> str:
        return f"length({column})"

    def greatest(self, left: str, right: str) -> str:
        return f"max({left}, {right})"

    def least(self, left: str, right: str) -> str:
        return f"min({left}, {right})"

    fence = "LIMIT -1 OFFSET 0"  # SQLite has no OFFSET without LIMIT

    def in_ids(self, column: str, ids: Sequence[int]) -> tuple[str, list[Any]]:
        return f"{column} IN (SELECT value FROM json_each(%s))", [json.dumps(list(ids))]

    def prepare(self) -> None:
        # Registering is idempotent and costs microseconds; doing it here
        # (not on connection_created) covers connections opened before this
        # module was imported.
        connection.ensure_connection()
        connection.connection.create_function("threadmem_ifind", 2, ifind, deterministic=True)


# Both trigram indexes are threadmem_search's operator class (migration 0007).
_EXTENSION_SQL = (
    "SELECT count(*) = 2 FROM pg_index i JOIN pg_opclass o ON o.oid = i.indclass[0] "
    "WHERE i.indexrelid IN (to_regclass('message_content_trgm'), to_regclass('toolarg_value_trgm')) "
    "AND o.opcname = 'threadmem_trgm_ops'"
)


def has_search_extension() -> bool:
    """PostgreSQL: whether search uses threadmem_search (THREADMEM_SEARCH_PG_EXTENSION, and the database has it).

    Probed once per database connection, on the driver's own cursor like the
    connection's other setup (not one of a search's statements), and again
    after migrations (apps.py), which may add or remove the extension.
    """
    if not settings.THREADMEM_SEARCH_PG_EXTENSION:
        return False
    connection.ensure_connection()
    raw = connection.connection
    probed = getattr(connection, "threadmem_search_extension", None)
    if probed is None or probed[0] is not raw:
        with raw.cursor() as cursor:
            cursor.execute(_EXTENSION_SQL)
            probed = (raw, bool(cursor.fetchone()[0]))
        connection.threadmem_search_extension = probed
    return probed[1]


def dialect() -> Dialect:
    if connection.vendor == "postgresql":
        return PostgresDialect(fast=has_search_extension())
    if connection.vendor == "sqlite":
        return SqliteDialect()
    raise NotImplementedError(f"search_memory does not support the {connection.vendor} backend")


# --- the filters every path shares -------------------------------------------


def searchable_sql(alias: str) -> tuple[str, list[Any]]:
    """``models.SEARCHABLE`` as SQL on message alias ``alias`` (tests pin the two together)."""
    return (
        f"{alias}.kind = %s AND {alias}.model_visible = %s AND {alias}.isolated = %s "
        f"AND {alias}.superseded_by_id IS NULL",
        [Message.Kind.MESSAGE, True, False],
    )


def scope_sql(scope: SearchScope, sql: Dialect, *, message: str, argument: str | None = None) -> tuple[str, list[Any]]:
    """``(condition, params)`` restricting message alias ``message`` (and argument alias ``argument``) to the scope.

    Thread scope: the thread and its ancestors, each capped at its fork point.
    Global scope: the caller's readable threads (non-operators), as resolved
    by ``resolve_scope``, or every thread but the isolated ones (operators),
    which the statement looks up itself: one round trip less per search.
    """
    if scope.is_global:
        if scope.readable_thread_ids is not None:
            condition, params = sql.in_ids(f"{message}.thread_id", scope.readable_thread_ids)
            if argument is not None:
                # Lets the planner use the argument table's own thread index.
                extra, extra_params = sql.in_ids(f"{argument}.thread_id", scope.readable_thread_ids)
                condition, params = f"{condition} AND {extra}", [*params, *extra_params]
            return condition, params
        isolated = sql.in_subquery(f"{message}.thread_id", "SELECT t.id FROM threadmem_thread t WHERE t.isolated = %s")
        return f"NOT ({isolated})", [True]
    clauses = []
    params = []
    for part in scope.parts:
        clause = f"{message}.thread_id = %s"
        params.append(part.thread_id)
        if argument is not None:
            clause += f" AND {argument}.thread_id = %s"
            params.append(part.thread_id)
        if part.max_seq is not None:
            clause += f" AND {message}.seq <= %s"
            params.append(part.max_seq)
        clauses.append(f"({clause})")
    return "(" + " OR ".join(clauses) + ")", params


# --- statement 1: which (term, field) pairs match -----------------------------

_CONTENT_COLUMNS = (
    "m.id AS message_id, 0 AS arg_id, '' AS path, {min_chars} AS min_chars, m.session_id, m.generation, m.role"
)
_ARGUMENT_COLUMNS = (
    "a.message_id AS message_id, a.id AS arg_id, a.path AS path, {min_chars} AS min_chars, "
    "m.session_id, m.generation, m.role"
)


# A LIKE pattern that finds ``{value}`` literally: backslash is LIKE's escape character.
_LIKE_SPECIALS = str.maketrans({"\\": "\\\\", "%": "\\%", "_": "\\_"})


def like_contains(value: str) -> str:
    """A LIKE pattern matching any text that contains ``value`` as it is."""
    return f"%{value.translate(_LIKE_SPECIALS)}%"


def trigram_pattern(term: str) -> str:
    """threadmem_search's operand for ``term``: ``like_contains`` with a % around each character not a letter or digit.

    The operators read those % as nothing (pg/threadmem_search.c). pg_trgm
    reads them as places where a word may end, and leaves out the trigrams
    of a word's first and last letters ("  t", "11 " in ``ticket-4711``):
    nearly every message has them, and reading their posting lists cost a
    rare term 1.5 ms of its 2 (bench/search.py).
    """
    marked = (c.translate(_LIKE_SPECIALS) if c.isalnum() else f"%{c.translate(_LIKE_SPECIALS)}%" for c in term)
    return f"%{''.join(marked)}%"


def spellings(scope: SearchScope, terms: Sequence[str], sql: Dialect) -> dict[int, str]:
    """PostgreSQL: how the thread's newest content spells each ASCII term, for the terms found there.

    The index path re-checks every candidate row with the regex, which reads
    the whole field (~4 ns a byte on the bench machine): when a term fills a
    large thread (the keyword in every tool result of the stress thread, or
    a word common across the store), that re-check is the whole cost. A term
    that the newest ``spelling_sample_bytes()`` of the thread mention is
    likely to be such a term, and to be spelled the same way elsewhere:
    ``_match_sql`` then tries that spelling with a case-sensitive ``LIKE``
    before the regex, which decides a row so spelled at its first occurrence.
    Rows spelled otherwise still get the regex, so the answer is the same;
    only the cost moves. With both patterns as constants the planner picks
    between a scan of the thread and a ``BitmapOr`` of the two over the
    trigram index. bench/search.py: the stress thread's keyword 37 -> 25 ms,
    'error' 65 -> 17 ms; a word in 28 of its fields 123 -> 178 ms (the index
    read twice), the worst seen.

    One statement for all terms, over the newest messages of the current
    thread (its ancestry's are older), each cut to the sample's size, with
    ``Dialect.needle``'s ASCII-only lowering and ``strpos``: a third of the
    regex's cost on text that does not match.
    """
    wanted = [
        (index, needle, len(term)) for index, term in enumerate(terms) if (needle := sql.needle(term)) is not None
    ]
    if not wanted or not spelling_sample_bytes():
        return {}
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
    budget = spelling_sample_bytes()
    params = [
        budget,
        budget,
        scope.thread_id,
        *searchable_params,
        budget,
        *(list(column) for column in zip(*wanted, strict=True)),
    ]
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return {term: spelled for term, spelled in cursor.fetchall() if spelled}


def _match_sql(
    scope: SearchScope,
    terms: Sequence[str],
    sql: Dialect,
    *,
    scan: bool = False,
    spelled: Mapping[int, str] | None = None,
) -> tuple[str, list[Any]]:
    """Every (term, field) match in the scope: the index path, or with ``scan`` a scan of the scope's rows.

    In the global scope each branch stops at SEARCH_COUNT_LIMIT + 1 rows,
    newest first; in a thread's scope it counts them all. ``spelled`` maps a
    term's index to the thread's spelling of it (``spellings``), tried in
    content before the regex.
    """
    limit = SEARCH_COUNT_LIMIT + 1 if scope.is_global else None
    searchable, searchable_params = searchable_sql("m")
    content_scope, content_scope_params = scope_sql(scope, sql, message="m")
    argument_scope, argument_scope_params = scope_sql(scope, sql, message="m", argument="a")
    branches = []
    params: list[Any] = []
    for index, term in enumerate(terms):
        if scan:
            content_match, pattern = sql.scan_matches("m.content", term)
            argument_match, _ = sql.scan_matches("a.value", term)
        else:
            content_match, pattern = sql.matches("m.content", term, narrow=not scope.is_global)
            argument_match, _ = sql.matches("a.value", term, narrow=not scope.is_global)
        content_params = [pattern]
        if spelled and index in spelled:
            content_match = f"(m.content LIKE %s OR {content_match})"
            content_params = [like_contains(spelled[index]), pattern]
        branch = (
            f"SELECT {index} AS term, {_CONTENT_COLUMNS.format(min_chars=sql.min_chars('m.content'))} "
            f"FROM threadmem_message m WHERE {content_scope} AND {searchable} AND {content_match}"
        )
        branch_params = [*content_scope_params, *searchable_params, *content_params]
        if limit:
            branch += " ORDER BY m.id DESC LIMIT %s"
            branch_params.append(limit)
        branches.append(f"SELECT * FROM ({branch}) c{index}")
        params += branch_params
        branch = (
            f"SELECT {index} AS term, {_ARGUMENT_COLUMNS.format(min_chars=sql.min_chars('a.value'))} "
            "FROM threadmem_toolargument a JOIN threadmem_message m ON m.id = a.message_id "
            f"WHERE {argument_scope} AND {searchable} AND {argument_match}"
        )
        branch_params = [*argument_scope_params, *searchable_params, pattern]
        if limit:
            branch += " ORDER BY a.message_id DESC, a.id LIMIT %s"
            branch_params.append(limit)
        branches.append(f"SELECT * FROM ({branch}) a{index}")
        params += branch_params
    return _with_small_windows(" UNION ALL ".join(branches), params, terms, sql)


# A field this small (Dialect.min_chars) gets its window with the match
# (_with_small_windows): on PostgreSQL at most 2 KB, stored in the row itself.
SMALL_FIELD_CHARS = 500
# The fewest characters of a hit's header line (message id, generation and
# session id of one character, no role, the shortest field name).
_HEADER_CHARS_AT_LEAST = len(
    hit_header(Candidate(term=0, message_id=0, arg_id=0, path="", min_chars=0, session_id="", generation=0, role=""))
)


def _with_small_windows(matches: str, params: list[Any], terms: Sequence[str], sql: Dialect) -> tuple[str, list[Any]]:
    """The rows of ``matches`` in listing order, with the window of each small field that could be listed.

    ``matches`` selects the match columns (``_CONTENT_COLUMNS``). Two columns
    follow them: the term's position in the field and the window's
    characters (``_windows``), or NULL for a row left to the windows
    statement. A row gets them when its field is small (``min_chars`` at most
    SMALL_FIELD_CHARS: on PostgreSQL 2 KB, text that sits in the row itself)
    and the entries before it in its term, each at the fewest characters
    ``fields_to_window`` could count for it, leave room under the literal
    cap: every field that walk can reach, and a few more. When every field
    the listing needs is such a field, as it is for most rare terms, the
    windows statement does not run: one statement less (bench/search.py).
    A large field is left to that statement, which cuts in listing order and
    stops at the cap, instead of being read here on the chance of a listing.
    """
    # min_window_chars, in SQL.
    least_window = sql.least(
        sql.least(sql.greatest("u.min_chars", "t.length"), f"t.length + {WINDOW_LEAD}"), f"{WINDOW_CHARS}"
    )
    cost = f"{_HEADER_CHARS_AT_LEAST} + {least_window}"
    rows = ", ".join("(CAST(%s AS integer), CAST(%s AS text), CAST(%s AS text), CAST(%s AS integer))" for _ in terms)
    terms_params: list[Any] = []
    for index, term in enumerate(terms):
        terms_params += [index, sql.pattern(term), sql.needle(term), len(term)]
    body = (
        "CASE WHEN s.arg_id = 0 THEN (SELECT m.content FROM threadmem_message m WHERE m.id = s.message_id) "
        "ELSE (SELECT a.value FROM threadmem_toolargument a WHERE a.id = s.arg_id) END"
    )
    statement = (
        f"WITH t(term, pattern, needle, length) AS (VALUES {rows}) "
        "SELECT w.term, w.message_id, w.arg_id, w.path, w.min_chars, w.session_id, w.generation, w.role, w.pos, "
        f"CASE WHEN w.pos > 0 THEN {sql.window('w.body', 'w.pos', 'w.needle')} END "
        "FROM ("
        "SELECT v.*, "
        f"CASE WHEN v.body IS NOT NULL THEN {sql.position('v.body', 'v.pattern', 'v.needle')} END AS pos "
        "FROM ("
        f"SELECT s.*, CASE WHEN s.min_chars <= %s AND s.before < %s THEN {body} || '' END AS body "
        "FROM ("
        "SELECT u.*, t.pattern, t.needle, "
        f"sum({cost}) OVER (PARTITION BY u.term ORDER BY u.message_id DESC, u.arg_id "
        f"ROWS UNBOUNDED PRECEDING) - {cost} AS before "
        f"FROM ({matches}) u JOIN t ON t.term = u.term"
        f") s {sql.fence}) v {sql.fence}) w "
        "ORDER BY w.term, w.message_id DESC, w.arg_id"
    )
    return statement, [*terms_params, SMALL_FIELD_CHARS, THREAD_LITERAL_MAX_CHARS, *params]


def _recent_match_sql(scope: SearchScope, terms: Sequence[str], sql: Dialect) -> tuple[str, list[Any]]:
    """The fallback of a global search the index cannot narrow in time: the newest messages only.

    The whole query (not each word: the words are what made it too broad) in
    the scope's searchable messages among the newest GLOBAL_RECENT_IDS ids, up
    to GLOBAL_RECENT_BYTES of content or GLOBAL_RECENT_MESSAGES messages, and
    their tool arguments: a fixed amount of work whatever the terms.
    ``octet_length`` reads stored sizes without decompressing anything; the id
    range keeps a caller who owns a sliver of the store from sorting all of it.
    """
    searchable, searchable_params = searchable_sql("m")
    in_scope, scope_params = scope_sql(scope, sql, message="m")
    content_match, pattern = sql.matches("m.content", terms[0])
    argument_match, _ = sql.matches("a.value", terms[0])
    limit = SEARCH_COUNT_LIMIT + 1
    statement = (
        "WITH r AS MATERIALIZED (SELECT n.id, n.content, n.session_id, n.generation, n.role FROM ("
        "SELECT m.id, m.content, m.session_id, m.generation, m.role, "
        "sum(octet_length(m.content)) OVER (ORDER BY m.id DESC ROWS UNBOUNDED PRECEDING) AS seen "
        f"FROM threadmem_message m WHERE {in_scope} AND {searchable} "
        "AND m.id > (SELECT max(l.id) FROM threadmem_message l) - %s "
        "ORDER BY m.id DESC LIMIT %s"
        ") n WHERE n.seen - octet_length(n.content) < %s) "
        f"SELECT * FROM (SELECT 0 AS term, {_CONTENT_COLUMNS.format(min_chars=sql.min_chars('m.content'))} "
        f"FROM r m WHERE {content_match} ORDER BY m.id DESC LIMIT %s) c0 "
        "UNION ALL "
        # LATERAL: each recent message's own arguments by index, not a scan of every argument.
        f"SELECT * FROM (SELECT 0 AS term, {_ARGUMENT_COLUMNS.format(min_chars=sql.min_chars('a.value'))} "
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
    return _with_small_windows(statement, params, terms[:1], sql)


def _is_timeout(error: DatabaseError) -> bool:
    """The statement timeout fired: a cancelled query, or a cancelled regex compilation.

    pg_trgm compiles the pattern into a trigram graph when the index scan
    starts, and reports a cancel that arrives then as an invalid regular
    expression ("operation cancelled"); the ``***=`` patterns of this module
    are always valid, so that error can only be the timeout.
    """
    try:
        from psycopg.errors import InvalidRegularExpression, QueryCanceled
    except ImportError:  # pragma: no cover - psycopg is a requirement
        return False
    cause = error.__cause__
    if isinstance(cause, InvalidRegularExpression):
        return "cancel" in str(cause)
    return isinstance(cause, QueryCanceled)


# The settings of a budgeted statement. No parallel workers: on a small shared
# machine they start slower than these LIMITed scans finish, and do work the
# LIMIT throws away.
_BUDGET_SETTINGS = (
    "SELECT set_config('statement_timeout', %s, true), set_config('max_parallel_workers_per_gather', '0', true)"
)
_SAVEPOINT = "threadmem_search_budget"


def _within_budget(statement: str, params: list[Any], budget_ms: int) -> list[tuple] | None:
    """Run ``statement`` with a statement timeout, in one round trip; None when it ran out of time.

    The settings, the statement and what follows it go as one query string
    (Django's psycopg cursor binds parameters client-side and sends it with
    the simple query protocol, which runs several statements). Outside a
    transaction the server runs them as one implicit transaction, so the
    transaction-local settings end with it. Inside a caller's transaction a
    savepoint wraps them and is rolled back after the statement (which only
    reads), which gives the caller's settings back; after a timeout that
    rollback is one more round trip.

    A timer that fires after the statement's last check for interrupts is
    reported by PostgreSQL at the next command. That command is the rollback
    to the savepoint, or ``SELECT 1`` outside a transaction: either way part
    of this query string, so such a late timeout counts as running out of
    time here instead of failing the caller's next statement.
    """
    nested = not connection.get_autocommit()
    if nested:
        batch = (
            f"SAVEPOINT {_SAVEPOINT}; {_BUDGET_SETTINGS}; {statement}; "
            f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}; RELEASE SAVEPOINT {_SAVEPOINT}"
        )
        before = 2  # the savepoint, the settings
    else:
        batch = f"{_BUDGET_SETTINGS}; {statement}; SELECT 1"
        before = 1  # the settings
    with connection.cursor() as cursor:
        try:
            cursor.execute(batch, [str(budget_ms), *params])
        except DatabaseError as error:
            if not _is_timeout(error):
                raise
            if nested:
                cursor.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}; RELEASE SAVEPOINT {_SAVEPOINT}")
            return None
        for _ in range(before):
            cursor.nextset()
        return cursor.fetchall()


def _fetch(statement: str, params: list[Any]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall()


def _match_rows(scope: SearchScope, terms: Sequence[str], sql: Dialect) -> tuple[list[tuple], str, str]:
    """``(rows, coverage, matched_by)``.

    coverage is ``all``, or in the global scope ``recent`` or ``none``;
    matched_by says which statement answered: ``index``, ``spelled`` (the
    index, with the thread's spelling first: ``spellings``), ``scan``,
    ``recent`` or ``none``.

    On SQLite the one statement (a scan there: no index serves the
    registered function) runs to the end.

    Thread scope on PostgreSQL: a scope of at most ``thread_scan_bytes()`` of
    text (``SearchScope.visible_bytes``) is scanned (``scan_matches``), a
    larger one goes through the trigram indexes; either way to the end, since
    a thread's count is exact. For a small thread the index path costs more
    than reading it: planning compiles the pattern into a trigram graph, and a
    word common across the store makes the index read long posting lists
    (bench/search.py prints both paths on threads of 0.2-0.5 MB). With
    threadmem_search the index path has about the time a scan of the thread
    would take (``thread_index_budget_ms``), then the thread is scanned: a
    term whose trigrams are all common across the store (``error``, a host
    name of common parts) costs the index tens of milliseconds whatever the
    thread. Without it, one more statement first learns how the thread
    spells the terms (``spellings``) and the index path runs to the end.

    Global scope on PostgreSQL: the index path has ``index_budget_ms()``;
    past that the whole query is searched in the newest messages within
    ``recent_budget_ms()``; past that too, nothing is listed and the text
    says so. Either way a global search answers in about the sum of the two
    budgets, whatever the terms.
    """
    if sql.vendor == "postgresql" and not scope.is_global:
        if scope.visible_bytes > thread_scan_bytes():
            if not sql.fast:
                spelled = spellings(scope, terms, sql)
                rows = _fetch(*_match_sql(scope, terms, sql, spelled=spelled))
                return rows, "all", "spelled" if spelled else "index"
            statement, params = _match_sql(scope, terms, sql)
            rows = _within_budget(statement, params, thread_index_budget_ms(scope.visible_bytes))
            if rows is not None:
                return rows, "all", "index"
            # The index could not narrow the terms in time: read the thread.
        return _fetch(*_match_sql(scope, terms, sql, scan=True)), "all", "scan"
    statement, params = _match_sql(scope, terms, sql)
    if sql.vendor != "postgresql":
        return _fetch(statement, params), "all", "scan"
    rows = _within_budget(statement, params, index_budget_ms())
    if rows is not None:
        return rows, "all", "index"
    statement, params = _recent_match_sql(scope, terms, sql)
    rows = _within_budget(statement, params, recent_budget_ms())
    if rows is not None:
        return rows, "recent", "recent"
    return [], "none", "none"


# --- statement 2: positions and windows of the fields that can be listed -----


def _pairs_values(pairs: Sequence[tuple[int, WindowKey]], terms: Sequence[str], sql: Dialect) -> tuple[str, list]:
    rows = []
    params: list[Any] = []
    for ordinal, ((message_id, arg_id), term) in pairs:
        rows.append("(CAST(%s AS integer), CAST(%s AS bigint), CAST(%s AS bigint), CAST(%s AS text), CAST(%s AS text))")
        params += [ordinal, message_id, arg_id, sql.pattern(terms[term]), sql.needle(terms[term])]
    return ", ".join(rows), params


def _window_sql_walk(
    pairs: Sequence[tuple[int, WindowKey]],
    terms: Sequence[str],
    costs: Sequence[int],
    *,
    budget: int,
    sql: Dialect,
) -> tuple[str, list[Any]]:
    """PostgreSQL: cut windows in listing order and stop once the listed entries fill the budget.

    A recursive walk over the pairs: each step reads one field once (``|| ''``
    detoasts it a single time for both the position and the cut), and adds the
    entry's length when the pair opens its field's first entry (``costs`` holds
    that entry's header length, or -1 for a pair that opens nothing). Entries
    of later terms on a field already seen count as nothing here, so the walk
    may cut a few windows more than get listed, never fewer. On the stress
    thread this cuts ~10 windows where a fixed bound would cut ~27.
    """
    rows = []
    params: list[Any] = []
    for (ordinal, ((message_id, arg_id), term)), cost in zip(pairs, costs, strict=True):
        rows.append(
            "(CAST(%s AS integer), CAST(%s AS bigint), CAST(%s AS bigint), CAST(%s AS text), CAST(%s AS text), "
            "CAST(%s AS integer))"
        )
        params += [ordinal, message_id, arg_id, sql.pattern(terms[term]), sql.needle(terms[term]), cost]
    searchable, searchable_params = searchable_sql("m")
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
        f"SELECT y.pos, {sql.window('y.body', 'y.pos', 'p.needle')} AS piece FROM ("
        f"SELECT b.body, {sql.position('b.body', 'p.pattern', 'p.needle')} AS pos FROM ("
        "SELECT (CASE WHEN p.arg_id = 0 "
        f"THEN (SELECT m.content FROM threadmem_message m WHERE m.id = p.message_id AND {searchable}) "
        "ELSE (SELECT a.value FROM threadmem_toolargument a JOIN threadmem_message m ON m.id = a.message_id "
        f"WHERE a.id = p.arg_id AND {searchable}) END) || '' AS body OFFSET 0"
        ") b OFFSET 0) y OFFSET 0) x "
        "WHERE w.used <= %s"
        ") "
        "SELECT ord, pos, piece FROM w WHERE ord >= 0"
    )
    return statement, [*params, *searchable_params, *searchable_params, budget]


def _window_sql_all(
    pairs: Sequence[tuple[int, WindowKey]], terms: Sequence[str], sql: Dialect
) -> tuple[str, list[Any]]:
    """SQLite: cut the windows of every pair (a file database on a laptop; no walk needed)."""
    values, params = _pairs_values(pairs, terms, sql)
    searchable, searchable_params = searchable_sql("m")
    statement = (
        f"WITH p(ord, message_id, arg_id, pattern, needle) AS (VALUES {values}), "
        "s AS MATERIALIZED ("
        f"SELECT p.ord AS ord, m.content AS body, {sql.position('m.content', 'p.pattern', 'p.needle')} AS pos "
        f"FROM p JOIN threadmem_message m ON m.id = p.message_id WHERE p.arg_id = 0 AND {searchable} "
        "UNION ALL "
        f"SELECT p.ord, a.value, {sql.position('a.value', 'p.pattern', 'p.needle')} "
        "FROM p JOIN threadmem_toolargument a ON a.id = p.arg_id JOIN threadmem_message m ON m.id = a.message_id "
        f"WHERE p.arg_id <> 0 AND {searchable}"
        ") "
        f"SELECT s.ord, s.pos, {sql.window('s.body', 's.pos', 'NULL')} FROM s"
    )
    return statement, [*params, *searchable_params, *searchable_params]


def _window(position: int | None, piece: str | None) -> tuple[int, Any] | None:
    """(position, Window) from what the database cut, or None when the field no longer matches."""
    if not position:
        return None
    return position, window_from_slice(position=position, piece=piece, width=WINDOW_CHARS, lead=WINDOW_LEAD)


def _windows(
    candidates: Sequence[Candidate],
    terms: Sequence[str],
    *,
    budget: int,
    sql: Dialect,
    cut: Mapping[WindowKey, Any],
) -> dict[WindowKey, Any]:
    """(field, term) -> (position, Window), or None when the field no longer matches.

    Pairs the walk did not reach are absent: they cannot be listed. ``cut``
    holds the windows the match statement cut already (``_with_small_windows``):
    when it has every pair, no statement runs.
    """
    pairs = list(enumerate(fields_to_window(list(candidates), list(terms), budget=budget)))
    if not pairs:
        return {}
    if all(pair in cut for _, pair in pairs):
        return {pair: cut[pair] for _, pair in pairs}
    windows: dict[WindowKey, Any] = {}
    if sql.vendor == "postgresql":
        first_candidate: dict[tuple[int, int], Candidate] = {}
        for candidate in candidates:
            first_candidate.setdefault(candidate.field_key, candidate)
        opened: set[tuple[int, int]] = set()
        costs = []
        for _, (key, term) in pairs:
            opener = first_candidate[key]
            if key not in opened and term == opener.term:
                opened.add(key)
                costs.append(len(hit_header(opener)))
            else:
                costs.append(-1)
        statement, params = _window_sql_walk(pairs, terms, costs, budget=budget, sql=sql)
    else:
        windows = {pair: None for _, pair in pairs}
        statement, params = _window_sql_all(pairs, terms, sql)
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        for ordinal, position, piece in cursor.fetchall():
            _, pair = pairs[ordinal]
            windows[pair] = _window(position, piece)
    return windows


def literal_search(*, scope: SearchScope, terms: list[str]) -> LiteralPart:
    """Run the literal part for ``terms`` in ``scope``: two statements (one when nothing matches, or when the
    match cut every window the listing needs).

    In a thread too large to scan on PostgreSQL, ``spellings`` runs first
    (without threadmem_search), or the scan follows an index path that ran
    out of time (with it).

    In the global scope on PostgreSQL the first runs under a statement
    timeout (sent with its settings as one query string), and when the index
    cannot narrow the terms in time, once more over the newest messages only.
    """
    if not terms:
        return literal_part([], terms, {}, candidate_count=0)
    sql = dialect()
    sql.prepare()
    rows, coverage, matched_by = _match_rows(scope, terms, sql)
    if coverage == "none":
        return literal_part([], terms, {}, candidate_count=0, coverage=coverage, matched_by=matched_by)
    candidates = [
        Candidate(
            term=row[0],
            message_id=row[1],
            arg_id=row[2],
            path=row[3],
            min_chars=int(row[4] or 0),
            session_id=row[5],
            generation=row[6],
            role=row[7],
        )
        for row in rows
    ]
    # Rows whose window came with the match: position (0 when the field no longer matches) and piece.
    cut = {((row[1], row[2]), row[0]): _window(row[8], row[9]) for row in rows if row[8] is not None}
    bounded = False
    if scope.is_global:
        kept: list[Candidate] = []
        per_term: dict[int, int] = {}
        for candidate in candidates:
            count = per_term.get(candidate.term, 0)
            if count == SEARCH_COUNT_LIMIT:
                bounded = True
                continue
            per_term[candidate.term] = count + 1
            kept.append(candidate)
        candidates = kept
    if not candidates:
        return literal_part([], terms, {}, candidate_count=0, bounded=bounded, coverage=coverage, matched_by=matched_by)
    budget = entries_budget(len(candidates), bounded=bounded, coverage=coverage)
    windows = _windows(candidates, terms, budget=budget, sql=sql, cut=cut)
    return literal_part(
        candidates,
        terms,
        windows,
        candidate_count=len(candidates),
        bounded=bounded,
        coverage=coverage,
        matched_by=matched_by,
    )
