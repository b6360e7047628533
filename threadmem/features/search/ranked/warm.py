"""Reading a cold scope to the end, whatever the deadline of the search that found it cold.

A global lane's statements are cancelled at its budget (``semantic._cancelled_at``),
and an owner's scope read for the first time in a process (its keyword index,
its vectors: ~0.5 s for 8,000 pieces) outlasts it: every search in the
meantime would answer out of time. The first read of a large scope runs here
instead, on a thread of its own with its own connection, which no deadline
cancels; the search that started it waits for it (answering out of time if
its deadline passes first), and the searches after it find the scope kept.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from django.db import connections

T = TypeVar("T")

# One at a time: two cold scopes are read one after the other rather than sharing the cores.
_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="threadmem-warm")


def uncancelled(read: Callable[[], T]) -> T:
    """``read()`` on the warming thread, its connection closed afterwards; its answer, or its error."""

    def run() -> T:
        try:
            return read()
        finally:
            connections.close_all()

    return _executor.submit(run).result()
