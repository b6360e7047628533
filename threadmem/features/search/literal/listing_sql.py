"""What every match statement is wrapped in: its rows in listing order, the small fields' windows cut with the
match (``with_small_windows``), the rest left to the windows statement (``window_sql.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from threadmem.features.search.answer_caps import HEADER_CHARS_AT_LEAST, THREAD_LITERAL_MAX_CHARS
from threadmem.features.search.literal.dialects import Dialect, StatementSql
from threadmem.features.search.literal.filter_sql import StatementFilters

# A field this small (Dialect.min_chars) gets its window with the match
# (with_small_windows): on PostgreSQL at most 2 KB, stored in the row itself.
SMALL_FIELD_CHARS = 500


def with_small_windows(
    matches: str,
    params: list[Any],
    terms: Sequence[str],
    dialect: Dialect,
    *,
    sql: StatementSql,
    filters: StatementFilters,
    start: tuple[int, int, int] | None = None,
    described_max_chars: int | None = None,
) -> tuple[str, list[Any]]:
    """The rows of ``matches`` (the match columns, ``CONTENT_COLUMNS``) in listing order, then two columns
    ``listing.MatchRow`` names: the term's position and the window's characters, or NULL for a row left to the
    windows statement, and the link columns of a row with a window (``StatementFilters.links``).

    A row gets its window here when its field is small (``min_chars`` at most
    SMALL_FIELD_CHARS: on PostgreSQL text that sits in the row itself) and the
    entries before it in its term, each at the fewest characters
    ``fields_to_window`` could count, leave room under the cap. When every
    field the listing needs is such a field, as for most rare terms, the
    windows statement does not run; a large field is left to it, which stops
    at the cap instead of reading on the chance of a listing.

    ``start``: a later page's cursor key: only rows from it on get windows,
    counted from it. ``described_max_chars``: the cap when no row matches the
    whole query, for a described question's first page (``literal_search`` decides).
    """
    cost = f"{HEADER_CHARS_AT_LEAST} + {sql.least_window}"
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
    if described_max_chars is not None:
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
