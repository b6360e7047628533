"""System checks for settings that must agree with each other (``manage.py check`` runs them)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error

from threadmem.compaction.service import hard_time_limit

REDIS_SCHEMES = ("redis://", "rediss://", "redis+socket://")


def check_broker_visibility_timeout(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
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
            f"CELERY_VISIBILITY_TIMEOUT ({timeout} s) must be above the compaction hard time limit "
            f"({hard_time_limit()} s: THREADMEM_COMPACTION_TIME_LIMIT + 60)",
            hint="Raise CELERY_VISIBILITY_TIMEOUT or lower THREADMEM_COMPACTION_TIME_LIMIT.",
            id="threadmem.E001",
        )
    ]
