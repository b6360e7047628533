"""Where a global answer's ranked results live: one line per thread, so that the model can search it alone.

A hit from another session names its channel; the line says what that thread
is (its title, its first prompt) and when it ran, and how to call again with
its channel (``share.fit`` lists the lines of the threads it shows).
"""

from __future__ import annotations

from threadmem.domain.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.features.search.hit_entries import one_line
from threadmem.features.search.shared_sql import in_ids, searchable_sql

HEAD = 'Threads of these results (call again with channel="…" to search one alone):'
TITLE_CHARS = 60
PROMPT_CHARS = 100
# The first prompt: the thread's first user message that a search may show.
_SQL = (
    "SELECT t.id, t.channel, t.title, t.created_at, t.last_activity_at, {project}"
    "(SELECT substr(m.content, 1, %s) FROM threadmem_message m WHERE m.thread_id = t.id AND m.role = 'user' "
    "AND {searchable} ORDER BY m.seq LIMIT 1) FROM threadmem_thread t WHERE {threads}"
)


def thread_lines(thread_ids: list[int], *, with_project: bool = False) -> dict[int, str]:
    """Each thread's line: ``- channel="…" "title" first prompt: "…" (first day – last day)``; ``with_project``
    (a search within a project) names each thread's own project after its channel: a directory below the one asked
    for shows which."""
    if not thread_ids:
        return {}
    searchable, searchable_params = searchable_sql("m")
    threads, thread_params = in_ids(connection.vendor, "t.id", sorted(set(thread_ids)))
    with connection.cursor() as cursor:
        cursor.execute(
            # The project's column only when named: the statement without one stays as it was.
            _SQL.format(searchable=searchable, threads=threads, project="t.project, " if with_project else ""),
            [PROMPT_CHARS + 1, *searchable_params, *thread_params],
        )
        rows = cursor.fetchall()
    if not with_project:
        return {thread_id: _line(*row) for thread_id, *row in rows}
    return {thread_id: _line(*row, prompt, project=project) for thread_id, *row, project, prompt in rows}


def _line(channel: str, title: str, created, last, prompt: str | None, *, project: str | None = None) -> str:
    parts = [f'- channel="{one_line(channel)}"']
    if project is not None:
        parts.append(f'project="{one_line(project)}"')
    if title and title != channel:
        parts.append(f'"{_cut(one_line(title), TITLE_CHARS)}"')
    if prompt:
        parts.append(f'first prompt: "{_cut(one_line(prompt), PROMPT_CHARS)}"')
    parts.append(f"({_day(created)} – {_day(last)})")
    return " ".join(parts)


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _day(value) -> str:
    return str(value)[:10]  # a datetime (PostgreSQL) or its ISO text (SQLite)
