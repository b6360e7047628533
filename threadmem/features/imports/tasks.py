"""The upload import task: fetch by id, call the service (STYLE: tasks stay thin)."""

from __future__ import annotations

from celery import shared_task

from threadmem.features.imports.run import import_run


@shared_task(name="threadmem.imports.run", acks_late=True, reject_on_worker_lost=True, time_limit=6 * 3600)
def import_run_task(import_id: int) -> None:
    # The claim (pending -> running) makes a redelivered task a no-op.
    import_run(import_id=import_id)
