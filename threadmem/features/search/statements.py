"""Where the search core runs its statements and hands their rows back: to the end, or within a time budget.

Every statement of the literal lane runs here (``fetch_rows``, ``within_budget``); its modules write SQL and
read rows, none executes. ``is_timeout`` is the one rule of what a cancelled statement looks like, for both
lanes (the ranked lane's deadline, ``semantic.py``).
"""

from __future__ import annotations

import os
from typing import Any

from django.db import DatabaseError

from threadmem.domain.db import reading as connection  # where reads go now (the primary outside a model-facing read)


def fetch_rows(statement: str, params: list[Any]) -> list[tuple]:
    """Run a statement to the end: its rows."""
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall()


# Statements with a time budget: a PostgreSQL statement timeout sent with the
# statement, in one round trip. A global search's index path may take
# SearchTuning.index_budget_ms before it falls back to the newest messages
# for recent_budget_ms (a term whose trigrams are all common leaves the
# trigram index thousands of large rows to re-check:
# docs/search.md, "The plan"). Those are an idle machine's milliseconds: a
# saturated one shares its cores, so a global statement's timeout is its
# budget times the load, capped at budget_scale_max times
# (docs/search.md, "Under load").


def host_runnable() -> int:
    """How many threads this host runs or could run right now (the kernel's count, /proc/loadavg's fourth
    field); 0 where there is no such file. The database often shares the host; where it does not, the
    database's own count of active statements decides (``_SCALED_TIMEOUT``)."""
    try:
        with open("/proc/loadavg", encoding="ascii") as loadavg:
            return int(loadavg.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 0


def is_timeout(error: DatabaseError) -> bool:
    """The statement timeout fired: a cancelled query, or a cancelled regex compilation.

    pg_trgm compiles the pattern into a trigram graph when the index scan
    starts, and reports a cancel that arrives then as an invalid regular
    expression ("operation cancelled"); the ``***=`` patterns of this module
    are always valid, so that error can only be the timeout.
    """
    try:
        from psycopg.errors import InvalidRegularExpression, QueryCanceled
    except ImportError:  # pragma: no cover - psycopg is a requirement
        return False
    cause = error.__cause__
    if isinstance(cause, InvalidRegularExpression):
        return "cancel" in str(cause)
    return isinstance(cause, QueryCanceled)


# The settings of a budgeted statement. No parallel workers: they start slower
# than these LIMITed scans finish, and do work the LIMIT throws away. No JIT:
# the planner prices every branch as if it read to its end, so on a large store
# it compiles expressions for longer than the statement runs (docs/search.md, "The plan").
_BUDGET_SETTINGS = (
    "SELECT set_config('statement_timeout', {timeout}, true), "
    "set_config('max_parallel_workers_per_gather', '0', true), set_config('jit', 'off', true)"
)
_FIXED_TIMEOUT = "%s"
# A load-scaled budget: the budget times the load, at least 1 and at most the
# cap; the load is the larger of the statements active in the database (this
# one included) and the threads runnable on the web host, per CPU. Computed
# by the server, in the same round trip.
_SCALED_TIMEOUT = (
    "(%s::float8 * least(%s::float8, greatest(1.0, greatest(%s::float8, "
    "(SELECT count(*) FROM pg_stat_activity WHERE state = 'active')) / %s::float8)))::bigint::text"
)
_SAVEPOINT = "threadmem_search_budget"


def within_budget(
    statement: str, params: list[Any], budget_ms: int, *, scaled: tuple[int, int] | None = None
) -> list[tuple] | None:
    """Run ``statement`` with a statement timeout, in one round trip; None when it ran out of time.

    ``scaled``: ``(max_times, db_cpus)``: ``budget_ms`` is an idle machine's,
    multiplied by the load as the statement starts, at most ``max_times``,
    the load counted per ``db_cpus`` (the database's CPUs; 0: this host's)
    (the comment above); None: milliseconds on the clock.

    The settings, the statement and what follows it go as one query string
    (Django's psycopg cursor binds parameters client-side and sends it with
    the simple query protocol, which runs several statements). Outside a
    transaction the server runs them as one implicit transaction, so the
    transaction-local settings end with it. Inside a caller's transaction a
    savepoint wraps them and is rolled back after the statement (which only
    reads), which gives the caller's settings back; after a timeout that
    rollback is one more round trip.

    A timer that fires after the statement's last check for interrupts is
    reported by PostgreSQL at the next command. That command is the rollback
    to the savepoint, or ``SELECT 1`` outside a transaction: either way part
    of this query string, so such a late timeout counts as running out of
    time here instead of failing the caller's next statement.
    """
    nested = not connection.get_autocommit()
    if scaled is not None:
        budget_settings = _BUDGET_SETTINGS.format(timeout=_SCALED_TIMEOUT)
        max_times, db_cpus = scaled
        budget_params = [budget_ms, max_times, host_runnable(), db_cpus or os.cpu_count() or 1]
    else:
        budget_settings = _BUDGET_SETTINGS.format(timeout=_FIXED_TIMEOUT)
        budget_params = [str(budget_ms)]
    if nested:
        batch = (
            f"SAVEPOINT {_SAVEPOINT}; {budget_settings}; {statement}; "
            f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}; RELEASE SAVEPOINT {_SAVEPOINT}"
        )
        before = 2  # the savepoint, the settings
    else:
        batch = f"{budget_settings}; {statement}; SELECT 1"
        before = 1  # the settings
    with connection.cursor() as cursor:
        try:
            cursor.execute(batch, [*budget_params, *params])
        except DatabaseError as error:
            if not is_timeout(error):
                raise
            if nested:
                cursor.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}; RELEASE SAVEPOINT {_SAVEPOINT}")
            return None
        for _ in range(before):
            cursor.nextset()
        return cursor.fetchall()
