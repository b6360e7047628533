"""The read state: which database the current model-facing read uses, shared by every thread of the read.

A ``ContextVar``: the ranked lane's worker thread runs in a copy of the search's context, so it reads the same
state object (and reports a failure to it) as the read's own thread.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections

PREFIX = "replica"  # config/settings.py names them replica1, replica2, ...


@dataclass
class Read:
    alias: str = DEFAULT_DB_ALIAS
    failed: bool = False  # a replica's connection broke during the read (any thread of it)
    again: bool = False  # the read runs again on the primary
    rerun: bool | None = None  # decided once (runs_again): the log row and the retry agree
    # Who reads, once known (a request authenticates inside the read): until it names someone, the primary.
    caller_of: Callable[[], Any] | None = None
    naming: bool = False  # caller_of is running: what it reads goes to the primary


current: ContextVar[Read | None] = ContextVar("threadmem_replica_read", default=None)


def aliases() -> list[str]:
    """The replicas configured (DATABASE_REPLICA_URLS): none, and nothing here does anything."""
    return [name for name in connections.settings if name.startswith(PREFIX)]
