"""The database a read's raw SQL runs on: where Django's routers send the ORM's reads of the stored messages.

Raw statements use ``reading`` as they would Django's ``connection``, so they read the database the ORM's reads
of the same call read: a replica's during a model-facing read with DATABASE_REPLICA_URLS (docs/scaling.md), the
primary otherwise. Writes take Django's own ``connection``.
"""

from __future__ import annotations

from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils.connection import ConnectionProxy

from threadmem.infrastructure.replicas import runs_again
from threadmem.models import Message


def reading_alias() -> str:
    return router.db_for_read(Message)


def reading_connection() -> BaseDatabaseWrapper:
    """The connection (this thread's) to the database reads go to now."""
    return connections[reading_alias()]


class _ReadingConnection(ConnectionProxy):
    """``django.db.connection`` for the database reads go to now, resolved at each use."""

    @property
    def _alias(self) -> str:  # type: ignore[override]
        return reading_alias()


reading: Any = _ReadingConnection(connections, DEFAULT_DB_ALIAS)


def read_runs_again() -> bool:
    """Whether the current read's answer is dropped: its database failed mid-read and the read runs again on
    another. A record of the read (its tool-call log row) is then not written: one call, one row."""
    return runs_again()
