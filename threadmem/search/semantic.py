"""The semantic part of search_memory ("## Other memory results"), behind a small interface.

A provider is any callable ``provider(*, scope, query, terms) -> str``. It must
rank only ``scope.messages()`` (the filter the literal part applies too) and
may return any amount of text: the merge cuts the whole result at exactly
12,000 characters. It runs in a worker thread, concurrently with the literal
part, so it gets its own database connection there (Django connections are
per thread), closed when it returns.

Which provider runs: the one installed with ``set_provider`` (tests, a later
pgvector engine), else the dotted path in the ``THREADMEM_SEMANTIC_PROVIDER``
setting, else ``not_configured``, which touches no database.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from typing import Protocol

from django.conf import settings
from django.db import connections
from django.utils.module_loading import import_string

from threadmem.search.scope import SearchScope

logger = logging.getLogger(__name__)

SEMANTIC_TIMEOUT_SECONDS = 15.0
NOT_CONFIGURED = "Semantic search is not configured (set THREADMEM_EMBEDDING_MODEL to rank messages by meaning)."


class SemanticProvider(Protocol):
    def __call__(self, *, scope: SearchScope, query: str, terms: list[str]) -> str: ...


def not_configured(*, scope: SearchScope, query: str, terms: list[str]) -> str:
    return NOT_CONFIGURED


_installed: SemanticProvider | None = None
_executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="threadmem-semantic")


def set_provider(provider: SemanticProvider | None) -> None:
    """Install a provider for every search in this process (None: back to the setting)."""
    global _installed
    _installed = provider


@contextmanager
def provider_installed(provider: SemanticProvider) -> Iterator[None]:
    previous = _installed
    set_provider(provider)
    try:
        yield
    finally:
        set_provider(previous)


def current_provider() -> SemanticProvider:
    if _installed is not None:
        return _installed
    path = settings.THREADMEM_SEMANTIC_PROVIDER
    if path:
        return import_string(path)
    return not_configured


def _run(provider: SemanticProvider, scope: SearchScope, query: str, terms: list[str]) -> str:
    try:
        return provider(scope=scope, query=query, terms=list(terms))
    finally:
        # This thread's connections belong to this call only.
        connections.close_all()


def start(*, scope: SearchScope, query: str, terms: list[str]) -> Callable[[], str]:
    """Start the semantic part; the returned callable waits for its text.

    A provider that fails or does not answer in time costs the caller one
    line, never the literal results.
    """
    provider = current_provider()
    if provider is not_configured:
        text = not_configured(scope=scope, query=query, terms=terms)
        return lambda: text
    future: Future[str] = _executor.submit(_run, provider, scope, query, terms)

    def result() -> str:
        try:
            return str(future.result(timeout=SEMANTIC_TIMEOUT_SECONDS))
        except FutureTimeout:
            logger.warning("semantic search did not answer within %s s", SEMANTIC_TIMEOUT_SECONDS)
            return (
                f"Semantic search did not answer within {SEMANTIC_TIMEOUT_SECONDS:g} s; "
                "the literal hits above are complete."
            )
        except Exception:
            logger.exception("semantic search failed")
            return "Semantic search failed for this query; the literal hits above are complete."

    return result
