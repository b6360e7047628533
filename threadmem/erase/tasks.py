"""The retention task, run by Celery beat when THREADMEM_RETENTION_DAYS is set."""

from __future__ import annotations

from celery import shared_task

from threadmem.erase.retention import retention_run


@shared_task(name="threadmem.erase.retention", ignore_result=True)
def retention() -> int:
    return len(retention_run())
