"""The filters every literal statement shares: which messages search may show, and the scope's threads.

``searchable_sql`` is ``Message.objects.searchable()`` (``models.SEARCHABLE``) as SQL and
``scope_sql`` is ``SearchScope.q`` as SQL; tests/search/test_filters.py holds
every search path to the same rows as those definitions.
"""

from __future__ import annotations

from typing import Any

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
