"""What a search may look at: one thread with its ancestry, or every readable thread.

The scope is resolved once per call (one statement at most) and handed to both parts
of the search, so the literal and the semantic part apply the same rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q, QuerySet

from threadmem.domain.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.domain.selectors import ScopePart, channel_holder, is_operator, scope_filter
from threadmem.errors import InvalidInput, NotFound
from threadmem.lib.projects import project_below
from threadmem.models import Message, searchable_q

# The channel a caller passes to search every thread they may read (as if they passed none).
GLOBAL_CHANNEL = "*"
# Forks of forks: far deeper than any real chain, and a guard against a cycle.
FORK_DEPTH_MAX = 64


@dataclass(frozen=True)
class SearchScope:
    user: AbstractBaseUser
    operator: bool
    channel: str | None  # None: the global scope
    thread_id: int | None = None
    parts: tuple[ScopePart, ...] = ()
    # Global scope of a non-operator, resolved to the readable threads (their
    # own, not isolated; an operator's too when a project narrows the scope) so the literal SQL filters messages by
    # an indexed column instead of joining every thread. None for an operator's whole store: the
    # literal SQL leaves out the isolated threads itself (literal/filter_sql.py, scope_sql).
    readable_thread_ids: tuple[int, ...] | None = None
    # Thread scope, and a non-operator's global scope: an upper bound of the
    # bytes of text in it (the threads' running totals,
    # models.Generation.visible_chars). The literal part on PostgreSQL scans a
    # scope this small instead of asking the trigram index.
    visible_bytes: int = 0
    # search_memory's filters (contract §9): only hits of these tools' calls and results (names, any case), and
    # only messages of this role. The literal part applies them (literal/filter_sql.py, role_tool_sql).
    tools: tuple[str, ...] = ()
    role: str | None = None
    # search_memory's project (docs/search.md, "Project scope"): a global scope holds only the project's threads
    # (``readable_thread_ids``, for operators too); a thread scope was checked to be in it. None: every project.
    project: str | None = None
    # The global scope (``channel`` None), set once: plain data for every branch the literal part writes.
    is_global: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_global", self.channel is None)

    def q(self, prefix: str = "") -> Q:
        """The rows search may show in this scope; ``prefix`` reaches the message (``message__``).

        The filter every path applies: ``messages()`` here and the semantic
        retriever (``embeddings/retrieve.py``) use it as it is; the literal
        part's SQL mirrors it (``literal/filter_sql.py``: ``searchable_sql``/``scope_sql``) and
        the tests pin the paths together.
        """
        condition = searchable_q(prefix)
        if self.is_global:
            condition &= Q(**{f"{prefix}thread__isolated": False})
            if not self.operator:
                condition &= Q(**{f"{prefix}thread__owner": self.user})
            if self.project is not None:
                # The project's threads as resolve_scope found them (project_sql): one rule, one spelling.
                condition &= Q(**{f"{prefix}thread_id__in": self.readable_thread_ids or ()})
            return condition
        return condition & scope_filter(list(self.parts), prefix=prefix)

    def messages(self) -> QuerySet[Message]:
        """The messages search may show in this scope."""
        return Message.objects.filter(self.q())


_CHAIN_SQL = f"""
WITH RECURSIVE chain(root, depth, thread_id, owner_id, isolated, parent_id, fork_message_id, max_seq) AS (
    SELECT t.id, 0, t.id, t.owner_id, t.isolated, t.parent_id, t.fork_message_id, CAST(NULL AS bigint)
    FROM threadmem_thread t WHERE t.channel = %s AND (t.owner_id = %s OR %s)
    UNION ALL
    SELECT c.root, c.depth + 1, p.id, p.owner_id, p.isolated, p.parent_id, p.fork_message_id,
           (SELECT f.seq FROM threadmem_message f WHERE f.id = c.fork_message_id)
    FROM chain c JOIN threadmem_thread p ON p.id = c.parent_id
    WHERE c.depth < {FORK_DEPTH_MAX}
)
SELECT root, depth, thread_id, owner_id, isolated, max_seq,
       (SELECT coalesce(sum(g.visible_chars), 0) FROM threadmem_generation g WHERE g.thread_id = chain.thread_id),
       (SELECT u.username FROM auth_user u WHERE u.id = chain.owner_id AND chain.depth = 0)
FROM chain ORDER BY root, depth
"""


# A non-operator's global scope: their threads that are not isolated, each with its running total.
# Raw like _CHAIN_SQL: it runs with every global search, and building it through the ORM cost more than running it.
_OWNED_SQL = """
SELECT t.id, (SELECT coalesce(sum(g.visible_chars), 0) FROM threadmem_generation g WHERE g.thread_id = t.id)
FROM threadmem_thread t WHERE t.owner_id = %s AND NOT t.isolated
"""


# Every thread but the isolated ones (an operator's global scope), when a project narrows it to a few.
_UNISOLATED_SQL = """
SELECT t.id, (SELECT coalesce(sum(g.visible_chars), 0) FROM threadmem_generation g WHERE g.thread_id = t.id)
FROM threadmem_thread t WHERE NOT t.isolated
"""


def project_sql(project: str, alias: str = "t") -> tuple[str, list[object]]:
    """A thread (alias ``alias``) is in ``project``: its project is that path or a path below it.

    Compared with ``substr``, not ``LIKE``: SQLite's LIKE ignores case, and a path's ``%`` or ``_`` are plain.
    """
    below = project_below(project)
    if not below:  # only a project's threads match: none is named by ""
        return f"{alias}.project = %s AND {alias}.project <> ''", [project]
    places = ", ".join(["%s"] * len(below))
    return (
        f"({alias}.project = %s OR substr({alias}.project, 1, %s) IN ({places}))",
        [project, len(below[0]), *below],
    )


class ChainRow(NamedTuple):
    """One thread of a channel's fork chain (``_CHAIN_SQL``), the channel's own first."""

    root: int  # the thread on the channel this chain starts from (an operator may find several owners' ones)
    depth: int
    thread_id: int
    owner_id: int
    isolated: bool
    max_seq: int | None  # the fork point in this ancestor; None for the channel's own thread
    visible_bytes: int
    owner_name: str | None  # the channel's own thread only


def resolve_scope(*, user: AbstractBaseUser, channel: str | None, project: str | None = None) -> SearchScope:
    """The scope of a search: ``channel`` None (or ``*``) is the global scope.

    A thread the caller may not read answers NotFound, like one that does not
    exist. An isolated ancestor is left out of a fork's scope: isolation hides
    a thread from every scope but its own channel. ``project``: the global
    scope holds only that project's threads; a channel outside it is refused
    (InvalidInput), its ancestors come with it as they are.
    """
    operator = is_operator(user)
    if channel is None or channel == GLOBAL_CHANNEL:
        if operator and project is None:
            return SearchScope(user=user, operator=True, channel=None)
        # The running totals come in the same statement: an owner's store small enough is read whole, like a thread.
        sql, params = (_UNISOLATED_SQL, []) if operator else (_OWNED_SQL, [user.pk])
        if project is not None:
            condition, condition_params = project_sql(project)
            sql, params = f"{sql.rstrip()} AND {condition}", [*params, *condition_params]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            readable = cursor.fetchall()
        return SearchScope(
            user=user,
            operator=operator,
            channel=None,
            readable_thread_ids=tuple(thread_id for thread_id, _ in readable),
            visible_bytes=sum(int(visible) for _, visible in readable),
            project=project,
        )
    with connection.cursor() as cursor:
        cursor.execute(_CHAIN_SQL, [channel, user.pk, operator])
        chain = [ChainRow._make(row) for row in cursor.fetchall()]
    if not chain:
        raise NotFound(f"thread {channel!r} not found", field="channel")
    holders = [(row.root, row.owner_id, row.owner_name or "") for row in chain if row.depth == 0]
    if len(holders) > 1:
        root = channel_holder(channel=channel, holders=holders, prefer_owner_id=user.pk)
        chain = [row for row in chain if row.root == root]
    kept = [row for row in chain if row.depth == 0 or not row.isolated]
    parts = tuple(ScopePart(thread_id=row.thread_id, max_seq=row.max_seq) for row in kept)
    if project is not None:
        _check_in_project(channel=channel, thread_id=chain[0].thread_id, project=project)
    return SearchScope(
        user=user,
        operator=operator,
        channel=channel,
        thread_id=chain[0].thread_id,
        parts=parts,
        visible_bytes=sum(int(row.visible_bytes) for row in kept),
        project=project,
    )


def _check_in_project(*, channel: str, thread_id: int, project: str) -> None:
    """A channel outside ``project`` is refused, not searched empty: "no hits" would read as "never happened"."""
    condition, params = project_sql(project)
    with connection.cursor() as cursor:
        sql = f"SELECT t.project FROM threadmem_thread t WHERE t.id = %s AND NOT ({condition})"
        cursor.execute(sql, [thread_id, *params])
        outside = cursor.fetchone()
    if outside is not None:
        where = f"in project {outside[0]!r}" if outside[0] else "in no project"
        raise InvalidInput(
            f"thread {channel!r} is {where}, not {project!r}: pass that project, or an empty project to search it",
            field="project",
        )
