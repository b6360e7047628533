"""The one rule for where a model-facing read goes, whichever entry point it comes in by.

Every entry point runs its model-facing reads through ``read(fn, caller)``: HTTP (REST and the console) by
``ReadRoutingMiddleware`` for the views marked ``model_facing_read``, the memory tools (MCP, agent turns) in
``tools.tool_answer``, the CLI's ``search_memory``. For the read's duration the ORM's reads (``ReplicaRouter``)
and the raw statements (``threadmem.domain.db.reading``, through Django's router) go to the database ``choose`` picks
for the caller; writes stay on the primary.

A search is a read whatever the method that carries it (REST's GET and POST alike): its tool-call log row is the
service's record of the call, not the caller's content, so it does not hold the caller's next reads back
(read-your-writes). The log is read on the primary (the tool-call log's views are not model-facing reads), where
the row is at once.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from threadmem.infrastructure import metrics
from threadmem.infrastructure.replicas import health, positions
from threadmem.infrastructure.replicas.state import Read, aliases, current

T = TypeVar("T")
V = TypeVar("V")
# The methods of a view marked ``model_facing_read`` without naming any.
READ_METHODS = frozenset({"GET", "HEAD"})


def read(fn: Callable[[], T], caller: Any = None, *, caller_of: Callable[[], Any] | None = None) -> T:
    """``fn()`` as a model-facing read of ``caller`` (a user's pk), or of whom ``caller_of()`` names once it
    names someone (a request that authenticates inside the read); until then, the primary.

    Inside a read, or a transaction on the primary (its rows are not committed), ``fn`` runs where it is.
    Without replicas it calls ``fn`` and nothing else: no statement, no cache lookup.
    """
    if not aliases() or current.get() is not None or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return fn()
    state = Read(caller_of=caller_of)
    token = current.set(state)
    try:
        if caller is not None:
            use_replica(caller)
        try:
            result = fn()
        except DatabaseError as error:
            if state.alias == DEFAULT_DB_ALIAS or not (isinstance(error, health.FAILURES) or state.failed):
                raise
            health.check(connections[state.alias])
            return _again(state, fn)
        if runs_again():
            return _again(state, fn)  # a part of it may have met the failure (a lane's thread) and said less
        return result
    finally:
        current.reset(token)


def alias() -> str:
    """The database the current read uses: the primary outside a read, and until the read's caller is known."""
    state = current.get()
    if state is None:
        return DEFAULT_DB_ALIAS
    if state.caller_of is not None and not state.naming:
        _name_caller(state)
    return state.alias


def use_replica(caller: Any) -> None:
    """Pick the current read's database for ``caller``."""
    state = current.get()
    if state is None or state.again:
        return
    state.caller_of = None
    state.alias, state.failed = choose(caller), False  # a kept connection found broken while choosing
    metrics.READS.labels(database=state.alias).inc()


def choose(caller: Any) -> str:
    """The database ``caller``'s read goes to: a replica that answers, is at most
    THREADMEM_REPLICA_MAX_LAG_SECONDS behind, has replayed the caller's last write and the fence, and loads its
    catalog's libraries; else the primary."""
    written = positions.required(caller)
    candidates = aliases()
    random.shuffle(candidates)
    reasons = set()
    for name in candidates:
        reason = health.passed_over(name, written)
        if reason is None:
            return name
        reasons.add(reason)
    reason = next((reason for reason in ("writes", "lag", "libraries") if reason in reasons), "down")
    metrics.READ_FALLBACKS.labels(reason=reason).inc()
    return DEFAULT_DB_ALIAS


def runs_again() -> bool:
    """Whether the current read met a replica's failure and runs again on the primary, as ``read`` decides after
    it: what it answers is dropped, so its tool-call log row is not written (the run on the primary writes one)."""
    state = current.get()
    if state is None or state.alias == DEFAULT_DB_ALIAS:
        return False
    if state.rerun is None:
        state.rerun = state.failed or health.is_down(state.alias)
    return state.rerun


def model_facing_read(view: V | None = None, *, methods: Iterable[str] = READ_METHODS) -> Any:
    """Mark a view (a function, or a class and its subclasses) whose ``methods`` are model-facing reads: the
    middleware runs them through ``read`` for the request's user. ``methods=()`` unmarks a subclass."""

    def mark(marked: V) -> V:
        marked.model_facing_reads = frozenset(methods)  # type: ignore[attr-defined]
        return marked

    return mark if view is None else mark(view)


def reads(view: Any, method: str) -> bool:
    """Whether ``method`` on ``view`` (as URL resolution gives it) is a model-facing read."""
    marked = getattr(view, "model_facing_reads", None)
    if marked is None:  # a class-based view: as_view() names its class
        marked = getattr(getattr(view, "view_class", None), "model_facing_reads", frozenset())
    return method in marked


def _name_caller(state: Read) -> None:
    state.naming = True  # what naming the caller reads (a session) goes to the primary
    try:
        caller = state.caller_of() if state.caller_of is not None else None
    finally:
        state.naming = False
    if caller is not None:
        use_replica(caller)


def _again(state: Read, fn: Callable[[], T]) -> T:
    metrics.READ_FALLBACKS.labels(reason="failed").inc()
    metrics.READS.labels(database=DEFAULT_DB_ALIAS).inc()
    state.alias, state.failed, state.again, state.rerun = DEFAULT_DB_ALIAS, False, True, None
    state.caller_of = None
    return fn()
