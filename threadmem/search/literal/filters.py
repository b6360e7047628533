"""The filters every literal statement shares: which messages search may show, and the scope's threads.

``searchable_sql`` is ``Message.objects.searchable()`` (``models.SEARCHABLE``) as SQL and
``scope_sql`` is ``SearchScope.q`` as SQL; tests/search/test_filters.py holds
every search path to the same rows as those definitions.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from threadmem.models import Message
from threadmem.scope import SearchScope
from threadmem.search.literal.dialects import Dialect


def searchable_sql(alias: str) -> tuple[str, list[Any]]:
    """``Message.objects.searchable()`` as SQL on message alias ``alias`` (tests pin the two together)."""
    return (
        f"{alias}.kind = %s AND {alias}.model_visible = %s AND {alias}.isolated = %s "
        f"AND {alias}.superseded_by_id IS NULL",
        [Message.Kind.MESSAGE, True, False],
    )


def scope_sql(
    scope: SearchScope, dialect: Dialect, *, message: str, argument: str | None = None
) -> tuple[str, list[Any]]:
    """``(condition, params)`` restricting message alias ``message`` (and argument alias ``argument``) to the scope.

    Thread scope: the thread and its ancestors, each capped at its fork point.
    Global scope: the caller's readable threads (non-operators), as resolved
    by ``resolve_scope``, or every thread but the isolated ones (operators),
    which the statement looks up itself: one round trip less per search.
    """
    if scope.is_global:
        if scope.readable_thread_ids is not None:
            condition, params = dialect.in_ids(f"{message}.thread_id", scope.readable_thread_ids)
            if argument is not None:
                # Lets the planner use the argument table's own thread index.
                extra, extra_params = dialect.in_ids(f"{argument}.thread_id", scope.readable_thread_ids)
                condition, params = f"{condition} AND {extra}", [*params, *extra_params]
            return condition, params
        isolated = dialect.in_subquery(
            f"{message}.thread_id", "SELECT t.id FROM threadmem_thread t WHERE t.isolated = %s"
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


def hit_filter_sql(scope: SearchScope, *, message: str, argument: str | None = None) -> tuple[str, list[Any]]:
    """search_memory's ``tool`` and ``role`` filters on a match branch's rows ("1 = 1" without filters).

    ``argument``: the branch matches tool arguments (alias ``argument``),
    which pass when their call is one of the tools; a content branch's
    message passes as a tool result of one of them (through its call's
    argument rows, the (thread, tool_call_id) index).
    """
    clauses: list[str] = []
    params: list[Any] = []
    if scope.role:
        clauses.append(f"{message}.role = %s")
        params.append(scope.role)
    if scope.tools:
        names, names_params = _tool_names(scope)
        if argument is not None:
            clauses.append(f"lower({argument}.tool_name) IN ({names})")
            params += names_params
        else:
            clauses.append(
                f"({message}.role = %s AND {message}.tool_call_id <> '' AND EXISTS (SELECT 1 FROM "
                f"threadmem_toolargument tf WHERE tf.thread_id = {message}.thread_id "
                f"AND tf.tool_call_id = {message}.tool_call_id AND lower(tf.tool_name) IN ({names})))"
            )
            params += [Message.Role.TOOL, *names_params]
    return " AND ".join(clauses) or "1 = 1", params


def candidate_filter_sql(scope: SearchScope, alias: str) -> tuple[str, list[Any]]:
    """The same filters on a statement's candidate rows (``alias``: message_id, arg_id, role), for the branches
    that do not apply ``hit_filter_sql`` themselves (the newest messages, an owner's window)."""
    clauses: list[str] = []
    params: list[Any] = []
    if scope.role:
        clauses.append(f"{alias}.role = %s")
        params.append(scope.role)
    if scope.tools:
        names, names_params = _tool_names(scope)
        clauses.append(
            f"(CASE WHEN {alias}.arg_id <> 0 THEN EXISTS (SELECT 1 FROM threadmem_toolargument tf "
            f"WHERE tf.id = {alias}.arg_id AND lower(tf.tool_name) IN ({names})) "
            "ELSE EXISTS (SELECT 1 FROM threadmem_message tm JOIN threadmem_toolargument tf "
            "ON tf.thread_id = tm.thread_id AND tf.tool_call_id = tm.tool_call_id "
            f"WHERE tm.id = {alias}.message_id AND tm.role = %s AND tm.tool_call_id <> '' "
            f"AND lower(tf.tool_name) IN ({names})) END)"
        )
        params += [*names_params, Message.Role.TOOL, *names_params]
    return " AND ".join(clauses) or "1 = 1", params


class StatementFilters(NamedTuple):
    """A match statement's filters, each ``(sql, params)``: on content rows (``m``), on argument rows (``a``
    of ``m``), searchability (``m``) and the candidates (``u``)."""

    content: tuple[str, list[Any]]
    argument: tuple[str, list[Any]]
    searchable: tuple[str, list[Any]]
    candidates: tuple[str, list[Any]]


def statement_filters(scope: SearchScope, dialect: Dialect) -> StatementFilters:
    """Every filter a match statement takes, in one call (``match.py``)."""
    return StatementFilters(
        _and(scope_sql(scope, dialect, message="m"), hit_filter_sql(scope, message="m")),
        _and(scope_sql(scope, dialect, message="m", argument="a"), hit_filter_sql(scope, message="m", argument="a")),
        searchable_sql("m"),
        candidate_filter_sql(scope, "u"),
    )


def _and(*parts: tuple[str, list[Any]]) -> tuple[str, list[Any]]:
    return " AND ".join(sql for sql, _ in parts), [param for _, params in parts for param in params]
