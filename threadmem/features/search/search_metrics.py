"""search_memory's figures for /metrics (threadmem/infrastructure/metrics.py): latency by scope and plan,
completeness, and the branch each term took (literal/plan.py Branch)."""

from __future__ import annotations

import time

from threadmem.domain.scope import SearchScope
from threadmem.features.search.hits import Coverage, LiteralPart
from threadmem.infrastructure import metrics

# What an operator reads in the completeness label (bounded.COVERAGE_LINES says the same to the model).
COMPLETENESS = {Coverage.ALL: "complete", Coverage.RECENT: "newest_only", Coverage.NONE: "out_of_time"}


def scope_label(scope: SearchScope) -> str:
    """thread; global (an operator's: every thread); owner (a non-operator's global scope: their threads)."""
    if not scope.is_global:
        return "thread"
    return "global" if scope.operator else "owner"


def search_observed(*, scope: SearchScope, literal: LiteralPart, started: float) -> None:
    """One answered search: its seconds since ``started`` (perf_counter) and its completeness."""
    labels = {"scope": scope_label(scope), "plan": literal.plan or "none"}
    metrics.SEARCH_SECONDS.labels(**labels).observe(time.perf_counter() - started)
    metrics.SEARCH_COMPLETENESS.labels(**labels, completeness=COMPLETENESS[literal.coverage]).inc()
    for term in (literal.executed or {}).get("terms", ()):
        metrics.SEARCH_TERM_BRANCHES.labels(**labels, branch=term["branch"]).inc()
