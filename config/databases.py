"""DATABASES from DATABASE_URL and DATABASE_REPLICA_URLS: the options each engine needs, a bad URL refused."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured


def databases(url: str, replica_urls: list[str]) -> dict[str, dict[str, Any]]:
    """The primary as ``default``, each replica as ``replicaN``."""
    try:
        # Health checks: a kept connection that a database restart broke is replaced at the start of the next
        # request instead of failing it.
        found = {"default": dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)}
    except Exception as exc:  # dj_database_url raises several types on bad URLs
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from exc

    if found["default"]["ENGINE"] == "django.db.backends.sqlite3":
        # IMMEDIATE transactions take the write lock up front, so concurrent
        # appends queue on the lock instead of failing with "database is locked".
        found["default"]["CONN_MAX_AGE"] = 0
        found["default"]["OPTIONS"] = {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
        # A file, not :memory:, so tests with several threads share one database;
        # per process, so parallel runs do not collide.
        found["default"]["TEST"] = {"NAME": str(Path(tempfile.gettempdir()) / f"threadmem-test-{os.getpid()}.sqlite3")}
    for number, replica_url in enumerate(replica_urls, start=1):
        try:
            replica = dj_database_url.parse(replica_url, conn_max_age=60, conn_health_checks=True)
        except Exception as exc:
            raise ImproperlyConfigured(f"DATABASE_REPLICA_URLS: entry {number} is not a valid URL: {exc}") from exc
        if replica["ENGINE"] != "django.db.backends.postgresql":
            raise ImproperlyConfigured("DATABASE_REPLICA_URLS: replicas are PostgreSQL streaming replicas")
        # Django's PostgreSQL backend, reporting a failure to connect as the replica's
        # (threadmem/infrastructure/replicas/).
        replica["ENGINE"] = "threadmem.infrastructure.replica_backend"
        # A replica that stops answering costs a read at most this long before it goes to the primary.
        replica["OPTIONS"] = {"connect_timeout": 2, **replica.get("OPTIONS", {})}
        replica["TEST"] = {"MIRROR": "default"}  # tests read the test database, not a copy of it
        found[f"replica{number}"] = replica
    return found
