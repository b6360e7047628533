"""The literal search's tuning knobs, read together: one frozen object from the THREADMEM_SEARCH_* settings.

They are benchmark tuning (docs/search.md has the figures behind each
default); ``path`` overrides the thread-scope plan for measuring one path
against the other. Read per search, so a changed setting applies at once.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum

from django.conf import settings


class SearchPath(StrEnum):
    """THREADMEM_SEARCH_PATH: how a thread search on PostgreSQL matches."""

    AUTO = "auto"  # scan a thread up to thread_scan_bytes, else the indexes
    SCAN = "scan"  # always read the scope's rows (the global scope too: the exhaustive search)
    INDEX = "index"  # always start with the trigram indexes


@dataclass(frozen=True)
class SearchTuning:
    index_budget_ms: int
    recent_budget_ms: int
    budget_scale_max: int  # the global budgets' most multiple under load (literal/budget.py)
    db_cpus: int
    thread_scan_bytes: int
    spelling_sample_bytes: int
    pg_extension: bool
    tokens: bool
    scan_bytes_per_ms: int
    path: SearchPath

    @classmethod
    def from_settings(cls) -> SearchTuning:
        """Each knob from the setting of its name: ``index_budget_ms`` from THREADMEM_SEARCH_INDEX_BUDGET_MS."""
        knobs = {knob.name: getattr(settings, f"THREADMEM_SEARCH_{knob.name.upper()}") for knob in fields(cls)}
        return cls(**{**knobs, "path": SearchPath(knobs["path"])})
