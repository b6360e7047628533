"""The compaction task: fetch by id, call the service (STYLE: tasks stay thin).

``acks_late`` with ``reject_on_worker_lost``: a worker that dies mid-task
leaves the message unacknowledged, so the broker delivers it again and the
next attempt takes over the dead claim (``compacting.compaction_claim``).

Retries (transient model errors, unusable answers, the soft time limit) back
off exponentially with full jitter, as ``autoretry_for``/``retry_backoff``/
``retry_jitter`` would; the last attempt marks the compaction failed instead
of raising. The retry is spelled out because with no broker (tasks run
eagerly, ``task_eager_propagates`` on) Celery's autoretry raises ``Retry``
into the caller, here the request that enqueued the compaction; eagerly,
the attempts run one after the other in this process, without waiting.
"""

from __future__ import annotations

import time

from celery import shared_task
from celery.utils.time import get_exponential_backoff_interval
from django.conf import settings

from threadmem.features.compaction import compacting, recovery, resummarize
from threadmem.features.compaction.claim import RETRY_BACKOFF_MAX, hard_time_limit, soft_time_limit
from threadmem.infrastructure import metrics
from threadmem.models import Compaction


def retry_countdown(retries: int) -> float:
    """Seconds before the next attempt: exponential from COMPACTION_RETRY_BACKOFF, full jitter."""
    return get_exponential_backoff_interval(
        factor=settings.COMPACTION_RETRY_BACKOFF,
        retries=retries,
        maximum=RETRY_BACKOFF_MAX,
        full_jitter=True,
    )


def _observed(outcome: str, started: float) -> None:
    """One attempt for /metrics: its seconds by outcome; a retry and a failure counted apart too."""
    metrics.COMPACTION_SECONDS.labels(outcome=outcome).observe(time.perf_counter() - started)
    if outcome == "retry":
        metrics.COMPACTION_RETRIES.inc()
    elif outcome == "failed":
        metrics.COMPACTION_FAILURES.inc()


@shared_task(
    bind=True,
    name="threadmem.compaction.run",
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=settings.COMPACTION_MAX_RETRIES,
    soft_time_limit=soft_time_limit(),
    time_limit=hard_time_limit(),
)
def compaction_run_task(self, compaction_id: int) -> str:
    retries = self.request.retries or 0
    started = time.perf_counter()
    try:
        outcome = compacting.compaction_run(
            compaction_id=compaction_id,
            final_attempt=retries >= self.max_retries,
            heartbeat=not self.request.is_eager,
        )
    except compacting.RETRYABLE_ERRORS as exc:
        _observed("retry", started)
        # compaction_run gave the claim back; the next attempt claims it again.
        if self.request.is_eager:
            return compaction_run_task.apply(args=[compaction_id], task_id=self.request.id, retries=retries + 1).result
        raise self.retry(exc=exc, countdown=retry_countdown(retries)) from exc
    _observed(outcome.status, started)
    if outcome.status == "busy" and outcome.retry_at is not None and not self.request.is_eager:
        # The claim's holder is on another host and cannot be checked: look
        # again when its lease runs out (the hard time limit has ended it by then).
        compaction_run_task.apply_async(args=[compaction_id], eta=outcome.retry_at, task_id=self.request.id)
    return f"{outcome.status}: {outcome.detail}"


@shared_task(name="threadmem.compaction.resummarize", acks_late=True, reject_on_worker_lost=True)
def resummarize_task(compaction_id: int) -> str:
    """A re-summary after isolation (resummarize.py): fetch by id, call the compacting."""
    message = resummarize.resummarize_run(compaction_id=compaction_id)
    return f"summary messageId={message.id}" if message is not None else "nothing to do"


def compaction_enqueue(compaction: Compaction) -> None:
    """Send ``compaction`` to a worker under its own task id (``compacting`` calls this on commit)."""
    task = resummarize_task if compaction.trigger == resummarize.TRIGGER else compaction_run_task
    task.apply_async(args=[compaction.id], task_id=compaction.task_id)


@shared_task(name="threadmem.compaction.sweep", ignore_result=True)
def compaction_sweep_task() -> int:
    """Celery beat, every COMPACTION_SWEEP_SECONDS: resend compactions nobody works on (recovery.py)."""
    return recovery.compaction_sweep()
