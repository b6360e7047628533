"""Embedding after appends, never in the append's way.

``embeddings_after_append`` is an after-append hook (``services.after_append_hooks``).
With an embedding model in force (a configured one, else the static one:
``choice.active_model``) it queues one ``embed_thread`` run for
the thread once the append has committed:

- with a broker, as a Celery task on a worker. Model errors that may pass
  (``llm.TRANSIENT_ERRORS``) retry with exponential backoff and jitter; the
  last failure stays on the thread's ``EmbeddingProgress`` row (console and
  ``manage.py embeddings``), and the next append or a backfill takes the same
  messages again;
- without one (tasks in-process), on a background thread of this process:
  running it eagerly would make every append wait for the model server, or
  fail with it. One attempt; a failure is recorded the same way.

Either way the append has answered already: ingestion never waits for, nor
fails with, the embedding model. A thread whose task never ran (appended while
the broker was down, or the message lost) is queued by ``embeddings_sweep_task``
(Celery beat, every EMBEDDINGS_SWEEP_SECONDS).
"""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta

from celery import shared_task
from celery.utils.time import get_exponential_backoff_interval
from django.conf import settings
from django.db import connections, transaction

from threadmem.features.embeddings import choice
from threadmem.features.embeddings import thread_embedding as service
from threadmem.infrastructure import llm
from threadmem.models import Thread

logger = logging.getLogger(__name__)

MAX_RETRIES = 5
RETRY_BACKOFF_SECONDS = 5
RETRY_BACKOFF_MAX = 600

# In-process runs: one at a time, in order, off the request thread.
_background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="threadmem-embed")
_pending: set[Future[None]] = set()


@shared_task(bind=True, name="threadmem.embeddings.embed_thread", acks_late=True, max_retries=MAX_RETRIES)
def embed_thread_task(self, thread_id: int, model: str = "") -> str:
    try:
        outcome = service.embed_thread(thread_id=thread_id, model=model or None)
    except llm.TRANSIENT_ERRORS as exc:
        countdown = get_exponential_backoff_interval(
            factor=RETRY_BACKOFF_SECONDS, retries=self.request.retries or 0, maximum=RETRY_BACKOFF_MAX, full_jitter=True
        )
        raise self.retry(exc=exc, countdown=countdown) from exc
    return (
        f"thread {thread_id}: {outcome.messages} messages, {outcome.chunks} chunks, through seq {outcome.embedded_seq}"
    )


@shared_task(name="threadmem.embeddings.sweep", ignore_result=True)
def embeddings_sweep_task() -> int:
    """Celery beat: queue an embedding run for each thread behind that no run is at work on; answer how many."""
    model = choice.active_model()
    if not model:
        return 0
    # A thread whose progress moved within one sweep has a run at work: another would repeat its model calls.
    idle_for = timedelta(seconds=settings.EMBEDDINGS_SWEEP_SECONDS)
    thread_ids = service.threads_behind(model, idle_for=idle_for)
    for thread_id in thread_ids:
        embed_thread_task.delay(thread_id, model)
    if thread_ids:
        logger.info("embedding sweep: queued %s threads behind for %s", len(thread_ids), model)
    return len(thread_ids)


def _embed_in_background(thread_id: int, model: str) -> None:
    try:
        service.embed_thread(thread_id=thread_id, model=model)
    except llm.LLMError as exc:
        logger.warning("embedding thread %s failed: %s", thread_id, exc)
    except Exception:
        logger.exception("embedding thread %s failed", thread_id)
    finally:
        connections.close_all()


def embed_thread_later(thread_id: int, model: str) -> None:
    """Queue an embedding run for the thread: a Celery task, or a background thread without a broker."""
    # The task's app is the project's Celery app (config/celery.py), which the domain does not import.
    if not embed_thread_task.app.conf.task_always_eager:
        embed_thread_task.delay(thread_id, model)
        return
    future = _background.submit(_embed_in_background, thread_id, model)
    _pending.add(future)
    future.add_done_callback(_pending.discard)


def wait_for_background(timeout: float = 60.0) -> None:
    """Wait until the in-process embedding runs queued so far are done (tests, management commands)."""
    for future in list(_pending):
        future.result(timeout=timeout)


def embeddings_after_append(thread: Thread) -> None:
    """``services.after_append_hooks``: embed the new messages once the append has committed."""
    model = choice.active_model()
    if not model:
        return
    thread_id = thread.pk
    transaction.on_commit(lambda: embed_thread_later(thread_id, model))
