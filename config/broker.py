"""How a Redis broker hands back the task of a worker that died mid-task."""

from __future__ import annotations


def broker_transport_options(visibility_timeout: int) -> dict[str, int]:
    """Redis hands an unacknowledged task to another worker after ``visibility_timeout`` seconds (a worker that
    died mid-task); it stays above the compaction hard time limit (``manage.py check``: threadmem.E001)."""
    return {
        "visibility_timeout": visibility_timeout,
        # Sweep for abandoned tasks often enough that a short timeout means a short wait.
        "unacked_restore_interval": max(1, min(10, visibility_timeout // 4)),
        "unacked_restore_throttle": 1 if visibility_timeout < 300 else 10,
    }
