"""Model-facing reads on PostgreSQL streaming replicas (``DATABASE_REPLICA_URLS``; docs/scaling.md).

A surface runs a model-facing read (search, the audit read, context, listings)
through ``read(fn, caller)``. It picks a database for the caller, and for the
read's duration the ORM's reads (``ReplicaRouter``) and the search's raw
statements (``connection`` below, which those modules import instead of
Django's) go there. Writes, and the search's log row (``search/log.py`` writes
on Django's own connection), stay on the primary. Without replicas ``read``
calls ``fn`` and nothing else: no statement, no cache lookup, no router.

A replica is read only when
- it answers: a read that meets a broken connection runs again on the
  primary, and the replica is checked afresh by the next read (a restart
  breaks kept connections too), left out for ``DOWN_SECONDS`` when it does not
  answer. A connection that fails to open, in any thread of a read (the
  ranked lane's too, which answers for itself rather than raising), leaves it
  out so and runs the read again on the primary: its backend
  (``threadmem/replica_backend``) reports it here (``unreachable``);
- it is at most ``THREADMEM_REPLICA_MAX_LAG_SECONDS`` behind, checked at most
  every ``STATUS_SECONDS`` per process: caught up when it has replayed the
  primary's WAL position, else behind by no more than the age of the newest
  primary position it has replayed (positions sampled here) or of the last
  transaction it replayed, whichever is younger (the second alone grows on an
  idle primary, and is unknown after a restart);
- it has replayed the caller's last write: a surface calls ``wrote(caller)``
  after a write, which keeps the primary's WAL position in the cache (Redis:
  shared by every process), and a replica short of it is passed over;
- it has replayed the last isolation or deletion (``fence()``), whoever reads;
- its host can load the libraries of the extensions in its catalog (pgvector,
  threadmem_search), probed every ``LIBRARIES_SECONDS`` per process. A
  streaming replica has its primary's catalog whatever its host has
  installed: the vector column, the extension's functions and the indexes of
  its operator class are there, and reading any of them needs the library, so
  a replica without one has no path that needs none; it is passed over. A
  read that meets a missing library anyway (one removed since the probe) runs
  again on the primary, as a failure does.

What the database offers search (the extension, the token index, pgvector) is
probed and kept per connection, so each database answers through what it has.
"""

from __future__ import annotations

import logging
import random
import time
from collections import deque
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, DatabaseError, InterfaceError, OperationalError, connections, transaction
from django.db.backends.signals import connection_created
from django.utils.connection import ConnectionProxy

from threadmem import metrics

T = TypeVar("T")
logger = logging.getLogger(__name__)

PREFIX = "replica"  # config/settings.py names them replica1, replica2, ...
STATUS_SECONDS = 1.0
DOWN_SECONDS = 5.0
# How long a caller's last write is remembered: a replica further behind than that is not read anyway.
WRITTEN_SECONDS = 3600
_WRITTEN_KEY = "threadmem:replicas:written:{}"
# A change that takes something out of every reader's sight (an isolation, a deletion): no replica serves anyone
# until it has replayed it.
_FENCE_KEY = "threadmem:replicas:fence"
_FAILURES = (OperationalError, InterfaceError)
# How long a replica's host is known to load (or not) the libraries its catalog names.
LIBRARIES_SECONDS = 60.0
# A statement that loads each extension's library, run where the catalog has the extension.
_LIBRARY_PROBES = {
    "vector": "SELECT '[1]'::vector",
    "threadmem_search": "SELECT threadmem_icontains('', '')",
}
# A library that is not there (undefined_file), or lacks a function its catalog names (undefined_function: an
# older build): the host's, not the read's.
_MISSING_LIBRARY = ("58P01", "42883")


@dataclass
class _Read:
    alias: str = DEFAULT_DB_ALIAS
    failed: bool = False  # a replica's connection broke during the read (any thread of it)
    again: bool = False  # the read runs again on the primary
    rerun: bool | None = None  # decided once (runs_again): the log row and the retry agree


@dataclass(frozen=True)
class _Status:
    checked: float  # monotonic
    replayed: float  # WAL position (inf: not in recovery)
    lag: float
    down_until: float = 0.0


_read: ContextVar[_Read | None] = ContextVar("threadmem_replica_read", default=None)
_statuses: dict[str, _Status] = {}
# Per replica: (monotonic time until which it holds, whether its host loads its catalog's libraries).
_libraries: dict[str, tuple[float, bool]] = {}
# The primary's WAL positions as sampled (monotonic time, position), newest last; the newest is kept
# STATUS_SECONDS.
_primary: deque[tuple[float, int]] = deque(maxlen=600)


def aliases() -> list[str]:
    return [name for name in connections.settings if name.startswith(PREFIX)]


def alias() -> str:
    """The database the current read uses: the primary outside a read."""
    state = _read.get()
    return DEFAULT_DB_ALIAS if state is None else state.alias


class _ReadConnection(ConnectionProxy):
    """``django.db.connection`` for the database the current read uses."""

    @property
    def _alias(self) -> str:  # type: ignore[override]
        return alias()


connection: Any = _ReadConnection(connections, DEFAULT_DB_ALIAS)


class ReplicaRouter:
    """The ORM's half (DATABASE_ROUTERS, set only with replicas): reads where the current read goes, writes on
    the primary."""

    def db_for_read(self, model: Any, **hints: Any) -> str:
        return alias()

    def db_for_write(self, model: Any, **hints: Any) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # the same rows on every database

    def allow_migrate(self, db: str, app_label: str, model_name: str | None = None, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS


def read(fn: Callable[[], T], caller: Any = None) -> T:
    """``fn()`` as a model-facing read of ``caller`` (a user's pk; None: named later by ``use_replica``).

    Inside a read, or a transaction on the primary (its rows are not committed), ``fn`` runs where it is.
    """
    if not aliases() or _read.get() is not None or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return fn()
    state = _Read()
    token = _read.set(state)
    try:
        if caller is not None:
            use_replica(caller)
        try:
            result = fn()
        except DatabaseError as error:
            if state.alias == DEFAULT_DB_ALIAS or not (isinstance(error, _FAILURES) or state.failed):
                raise
            _check(connections[state.alias])
            return _again(state, fn)
        if runs_again():
            return _again(state, fn)  # a part of it may have met the failure (a lane's thread) and said less
        return result
    finally:
        _read.reset(token)


def use_replica(caller: Any) -> None:
    """Pick the current read's database for ``caller`` (a surface that authenticates inside the read)."""
    state = _read.get()
    if state is None or state.again:
        return
    state.alias, state.failed = _choose(caller), False  # a kept connection found broken while choosing
    metrics.READS.labels(database=state.alias).inc()


def wrote(caller: Any) -> None:
    """``caller`` has just written: their next reads wait for a replica that replayed it (or use the primary)."""
    if caller is None or not aliases():
        return
    cache.set(_WRITTEN_KEY.format(caller), _insert_position(), WRITTEN_SECONDS)


def unreachable(name: str) -> None:
    """A connection to replica ``name`` failed to open: it is left out for DOWN_SECONDS, and the read it serves
    runs again on the primary (whichever thread of the read opened it)."""
    _mark_down(name)
    if (state := _read.get()) is not None and state.alias == name:
        state.failed = True


def runs_again() -> bool:
    """Whether the current read met a replica's failure and runs again on the primary, as ``read`` decides after
    it: what it answers is dropped, so its tool-call log row is not written (the run on the primary writes one)."""
    state = _read.get()
    if state is None or state.alias == DEFAULT_DB_ALIAS:
        return False
    if state.rerun is None:
        state.rerun = state.failed or _is_down(state.alias)
    return state.rerun


def fence() -> None:
    """Once the current transaction commits, every caller's reads wait for a replica that replayed it (or use the
    primary): isolated or deleted content is never read from a replica that still holds it."""
    if aliases():
        transaction.on_commit(_set_fence)


def _set_fence() -> None:
    position = _insert_position()
    if position > (cache.get(_FENCE_KEY) or 0):
        cache.set(_FENCE_KEY, position, WRITTEN_SECONDS)


def _insert_position() -> int:
    """The primary's WAL insert position: past the commit record even when commits are asynchronous."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_insert_lsn()::text")
        return _lsn(cursor.fetchone()[0])


def _again(state: _Read, fn: Callable[[], T]) -> T:
    metrics.READ_FALLBACKS.labels(reason="failed").inc()
    metrics.READS.labels(database=DEFAULT_DB_ALIAS).inc()
    state.alias, state.failed, state.again, state.rerun = DEFAULT_DB_ALIAS, False, True, None
    return fn()


def _choose(caller: Any) -> str:
    kept = cache.get_many([_FENCE_KEY, _WRITTEN_KEY.format(caller)] if caller is not None else [_FENCE_KEY])
    written = max(kept.values(), default=None)
    candidates = aliases()
    random.shuffle(candidates)
    reasons = set()
    for name in candidates:
        status = _status(name)
        if status.down_until > time.monotonic():
            reasons.add("down")
            continue
        if status.lag > settings.THREADMEM_REPLICA_MAX_LAG_SECONDS:
            reasons.add("lag")
            continue
        if written is not None and status.replayed < written:
            status = _status(name, fresh=True)
            if status.replayed < written:
                reasons.add("writes")
                continue
        try:
            connections[name].ensure_connection()  # kept open: nothing to do
            loads = _loads_libraries(name)
        except _FAILURES:
            _mark_down(name)
            reasons.add("down")
            continue
        if not loads:
            reasons.add("libraries")
            continue
        return name
    reason = next((reason for reason in ("writes", "lag", "libraries") if reason in reasons), "down")
    metrics.READ_FALLBACKS.labels(reason=reason).inc()
    return DEFAULT_DB_ALIAS


def _status(name: str, *, fresh: bool = False) -> _Status:
    now = time.monotonic()
    kept = _statuses.get(name)
    if kept is not None and kept.down_until > now:
        return kept
    if kept is not None and not fresh and not kept.down_until and now - kept.checked < STATUS_SECONDS:
        return kept  # a replica left out is checked again as soon as its time is up
    wrapper = connections[name]
    for attempt in range(2):
        kept = wrapper.connection is not None
        try:
            with wrapper.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_last_wal_replay_lsn()::text, "
                    "EXTRACT(EPOCH FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8"
                )
                replayed_text, since = cursor.fetchone()
            break
        except _FAILURES:
            # A kept connection may have broken with a restart since: a new one says whether it is down.
            if attempt or not kept:
                return _mark_down(name)
            wrapper.close()
    replayed = float("inf") if replayed_text is None else _lsn(replayed_text)
    lag = 0.0 if replayed >= _primary_position(now) else _behind(replayed, since, now)
    status = _statuses[name] = _Status(checked=now, replayed=replayed, lag=lag)
    metrics.REPLICA_LAG.labels(database=name).set(lag if lag != float("inf") else -1)
    return status


def _loads_libraries(name: str) -> bool:
    """Whether the replica's host loads the libraries of the extensions in its catalog (kept LIBRARIES_SECONDS)."""
    now = time.monotonic()
    kept = _libraries.get(name)
    if kept is not None and kept[0] > now:
        return kept[1]
    wrapper = connections[name]
    # On the driver's cursor, as search's capability probe: not one of a read's statements.
    with wrapper.wrap_database_errors, wrapper.connection.cursor() as cursor:
        cursor.execute("SELECT extname FROM pg_extension WHERE extname = ANY(%s)", [list(_LIBRARY_PROBES)])
        installed = sorted(extname for (extname,) in cursor.fetchall())
    missing = next((extname for extname in installed if not _loads(wrapper, extname)), None)
    if missing is not None:
        logger.warning("replica %s cannot load %s's library: its reads go elsewhere", name, missing)
    _libraries[name] = (now + LIBRARIES_SECONDS, missing is None)
    return missing is None


def _loads(wrapper: Any, extname: str) -> bool:
    try:
        with wrapper.wrap_database_errors, wrapper.connection.cursor() as cursor:
            cursor.execute(_LIBRARY_PROBES[extname])
    except DatabaseError as error:
        if isinstance(error, _FAILURES) and not _missing_library(error):
            raise  # the replica, not its library: down
        return False
    return True


def _missing_library(error: BaseException) -> bool:
    return getattr(error.__cause__, "sqlstate", None) in _MISSING_LIBRARY


def _primary_position(now: float) -> int:
    if _primary and now - _primary[-1][0] < STATUS_SECONDS:
        return _primary[-1][1]
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()::text")
        position = _lsn(cursor.fetchone()[0])
    _primary.append((now, position))
    return position


def _behind(replayed: float, since: float | None, now: float) -> float:
    """At most how many seconds behind a replica is that has replayed up to ``replayed``."""
    samples = list(_primary)  # a copy: other threads append
    sampled = next((now - at for at, position in reversed(samples) if position <= replayed), float("inf"))
    return max(0.0, min(sampled, float("inf") if since is None else since))


def _mark_down(name: str) -> _Status:
    now = time.monotonic()
    connections[name].close()
    metrics.REPLICA_LAG.labels(database=name).set(-1)
    status = _statuses[name] = _Status(checked=now, replayed=0, lag=float("inf"), down_until=now + DOWN_SECONDS)
    return status


def _is_down(name: str) -> bool:
    kept = _statuses.get(name)
    return kept is not None and kept.down_until > time.monotonic()


def _broken(wrapper: Any) -> bool:
    raw = wrapper.connection
    return raw is None or raw.closed or bool(getattr(raw, "broken", False))


def _check(wrapper: Any) -> None:
    """After an error on a replica: if its connection broke (a timeout leaves it whole), closed, and the replica
    checked afresh by the next read (down, or restarted since this connection was opened)."""
    if _broken(wrapper):
        wrapper.close()
        if not _is_down(wrapper.alias):  # left out on a failure to connect (unreachable): it stays out
            _statuses.pop(wrapper.alias, None)


def _watch(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
    try:
        return execute(sql, params, many, context)
    except DatabaseError as error:
        wrapper = context["connection"]
        if _missing_library(error):
            # Lost since the probe: the replica is passed over until probed again.
            _libraries[wrapper.alias] = (time.monotonic() + LIBRARIES_SECONDS, False)
        elif isinstance(error, _FAILURES) and _broken(wrapper):
            _check(wrapper)
        else:
            raise
        if (state := _read.get()) is not None:
            state.failed = True  # seen by the read's own thread too (a lane's thread shares the state)
        raise


def _watch_replica(sender: Any, connection: Any, **kwargs: Any) -> None:
    """Every replica connection, in whichever thread, reports a broken connection to the read it serves."""
    if connection.alias.startswith(PREFIX) and _watch not in connection.execute_wrappers:
        connection.execute_wrappers.append(_watch)


connection_created.connect(_watch_replica)


def _lsn(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)
