"""Another session on the test database, as a second client or a concurrent process would hold one."""

from __future__ import annotations

import time

import psycopg
from django.db import connection


def other_session(*, autocommit: bool = False) -> psycopg.Connection:
    """A psycopg connection of its own to the database the tests run on (PostgreSQL only)."""
    params = connection.get_connection_params()
    return psycopg.connect(**{k: v for k, v in params.items() if k != "cursor_factory"}, autocommit=autocommit)


def lock_waiters() -> int:
    """Sessions on the test database waiting for a lock another holds (PostgreSQL)."""
    with other_session(autocommit=True) as session:
        return session.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()[0]


def wait_for_lock_waiters(count: int, *, seconds: float = 60.0) -> None:
    """Until ``count`` sessions wait for a lock: a step of a race built on purpose has reached its wait."""
    deadline = time.monotonic() + seconds
    while lock_waiters() < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"{count} session(s) never waited for a lock (now {lock_waiters()})")
        time.sleep(0.05)
