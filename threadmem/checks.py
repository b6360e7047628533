"""Django system checks for what a deployment must know (``manage.py check``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register
from django.db import DatabaseError, connection

from threadmem.features.compaction.claim import hard_time_limit
from threadmem.infrastructure.fields import pgvector_in_use

REDIS_SCHEMES = ("redis://", "rediss://", "redis+socket://")


@register()
def pgvector_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """PostgreSQL without pgvector works, with the semantic part ranking every chunk exactly: say so."""
    if connection.vendor != "postgresql":
        return []
    try:
        in_use = pgvector_in_use(connection)
    except DatabaseError:  # no database yet: other commands report that themselves
        return []
    if in_use:
        return []
    return [
        Warning(
            "PostgreSQL without pgvector: the semantic part ranks every chunk of a scope exactly, in NumPy, "
            "which slows down as a store grows past a few hundred thousand chunks.",
            hint=(
                "Install pgvector on the server ('make pgvector', or the distribution's postgresql-NN-pgvector), "
                "then migrate a new database: the column's type is chosen when it is created."
            ),
            id="threadmem.W001",
        )
    ]


@register()
def broker_visibility_timeout_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Redis hands an unacknowledged task to another worker after the visibility timeout.

    At or below the compaction hard time limit, a compaction still running
    would be delivered again and run twice at once.
    """
    if not settings.CELERY_BROKER_URL.startswith(REDIS_SCHEMES):
        return []
    timeout = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout")
    if timeout is None or timeout > hard_time_limit():
        return []
    return [
        Error(
            f"The broker's visibility timeout ({timeout} s) must be above the compaction hard time limit "
            f"({hard_time_limit()} s: COMPACTION_TIME_LIMIT + 60)",
            hint="Raise the visibility timeout (CELERY_BROKER_TRANSPORT_OPTIONS) or lower the compaction time limit.",
            id="threadmem.E001",
        )
    ]


# Caches that each process keeps to itself (or none at all): another process never sees what one recorded.
PROCESS_LOCAL_CACHES = (
    "django.core.cache.backends.locmem.LocMemCache",
    "django.core.cache.backends.dummy.DummyCache",
)


@register()
def replicas_cache_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Replicas keep a caller's last write position and the isolation fence in the cache
    (threadmem/infrastructure/replicas/).

    In a cache of each process's own, a write recorded by one web process or worker is unknown to the others:
    its writer's next search may go to a replica that has not replayed it, and isolated or deleted content may
    be read from a replica that still holds it. Refused, then, rather than served stale or leaked; DEBUG (one
    runserver process) and test runs are spared.
    """
    if not settings.DATABASE_REPLICA_URLS or settings.DEBUG or settings.TESTING:
        return []
    backend = settings.CACHES["default"]["BACKEND"]
    if backend not in PROCESS_LOCAL_CACHES:
        return []
    return [
        Error(
            f"DATABASE_REPLICA_URLS is set but the cache is each process's own ({backend}): read-your-writes and "
            "the isolation fence would not hold across web processes and workers",
            hint="Set CACHE_URL=redis://… for every process (the web's and the Celery workers'), or unset "
            "DATABASE_REPLICA_URLS.",
            id="threadmem.E002",
        )
    ]
