"""The periodic tasks of erasure: retention (when THREADMEM_RETENTION_DAYS is set) and the sweep (always)."""

from __future__ import annotations

from celery import shared_task

from threadmem.features.erase.retention import retention_run
from threadmem.features.erase.thread_delete import finish_withdrawn


@shared_task(name="threadmem.erase.retention", ignore_result=True)
def retention() -> int:
    return len(retention_run())


@shared_task(name="threadmem.erase.sweep", ignore_result=True)
def erase_sweep() -> int:
    """Celery beat: finish the thread deletions that stopped half way; answer how many."""
    return len(finish_withdrawn())
