"""SQL both lanes of search write the same way: which messages a search may show (``searchable_sql``) and a
set of ids (``in_ids``, ``in_subquery``, ``ids_table``), each spelt for either database.

``searchable_sql`` is ``Message.objects.searchable()`` (``models.SEARCHABLE``) as SQL; tests/search/test_filters.py
holds every search path to the same rows as that definition. The literal lane's scope and filters build on these
(``literal/filter_sql.py``), and so do the ranked lane's reads and message_context_read.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from threadmem.models import Message


def searchable_sql(alias: str) -> tuple[str, list[Any]]:
    """``Message.objects.searchable()`` as SQL on message alias ``alias`` (tests pin the two together)."""
    return (
        f"{alias}.kind = %s AND {alias}.model_visible = %s AND {alias}.isolated = %s "
        f"AND {alias}.superseded_by_id IS NULL",
        [Message.Kind.MESSAGE, True, False],
    )


def in_ids(vendor: str, column: str, ids: Sequence[int]) -> tuple[str, list[Any]]:
    """``column`` is one of ``ids``, as one parameter whatever their number."""
    if vendor == "postgresql":
        return f"{column} = ANY(CAST(%s AS bigint[]))", [_array(ids)]
    return f"{column} IN (SELECT value FROM json_each(%s))", [json.dumps(list(ids))]


def ids_table(vendor: str, ids: Sequence[int]) -> tuple[str, list[Any]]:
    """``ids`` as a table ``wanted`` of one column ``id``, to join rows by their ids from: each row is then read by
    its index whatever the tables' sizes, where ``id = ANY(…)`` lets PostgreSQL hash a small store's whole joined
    table (docs/search.md, "The ranked lane's latency")."""
    if vendor == "postgresql":
        return "unnest(CAST(%s AS bigint[])) AS wanted(id)", [_array(ids)]
    return "(SELECT value AS id FROM json_each(%s)) AS wanted", [json.dumps(list(ids))]


def _array(ids: Sequence[int]) -> str:
    # One array literal: the driver quotes a string at once, where it would
    # adapt a list element by element (a caller's readable threads).
    return "{" + ",".join(str(int(i)) for i in ids) + "}"


def in_subquery(vendor: str, column: str, subquery: str) -> str:
    """``column`` is one of the values ``subquery`` selects."""
    if vendor == "postgresql":
        # The subquery runs once, as an array (an InitPlan), before the scan:
        # the planner keeps the plans it makes for a constant array (an IN
        # would become a hashed subplan, which reads a common word's rows by
        # id order: docs/search.md).
        return f"{column} = ANY(ARRAY({subquery}))"
    return f"{column} IN ({subquery})"
