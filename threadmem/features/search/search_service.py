"""search_memory: validate, resolve the scope, run both parts concurrently, merge, log."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from threadmem.domain.scope import resolve_scope
from threadmem.domain.services import CHANNEL_MAX_CHARS  # the channel grammar's (services._check_channel)
from threadmem.errors import InvalidInput
from threadmem.features.search import ranked, semantic
from threadmem.features.search.answer_caps import QUERY_MAX_CHARS
from threadmem.features.search.answer_layout import header_lines, merge, semantic_room
from threadmem.features.search.hits import Coverage, Hit, MatchedBy
from threadmem.features.search.literal.literal_search import literal_search
from threadmem.features.search.log import logged_call
from threadmem.features.search.page_cursor import cursor_read, cursor_sign
from threadmem.features.search.search_metrics import search_observed
from threadmem.lib.projects import PROJECT_MAX_CHARS, project_normal
from threadmem.lib.terms import TRIGRAM_RUN, has_trigram_run, query_terms
from threadmem.lib.validate import check_text
from threadmem.models import Message, ToolCall

# The tool filter: at most this many names, each a stored tool name's length at most.
TOOL_FILTER_MAX_NAMES = 20
TOOL_NAME_MAX_CHARS = 255
ROLES = tuple(Message.Role.values)


@dataclass
class SearchResult:
    text: str  # exactly what the model reads
    literal_hits_total: int
    literal_hits_shown: int
    truncated: bool  # the whole result was cut at THREAD_SEARCH_MAX_CHARS
    hits: list[Hit] = field(default_factory=list)
    total_is_lower_bound: bool = False  # global scope: counting stopped at SEARCH_COUNT_LIMIT, or early
    stopped_early: bool = False  # global scope: not everything was searched in time (bounded.COVERAGE_LINES)
    coverage: Coverage = Coverage.ALL  # the global scope may cover less (hits.Coverage)
    matched_by: MatchedBy = MatchedBy.NONE  # the literal part's match statement
    next_cursor: str | None = None  # the cursor of the next page (page_cursor.py); None when nothing is left


def _check_query(query: Any) -> str:
    if query is None:  # check_text reads None as "": a missing query is not an empty one
        raise InvalidInput("query must be a string", field="query")
    query = check_text(query, name="query", allow_empty=False)
    if len(query) > QUERY_MAX_CHARS:
        raise InvalidInput(
            f"query is {len(query)} characters; the limit is {QUERY_MAX_CHARS}: search for a distinctive part of it",
            field="query",
        )
    return query


def _check_channel(channel: Any) -> str | None:
    if channel is None:
        return None
    channel = check_text(channel, name="channel")
    if not channel.strip():
        return None
    if len(channel) > CHANNEL_MAX_CHARS:
        raise InvalidInput(f"channel is longer than {CHANNEL_MAX_CHARS} characters", field="channel")
    return channel


def _check_project(project: Any) -> str | None:
    """``project``: a path as the thread recorded it (trailing separators dropped); None or blank: every project."""
    if project is None:
        return None
    project = check_text(project, name="project")
    if not project.strip():
        return None
    if len(project) > PROJECT_MAX_CHARS:
        raise InvalidInput(f"project is longer than {PROJECT_MAX_CHARS} characters", field="project")
    return project_normal(project.strip())


def _check_tools(tool: Any) -> tuple[str, ...]:
    """``tool``: one tool name or a list of them (any case); None or empty: every hit."""
    names = [tool] if isinstance(tool, str) else tool if isinstance(tool, list) else None
    if tool is None:
        return ()
    if names is None or not all(isinstance(name, str) for name in names):
        raise InvalidInput("tool must be a tool name (Read, Bash, ...) or a list of tool names", field="tool")
    checked = [check_text(name, name="tool").strip() for name in names]
    checked = list(dict.fromkeys(name for name in checked if name))
    if len(checked) > TOOL_FILTER_MAX_NAMES:
        raise InvalidInput(f"tool names at most {TOOL_FILTER_MAX_NAMES} tools at once", field="tool")
    if any(len(name) > TOOL_NAME_MAX_CHARS for name in checked):
        raise InvalidInput(f"a tool name is at most {TOOL_NAME_MAX_CHARS} characters", field="tool")
    return tuple(checked)


def _check_role(role: Any) -> str | None:
    if role is None or role == "":
        return None
    if not isinstance(role, str) or role.strip() not in ROLES:
        raise InvalidInput(f"role must be one of {', '.join(ROLES)}; got {role!r}", field="role")
    return role.strip()


def _terms(query: str, *, global_scope: bool) -> list[str]:
    terms = query_terms(query)
    if not terms:
        raise InvalidInput("query has nothing to search for once its surrounding quotes are stripped", field="query")
    if global_scope:
        # Without a run of three letters or digits the trigram index cannot
        # narrow a term, and one search would read every message.
        if not has_trigram_run(terms[0]):
            raise InvalidInput(
                f"a search without channel needs at least {TRIGRAM_RUN} letters or digits in a row in the query; "
                "pass channel to search one thread for shorter text",
                field="query",
            )
        terms = [terms[0], *(term for term in terms[1:] if has_trigram_run(term))]
    return terms


def search_memory(
    *,
    user: AbstractBaseUser,
    query: str,
    channel: str | None = None,
    cursor: str | None = None,
    tool: str | list[str] | None = None,
    role: str | None = None,
    project: str | None = None,
    surface: str = "api",
) -> SearchResult:
    """The bounded pull interface (contract §2, §9). Logs one ToolCall row, refused calls included.

    ``cursor``: the ``next_cursor`` of an earlier answer to the same caller, query and channel; the answer
    then lists the hits after the ones that answer listed. ``tool`` (a name or a list) and ``role`` keep only
    the hits of those tools' calls and results, and of messages of that role; a cursor is bound to them too.
    ``project`` keeps the threads of that project (or a directory below it); a channel outside it is refused.
    """
    arguments: dict[str, Any] = {"query": query, "channel": channel}
    for name, value in (("cursor", cursor), ("tool", tool), ("role", role), ("project", project)):
        if value is not None:
            arguments[name] = value
    with logged_call(tool=ToolCall.Tool.SEARCH_MEMORY, user=user, surface=surface, arguments=arguments) as call:
        query = _check_query(query)
        channel = _check_channel(channel)
        tools, role, project = _check_tools(tool), _check_role(role), _check_project(project)
        scope = replace(resolve_scope(user=user, channel=channel, project=project), tools=tools, role=role)
        call.thread_id = scope.thread_id
        terms = _terms(query, global_scope=scope.is_global)
        # The project joins the filters only when given: a cursor of a search without one reads as before.
        filters = (tools, role) if project is None else (tools, role, project)
        bound = {"user_id": user.pk, "channel": scope.channel, "query": query, "filters": filters}
        start = cursor_read(cursor, **bound) if cursor is not None else None
        lane = semantic.start(scope=scope, query=query, terms=terms)
        literal = literal_search(
            scope=scope,
            terms=terms,
            start=start,
            sign=lambda position: cursor_sign(position, **bound),
            described_max_chars=ranked.DESCRIBED_LITERAL_MAX_CHARS if lane.ranked else None,
        )
        header = header_lines(
            channel=scope.channel,
            project=project,
            query=query,
            total=literal.total,
            shown=literal.shown,
            bounded=literal.bounded,
            stopped_early=literal.stopped_early,
        )
        listed = {hit.message_id for hit in literal.hits}
        shared = ranked.fit(lane.text(), room=semantic_room(header=header, literal=literal.text), listed=listed)
        text, truncated = merge(header=header, literal=literal.text, semantic=shared)
        search_observed(scope=scope, literal=literal, started=call.started)
    result = SearchResult(
        text=text,
        literal_hits_total=literal.total,
        literal_hits_shown=literal.shown,
        truncated=truncated,
        hits=literal.hits,
        total_is_lower_bound=literal.bounded or literal.stopped_early,
        stopped_early=literal.stopped_early,
        coverage=literal.coverage,
        matched_by=literal.matched_by,
        next_cursor=literal.next_cursor,
    )
    call.log(
        hits_total=result.literal_hits_total,
        hits_shown=result.literal_hits_shown,
        chars_returned=len(text),
        truncated=truncated,
        plan=literal.executed,
    )
    return result
