"""What every literal statement takes from the scope, as SQL: which messages it may show, the scope's threads,
search_memory's filters (``role_tool_sql``), an owner's newest messages (``window_sql``), and a hit's other half
looked up under the same rules. Which messages are searchable and a set of ids are ``shared_sql.py``'s (the ranked
lane writes them too); how each database matches a term is ``dialects.py``'s.

``scope_sql`` is ``SearchScope.q`` as SQL; tests/search/test_filters.py holds
every search path to the same rows as that definition.

A hit's other half (contract §9: a tool-argument hit's tool and results, a
tool result's tool and call) is three columns (``link_sql``) that a
statement which already cuts a field's window adds beside it
(``with_small_windows``, the windows statement): no statement of its own,
and only evaluated for the rows that get a window. Both look up by the
indexes of migration 0010: (thread, tool_call_id) on messages and on tool
arguments.

* a tool-argument hit: ``tool`` is the argument row's ``tool_name`` and
  ``ids`` the messages of role ``tool`` in the same thread whose
  ``tool_call_id`` is that call's id: only its own call's results, when one
  assistant message makes several calls;
* a hit in a tool result's content: ``tool`` and ``ids`` name the assistant
  message holding the call with the result's ``tool_call_id``, found through
  its tool-argument rows (a call with no string argument has none: then
  ``tool=- call=-``);
* any other content hit: both NULL.

Results and calls are restricted like hits: searchable messages in the
search's scope (a fork's ancestor up to its fork point). ``hits.hit_link``
reads the columns back.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from threadmem.domain.scope import SearchScope
from threadmem.features.search.literal.dialects import Dialect
from threadmem.features.search.shared_sql import in_ids, in_subquery, searchable_sql
from threadmem.models import Message

# Enough for a word in a fifth of the owner's window to pass SEARCH_COUNT_LIMIT hits,
# cheap enough for a rare one (docs/search.md, "An owner's window").
OWNER_WINDOW_MESSAGES = 1_000
OWNER_WINDOW_BYTES = 4_000_000


def sized_id_list(vendor: str, column: str, body: str) -> str:
    """The aggregate of integer ``column`` with each id's ``body`` length in characters: ``<id>:<chars>,…`` (any
    order; NULL over no rows)."""
    if vendor == "postgresql":
        return f"string_agg(CAST({column} AS text) || ':' || char_length({body}), ',')"
    return f"group_concat({column} || ':' || length({body}), ',')"


def scope_sql(
    scope: SearchScope, dialect: Dialect, *, message: str, argument: str | None = None
) -> tuple[str, list[Any]]:
    """``(condition, params)`` restricting message alias ``message`` (and argument alias ``argument``) to the scope.

    Thread scope: the thread and its ancestors, each capped at its fork point.
    Global scope: the caller's readable threads (non-operators, and anyone's
    in a project), as resolved by ``resolve_scope``, or every thread but the isolated ones (operators),
    which the statement looks up itself: one round trip less per search.
    """
    if scope.is_global:
        if scope.readable_thread_ids is not None:
            condition, params = in_ids(dialect.vendor, f"{message}.thread_id", scope.readable_thread_ids)
            if argument is not None:
                # Lets the planner use the argument table's own thread index.
                extra, extra_params = in_ids(dialect.vendor, f"{argument}.thread_id", scope.readable_thread_ids)
                condition, params = f"{condition} AND {extra}", [*params, *extra_params]
            return condition, params
        isolated = in_subquery(
            dialect.vendor, f"{message}.thread_id", "SELECT t.id FROM threadmem_thread t WHERE t.isolated = %s"
        )
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


def _tool_names(scope: SearchScope) -> tuple[str, list[Any]]:
    return ", ".join(["%s"] * len(scope.tools)), [name.lower() for name in scope.tools]


# search_memory's ``tool`` filter, one rule for every alias: a tool argument passes when its call is one of the
# tools; a message's content passes as a tool result of one of them, through its call's argument rows ``tf``
# (the (thread, tool_call_id) index).
def _named(alias: str, names: str) -> str:
    return f"lower({alias}.tool_name) IN ({names})"


def _result_of_call(message: str) -> tuple[str, list[Any], str]:
    """A tool result's condition on ``message``, its params, and the join to its call's argument rows ``tf``."""
    joined = f"tf.thread_id = {message}.thread_id AND tf.tool_call_id = {message}.tool_call_id"
    return f"{message}.role = %s AND {message}.tool_call_id <> ''", [Message.Role.TOOL], joined


def role_tool_sql(
    scope: SearchScope, *, message: str | None = None, argument: str | None = None, candidates: str | None = None
) -> tuple[str, list[Any]]:
    """search_memory's ``tool`` and ``role`` filters ("1 = 1" without filters), on one of:

    * a match branch's rows: message alias ``message`` and, when the branch
      matches tool arguments, argument alias ``argument``;
    * a statement's candidate rows (``candidates``: message_id, arg_id,
      role), for the branches that do not filter themselves (the newest
      messages, an owner's window).
    """
    clauses: list[str] = []
    params: list[Any] = []
    if scope.role:
        clauses.append(f"{candidates or message}.role = %s")
        params.append(scope.role)
    if scope.tools:
        names, names_params = _tool_names(scope)
        if candidates is not None:
            result, result_params, joined = _result_of_call("tm")
            clauses.append(
                f"(CASE WHEN {candidates}.arg_id <> 0 THEN EXISTS (SELECT 1 FROM threadmem_toolargument tf "
                f"WHERE tf.id = {candidates}.arg_id AND {_named('tf', names)}) "
                f"ELSE EXISTS (SELECT 1 FROM threadmem_message tm JOIN threadmem_toolargument tf ON {joined} "
                f"WHERE tm.id = {candidates}.message_id AND {result} AND {_named('tf', names)}) END)"
            )
            params += [*names_params, *result_params, *names_params]
        elif argument is not None:
            clauses.append(_named(argument, names))
            params += names_params
        else:
            result, result_params, joined = _result_of_call(message)
            clauses.append(
                f"({result} AND EXISTS (SELECT 1 FROM threadmem_toolargument tf WHERE {joined} "
                f"AND {_named('tf', names)}))"
            )
            params += [*result_params, *names_params]
    return " AND ".join(clauses) or "1 = 1", params


class StatementFilters(NamedTuple):
    """A match statement's filters, each ``(sql, params)``: on content rows (``m``), on argument rows (``a``
    of ``m``), searchability (``m``) and the candidates (``u``); the link columns of its listed rows
    (``w``, ``with_small_windows``); the scope alone on content rows (``m``: the newest messages' fallback, which
    leaves search_memory's filters to the candidates); the owner's window (``window_sql``) when a term reads it."""

    content: tuple[str, list[Any]]
    argument: tuple[str, list[Any]]
    searchable: tuple[str, list[Any]]
    candidates: tuple[str, list[Any]]
    links: tuple[str, list[Any]]
    scope: tuple[str, list[Any]]
    window: tuple[str, list[Any]] | None = None


def statement_filters(scope: SearchScope, dialect: Dialect, *, window: bool = False) -> StatementFilters:
    """Every filter a match statement takes, in one call (``match_sql.py``); ``window``: a term reads the owner's
    window."""
    in_scope = scope_sql(scope, dialect, message="m")
    return StatementFilters(
        _and(in_scope, role_tool_sql(scope, message="m")),
        _and(scope_sql(scope, dialect, message="m", argument="a"), role_tool_sql(scope, message="m", argument="a")),
        searchable_sql("m"),
        role_tool_sql(scope, candidates="u"),
        # Only the rows that get a window and may be a tool's: a user's message costs no lookup.
        link_sql(
            scope,
            dialect,
            message_id="w.message_id",
            arg_id="w.arg_id",
            when=f"w.pos > 0 AND (w.arg_id <> 0 OR w.role = '{Message.Role.TOOL}')",
        ),
        in_scope,
        window_sql(scope) if window else None,
    )


def window_sql(scope: SearchScope) -> tuple[str, list[Any]]:
    """The CTE ``ow``: the owner's newest searchable messages, newest first, up to the window's caps: the newest
    OWNER_WINDOW_MESSAGES of each thread (the (thread, id) index), the newest of those overall, up to
    OWNER_WINDOW_BYTES of content (``match_sql.py``, "WINDOW").

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


def _and(*parts: tuple[str, list[Any]]) -> tuple[str, list[Any]]:
    return " AND ".join(sql for sql, _ in parts), [param for _, params in parts for param in params]


class LinkSql(NamedTuple):
    tool: str
    tool_params: list[Any]
    ids: str
    ids_params: list[Any]
    arguments: str = "CAST(NULL AS text)"

    def when(self, condition: str) -> tuple[str, list[Any]]:
        """The three columns, evaluated only for rows where ``condition`` holds (the rows that got a window)."""
        return (
            f"CASE WHEN {condition} THEN {self.tool} END, CASE WHEN {condition} THEN {self.ids} END, "
            f"CASE WHEN {condition} THEN {self.arguments} END",
            [*self.tool_params, *self.ids_params],
        )


# A call's arguments in brief (contract §9): its first few top-level keys, each key and value cut to this many
# characters in the database (one more, so the header can tell a cut value); hit_entries.args_brief lays them out.
ARGUMENT_KEYS_MAX = 12
ARGUMENT_CHARS = 48


def call_arguments_sql(vendor: str, message_id: str, call_index: str) -> str:
    """``[call_index, [key, value], …]`` as JSON text: the call's top-level arguments, each cut short.

    Reads the call message's ``tool_calls`` once; only a few dozen characters
    of each argument leave the database, however large the call.
    """
    cut = ARGUMENT_CHARS + 1
    if vendor == "postgresql":
        value = "CASE jsonb_typeof(e.value) WHEN 'string' THEN e.value #>> '{}' ELSE CAST(e.value AS text) END"
        return (
            f"(SELECT '[' || {call_index} || coalesce(',' || string_agg(CAST(json_build_array(left(e.key, {cut}), "
            f"left({value}, {cut})) AS text), ','), '') || ']' FROM (SELECT x.key, x.value "
            f"FROM threadmem_message lm CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof("
            f"lm.tool_calls -> CAST({call_index} AS integer) -> 'arguments') = 'object' THEN "
            f"lm.tool_calls -> CAST({call_index} AS integer) -> 'arguments' END) x "
            f"WHERE lm.id = {message_id} LIMIT {ARGUMENT_KEYS_MAX}) e)"
        )
    return (
        f"(SELECT '[' || {call_index} || coalesce(',' || group_concat(json_array(substr(e.key, 1, {cut}), "
        f"substr(CAST(e.value AS text), 1, {cut})), ','), '') || ']' FROM (SELECT x.key, x.value "
        f"FROM threadmem_message lm, json_each(lm.tool_calls, '$[' || {call_index} || '].arguments') x "
        f"WHERE lm.id = {message_id} AND json_type(lm.tool_calls, '$[' || {call_index} || '].arguments') = 'object' "
        f"LIMIT {ARGUMENT_KEYS_MAX}) e)"
    )


def fork_cap_sql(scope: SearchScope, alias: str) -> tuple[str, list[Any]]:
    """The scope, for a message in the same thread as a hit: only a fork's ancestor's cap can leave it out.

    The hit's thread is in the scope already; naming it again as a constant
    would let the planner read the whole thread instead of the
    (thread, tool_call_id) index.
    """
    clauses, params = [], []
    for part in scope.parts if not scope.is_global else ():
        if part.max_seq is not None:
            clauses.append(f"({alias}.thread_id <> %s OR {alias}.seq <= %s)")
            params += [part.thread_id, part.max_seq]
    return " AND ".join(clauses) or "1 = 1", params


def _caps(scope: SearchScope) -> tuple[list[int], list[int]]:
    """The fork caps of a thread scope as two arrays: thread ids, and the last seq each may show."""
    parts = [part for part in scope.parts if part.max_seq is not None] if not scope.is_global else []
    return [part.thread_id for part in parts], [part.max_seq for part in parts]


def link_sql(scope: SearchScope, dialect: Dialect, *, message_id: str, arg_id: str, when: str) -> tuple[str, list[Any]]:
    """The three link columns of the field (``message_id``, ``arg_id``), evaluated only where ``when`` holds."""
    return _link_sql(scope, dialect, message_id=message_id, arg_id=arg_id).when(when)


def _link_sql(scope: SearchScope, dialect: Dialect, *, message_id: str, arg_id: str) -> LinkSql:
    """The ``tool``, ``ids`` and ``arguments`` column expressions for the field (``message_id``, ``arg_id``)."""
    if dialect.has_link_function:
        threads, seqs = _caps(scope)
        # Every part in the first column, one call a row (link_of splits them).
        call = f"threadmem_hit_link({message_id}, {arg_id}, CAST(%s AS bigint[]), CAST(%s AS bigint[]))"
        return LinkSql(call, [threads, seqs], "CAST(NULL AS text)", [])
    result_searchable, result_searchable_params = searchable_sql("lr")
    result_scope, result_scope_params = fork_cap_sql(scope, "lr")
    call_searchable, call_searchable_params = searchable_sql("lc")
    call_scope, call_scope_params = fork_cap_sql(scope, "lc")
    # Each lookup starts from its one row (fenced, so the planner cannot start
    # from the scope's thread instead) and follows the (thread, tool_call_id) indexes.
    results = (
        f"(SELECT {sized_id_list(dialect.vendor, 'lr.id', 'lr.content')} FROM (SELECT la.thread_id, la.tool_call_id "
        f"FROM threadmem_toolargument la WHERE la.id = {arg_id} AND la.tool_call_id <> '' {dialect.fence}) c "
        "JOIN threadmem_message lr ON lr.thread_id = c.thread_id AND lr.tool_call_id = c.tool_call_id "
        f"WHERE lr.tool_call_id <> '' AND lr.role = %s AND {result_searchable} AND {result_scope})"
    )
    results_params = [Message.Role.TOOL, *result_searchable_params, *result_scope_params]

    def call(column: str) -> str:
        return (
            f"(SELECT {column} FROM (SELECT lt.thread_id, lt.tool_call_id FROM threadmem_message lt "
            f"WHERE lt.id = {message_id} AND lt.role = %s AND lt.tool_call_id <> '' {dialect.fence}) t "
            "JOIN threadmem_toolargument la ON la.thread_id = t.thread_id AND la.tool_call_id = t.tool_call_id "
            "JOIN threadmem_message lc ON lc.id = la.message_id "
            f"WHERE la.tool_call_id <> '' AND lc.role = %s AND {call_searchable} AND {call_scope} "
            "ORDER BY la.message_id DESC, la.id LIMIT 1)"
        )

    call_params = [Message.Role.TOOL, Message.Role.ASSISTANT, *call_searchable_params, *call_scope_params]
    tool = (
        f"CASE WHEN {arg_id} <> 0 THEN (SELECT lx.tool_name FROM threadmem_toolargument lx WHERE lx.id = {arg_id}) "
        f"ELSE {call('la.tool_name')} END"
    )
    ids = f"CASE WHEN {arg_id} <> 0 THEN {results} ELSE {call('CAST(lc.id AS text)')} END"
    call_arguments = call_arguments_sql(dialect.vendor, "lx.message_id", "lx.call_index")
    arguments = (
        f"CASE WHEN {arg_id} <> 0 THEN (SELECT {call_arguments} FROM threadmem_toolargument lx "
        f"WHERE lx.id = {arg_id}) END"
    )
    return LinkSql(tool, call_params, ids, [*results_params, *call_params], arguments)
