"""What an operator can watch: the service's counters and histograms, in Prometheus' client (prometheus_client).

The lowest layer (pyproject.toml): search, compaction and the tool-call log
count here, the ASGI app and a middleware count requests, and the surface
(``api/views/metrics.py``) serves ``exposition()`` at ``/metrics``. Nothing
here reads the database; the backlogs are read from the tables when scraped
(``threadmem/domain/backlogs.py``).

Processes: with PROMETHEUS_MULTIPROC_DIR set (before any process starts, the
same empty directory for every web and Celery process of a host) each process
writes its counts to files there and a scrape sums them all; without it a
scrape sees the counts of the one process that answers it (docs/metrics.md).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


# A directory that is not there yet would fail every count (each value opens
# its file there when first used): made here, before any is.
if (_directory := multiprocess_dir()) is not None:
    os.makedirs(_directory, exist_ok=True)

# This process's metrics. Not prometheus_client's default registry: a scrape
# in multiprocess mode must not read a process's own values twice.
REGISTRY = CollectorRegistry()

# Seconds: a thread search answers in milliseconds idle, a saturated machine
# takes seconds (docs/metrics.md).
SEARCH_BUCKETS = (0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
COMPACTION_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)

HTTP_REQUESTS = Counter(
    "threadmem_http_requests",
    "HTTP requests answered, by surface (api, console, mcp, other) and status code.",
    ["surface", "status"],
    registry=REGISTRY,
)
SEARCH_SECONDS = Histogram(
    "threadmem_search_seconds",
    "search_memory calls answered: seconds from the call to its answer, by scope (thread, global: an operator's, "
    "owner: a non-operator's global scope) and match plan.",
    ["scope", "plan"],
    buckets=SEARCH_BUCKETS,
    registry=REGISTRY,
)
SEARCH_COMPLETENESS = Counter(
    "threadmem_search_completeness",
    "search_memory calls answered, by scope, plan and how much of the scope the literal part covered: "
    "complete, newest_only (the index ran out of its budget) or out_of_time (the fallback did too).",
    ["scope", "plan", "completeness"],
    registry=REGISTRY,
)
SEARCH_TERM_BRANCHES = Counter(
    "threadmem_search_term_branches",
    "search_memory terms searched, by scope, plan and the branch the plan gave each (scan, trigram index, "
    "token index, newest first, shared newest first, owner's window, then trigram index).",
    ["scope", "plan", "branch"],
    registry=REGISTRY,
)
COMPACTION_SECONDS = Histogram(
    "threadmem_compaction_seconds",
    "Compaction attempts in a worker: seconds per attempt, by outcome (succeeded, failed, retry, skipped, busy).",
    ["outcome"],
    buckets=COMPACTION_BUCKETS,
    registry=REGISTRY,
)
COMPACTION_RETRIES = Counter(
    "threadmem_compaction_retries", "Compaction attempts that gave their claim back to be retried.", registry=REGISTRY
)
COMPACTION_FAILURES = Counter(
    "threadmem_compaction_failures", "Compactions marked failed (the reason is on the row).", registry=REGISTRY
)
TOOL_CALLS = Counter(
    "threadmem_tool_calls",
    "Memory-tool calls written to the tool-call log, by tool, surface and status code.",
    ["tool", "surface", "status"],
    registry=REGISTRY,
)
TOOL_CALL_CHARS = Counter(
    "threadmem_tool_call_chars_returned",
    "Characters the memory tools returned (the log's chars_returned), by tool and surface.",
    ["tool", "surface"],
    registry=REGISTRY,
)
# Read replicas (threadmem/infrastructure/replicas/; docs/scaling.md).
READS = Counter(
    "threadmem_reads",
    "Model-facing reads (search, the audit read, context, listings) with replicas configured, by the database "
    "that answered them (default: the primary, replicaN: DATABASE_REPLICA_URLS' Nth).",
    ["database"],
    registry=REGISTRY,
)
READ_FALLBACKS = Counter(
    "threadmem_read_fallbacks",
    "Model-facing reads that went to the primary though replicas are configured, by reason: lag (every "
    "replica too far behind), writes (none had replayed the caller's last write yet), down (none answering), "
    "libraries (none could load the libraries of its catalog's extensions), failed (a replica failed during the "
    "read, which was read again on the primary).",
    ["reason"],
    registry=REGISTRY,
)
REPLICA_LAG = Gauge(
    "threadmem_replica_lag_seconds",
    "Each replica's lag behind the primary when last checked (0: it had replayed everything the primary wrote).",
    ["database"],
    multiprocess_mode="max",
    registry=REGISTRY,
)

SURFACE_PREFIXES = (("/api/", "api"), ("/console/", "console"), ("/mcp", "mcp"))


def surface_of(path: str) -> str:
    for prefix, surface in SURFACE_PREFIXES:
        if path.startswith(prefix) or path == prefix.rstrip("/"):
            return surface
    return "other"


def count_request(surface: str, status: int) -> None:
    HTTP_REQUESTS.labels(surface=surface, status=str(status)).inc()


def request_metrics_middleware(get_response: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Django middleware (first in MIDDLEWARE, so it sees every answer): count each request by surface and status.

    Django turns an exception in the layers below into a response, so every
    request reaches the count.
    """

    def middleware(request: Any) -> Any:
        response = get_response(request)
        count_request(surface_of(request.path), response.status_code)
        return response

    return middleware


ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


def asgi_counted(app: ASGIApp, surface: str) -> ASGIApp:
    """An ASGI app that counts its HTTP requests by status (the MCP endpoint, which Django does not serve).

    An app that raises before it answers counts as 500, what the server sends then.
    """

    async def counted(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        status = 500

        async def send_noting_status(message: dict[str, Any]) -> None:
            nonlocal status
            if message.get("type") == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await app(scope, receive, send_noting_status)
        finally:
            count_request(surface, status)

    return counted


class _Own:
    """This process's REGISTRY as one collector of a scrape's registry."""

    def collect(self) -> Iterable[Any]:
        return REGISTRY.collect()


def exposition(*collectors: Collector) -> tuple[bytes, str]:
    """The text a scrape reads and its content type: every process's counts (multiprocess) or this one's,
    then ``collectors`` (read at scrape time)."""
    registry = CollectorRegistry()
    if (path := multiprocess_dir()) is not None:
        MultiProcessCollector(registry, path=path)
    else:
        registry.register(_Own())
    for collector in collectors:
        registry.register(collector)
    return generate_latest(registry), CONTENT_TYPE_LATEST
