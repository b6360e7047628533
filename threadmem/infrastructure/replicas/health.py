"""Whether a replica can serve a read now: it answers, it is not too far behind, it has replayed what the read
needs, and its host loads the libraries its catalog names.

A replica's status is checked at most every ``STATUS_SECONDS`` per process: caught up when it has replayed the
primary's WAL position, else behind by no more than the age of the newest primary position it has replayed
(positions sampled here) or of the last transaction it replayed, whichever is younger (the second alone grows on
an idle primary, and is unknown after a restart). One that does not answer is left out for ``DOWN_SECONDS``.

A streaming replica has its primary's catalog whatever its host has installed: the vector column, the
extension's functions and the indexes of its operator class are there, and reading any of them needs the
library, so a replica without one has no path that needs none; it is passed over (probed every
``LIBRARIES_SECONDS`` per process).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, InterfaceError, OperationalError, connections
from django.db.backends.signals import connection_created

from threadmem.infrastructure import metrics
from threadmem.infrastructure.replicas.positions import lsn
from threadmem.infrastructure.replicas.state import PREFIX, current

logger = logging.getLogger(__name__)

STATUS_SECONDS = 1.0
DOWN_SECONDS = 5.0
FAILURES = (OperationalError, InterfaceError)
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


@dataclass(frozen=True)
class _Status:
    checked: float  # monotonic
    replayed: float  # WAL position (inf: not in recovery)
    lag: float
    down_until: float = 0.0


_statuses: dict[str, _Status] = {}
# Per replica: (monotonic time until which it holds, whether its host loads its catalog's libraries).
_libraries: dict[str, tuple[float, bool]] = {}
# The primary's WAL positions as sampled (monotonic time, position), newest last; the newest is kept
# STATUS_SECONDS.
_primary: deque[tuple[float, int]] = deque(maxlen=600)


def passed_over(name: str, written: int | None) -> str | None:
    """Why replica ``name`` cannot serve a read that needs WAL position ``written`` replayed (``down``, ``lag``,
    ``writes``, ``libraries``), or None: it can."""
    status = _status(name)
    if status.down_until > time.monotonic():
        return "down"
    if status.lag > settings.THREADMEM_REPLICA_MAX_LAG_SECONDS:
        return "lag"
    if written is not None and status.replayed < written:
        status = _status(name, fresh=True)
        if status.replayed < written:
            return "writes"
    try:
        connections[name].ensure_connection()  # kept open: nothing to do
        loads = _loads_libraries(name)
    except FAILURES:
        _mark_down(name)
        return "down"
    return None if loads else "libraries"


def unreachable(name: str) -> None:
    """A connection to replica ``name`` failed to open: it is left out for DOWN_SECONDS, and the read it serves
    runs again on the primary (whichever thread of the read opened it)."""
    _mark_down(name)
    if (state := current.get()) is not None and state.alias == name:
        state.failed = True


def is_down(name: str) -> bool:
    kept = _statuses.get(name)
    return kept is not None and kept.down_until > time.monotonic()


def check(wrapper: Any) -> None:
    """After an error on a replica: if its connection broke (a timeout leaves it whole), closed, and the replica
    checked afresh by the next read (down, or restarted since this connection was opened)."""
    if _broken(wrapper):
        wrapper.close()
        if not is_down(wrapper.alias):  # left out on a failure to connect (unreachable): it stays out
            _statuses.pop(wrapper.alias, None)


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
        except FAILURES:
            # A kept connection may have broken with a restart since: a new one says whether it is down.
            if attempt or not kept:
                return _mark_down(name)
            wrapper.close()
    replayed = float("inf") if replayed_text is None else lsn(replayed_text)
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
        if isinstance(error, FAILURES) and not _missing_library(error):
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
        position = lsn(cursor.fetchone()[0])
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


def _broken(wrapper: Any) -> bool:
    raw = wrapper.connection
    return raw is None or raw.closed or bool(getattr(raw, "broken", False))


def _watch(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
    try:
        return execute(sql, params, many, context)
    except DatabaseError as error:
        wrapper = context["connection"]
        if _missing_library(error):
            # Lost since the probe: the replica is passed over until probed again.
            _libraries[wrapper.alias] = (time.monotonic() + LIBRARIES_SECONDS, False)
        elif isinstance(error, FAILURES) and _broken(wrapper):
            check(wrapper)
        else:
            raise
        if (state := current.get()) is not None:
            state.failed = True  # seen by the read's own thread too (a lane's thread shares the state)
        raise


def _watch_replica(sender: Any, connection: Any, **kwargs: Any) -> None:
    """Every replica connection, in whichever thread, reports a broken connection to the read it serves."""
    if connection.alias.startswith(PREFIX) and _watch not in connection.execute_wrappers:
        connection.execute_wrappers.append(_watch)


connection_created.connect(_watch_replica)
