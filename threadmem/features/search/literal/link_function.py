"""PostgreSQL: ``threadmem_hit_link``, the lookups of ``filter_sql.link_sql`` as a PL/pgSQL function, created from this
code by apps.py after every migration, so it never drifts from ``filter_sql.searchable_sql``.

The same statements, planned once per connection (PL/pgSQL caches its
plans) instead of with every search: inline, their planning cost more than
the rest of a rare term's match (docs/search.md, "Tool links").
tests/search/test_tool_links.py holds its answers equal to the inline SQL's.
"""

from __future__ import annotations

from typing import Any

from threadmem.features.search.literal.filter_sql import call_arguments_sql
from threadmem.features.search.shared_sql import searchable_sql
from threadmem.models import Message


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    return "'" + str(value).replace("'", "''") + "'"


def _inlined(sql: str, params: list[Any]) -> str:
    return sql.replace("%s", "{}").format(*(_literal(param) for param in params))


def link_function_sql() -> str:
    """The function's ``CREATE OR REPLACE`` statement."""
    result_searchable = _inlined(*searchable_sql("lr"))
    call_searchable = _inlined(*searchable_sql("lc"))
    tool, assistant = _literal(Message.Role.TOOL), _literal(Message.Role.ASSISTANT)
    return f"""
CREATE OR REPLACE FUNCTION threadmem_hit_link(
    p_message_id bigint, p_arg_id bigint, p_cap_threads bigint[], p_cap_seqs bigint[]
) RETURNS text[] LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
    v_tool text;
    v_ids text;
    v_arguments text;
BEGIN
    IF p_arg_id <> 0 THEN
        SELECT la.tool_name, (
            SELECT string_agg(CAST(lr.id AS text) || ':' || char_length(lr.content), ',') FROM threadmem_message lr
            WHERE la.tool_call_id <> '' AND lr.thread_id = la.thread_id AND lr.tool_call_id = la.tool_call_id
            AND lr.tool_call_id <> '' AND lr.role = {tool} AND {result_searchable}
            AND NOT EXISTS (SELECT 1 FROM unnest(p_cap_threads, p_cap_seqs) AS c(t, s)
                            WHERE lr.thread_id = c.t AND lr.seq > c.s)),
            {call_arguments_sql("postgresql", "la.message_id", "la.call_index")}
        INTO v_tool, v_ids, v_arguments FROM threadmem_toolargument la WHERE la.id = p_arg_id;
        RETURN ARRAY[v_tool, v_ids, v_arguments];
    END IF;
    SELECT la.tool_name, CAST(lc.id AS text) INTO v_tool, v_ids
    FROM threadmem_message lt
    JOIN threadmem_toolargument la ON la.thread_id = lt.thread_id AND la.tool_call_id = lt.tool_call_id
    JOIN threadmem_message lc ON lc.id = la.message_id
    WHERE lt.id = p_message_id AND lt.role = {tool} AND lt.tool_call_id <> '' AND la.tool_call_id <> ''
    AND lc.role = {assistant} AND {call_searchable}
    AND NOT EXISTS (SELECT 1 FROM unnest(p_cap_threads, p_cap_seqs) AS c(t, s)
                    WHERE lc.thread_id = c.t AND lc.seq > c.s)
    ORDER BY la.message_id DESC, la.id LIMIT 1;
    RETURN ARRAY[v_tool, v_ids];
END
$$
"""
