"""The embedding backlog: what counts as behind, and the periodic sweep that queues it (Celery beat).

- a compacted thread's summary is never embedded, so it is no backlog (``manage.py embeddings --status``,
  /metrics);
- the sweep leaves a thread whose run made progress lately to that run;
- messages appended while the broker was down (their tasks never sent) are embedded by the sweep on a real
  worker over the real broker, without another append.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from config.celery import app
from tests.support.compaction import deploy_conversation, nine_sections
from tests.support.factories import append, make_thread
from tests.support.workers import Workers, sending_to, wait_until
from threadmem.domain import backlogs
from threadmem.features.compaction import compacting
from threadmem.features.embeddings import choice, tasks
from threadmem.features.embeddings import thread_embedding as embedding_service
from threadmem.models import EmbeddingProgress, Message

DEAD_BROKER = "redis://127.0.0.1:9/0"  # nothing listens on the discard port


@pytest.fixture
def embeddings(fake_openai, settings) -> Iterator:
    settings.THREADMEM_EMBEDDING_MODEL = fake_openai.embedding_model
    fake_openai.default_chat = lambda body: nine_sections(s8="the summary")
    yield fake_openai
    tasks.wait_for_background()


@pytest.mark.django_db(transaction=True)
def test_a_compacted_threads_summary_is_no_embedding_backlog(owner, embeddings, capsys):
    thread = make_thread(owner, "ops")
    deploy_conversation(thread)
    tasks.wait_for_background()
    assert embedding_service.threads_behind() == []

    compaction = compacting.compaction_request(thread=thread)  # runs in-process here
    compaction.refresh_from_db()
    assert compaction.status == "succeeded"
    assert Message.objects.filter(thread=thread, kind=Message.Kind.SUMMARY).exists()

    assert embedding_service.threads_behind() == []
    call_command("embeddings", "--status")
    assert "0 threads behind, 0 failing" in capsys.readouterr().out
    assert backlogs.embedding_backlog(choice.active_model()).threads == 0  # /metrics says the same

    append(thread, {"role": "user", "content": "and now the database replica lags"})
    EmbeddingProgress.objects.filter(thread=thread).update(embedded_seq=0)  # as if that run never happened
    assert embedding_service.threads_behind() == [thread.pk]


@pytest.mark.django_db(transaction=True)
def test_the_sweep_queues_threads_behind_but_not_one_whose_run_is_at_work(owner, embeddings, settings):
    settings.EMBEDDINGS_SWEEP_SECONDS = 300
    stalled, working = make_thread(owner, "stalled"), make_thread(owner, "working")
    for thread in (stalled, working):
        append(thread, {"role": "user", "content": "the postgres replica fell behind"})
    tasks.wait_for_background()
    EmbeddingProgress.objects.update(embedded_seq=0)  # both behind again, as if their runs were lost
    EmbeddingProgress.objects.filter(thread=stalled).update(updated_at=timezone.now() - timedelta(minutes=10))
    EmbeddingProgress.objects.filter(thread=working).update(updated_at=timezone.now())

    assert tasks.embeddings_sweep_task() == 1  # tasks run in-process here: the run it queued is done

    assert embedding_service.threads_behind() == [working.pk]


@contextmanager
def broker_down(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's tasks go to a broker that refuses connections (the app's cached pools dropped in and out)."""
    saved = app.conf.broker_url

    def reset_pools() -> None:
        app._pool = None
        app.amqp._producer_pool = None

    reset_pools()
    with monkeypatch.context() as patch:
        patch.setenv("CELERY_BROKER_URL", DEAD_BROKER)  # Celery reads the environment before its own setting
        app.conf.broker_url = DEAD_BROKER
        try:
            yield
        finally:
            reset_pools()
            app.conf.broker_url = saved


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_messages_appended_while_the_broker_was_down_are_embedded_by_the_sweep(
    owner, embeddings, tmp_path, monkeypatch
):
    if connection.vendor != "postgresql":
        pytest.skip("worker processes share the test database: PostgreSQL")
    thread = make_thread(owner, "ops")
    pool = Workers(queue=f"threadmem-embed-sweep-{tmp_path.name}", log_dir=tmp_path, fake=embeddings)
    quick = {"THREADMEM_EMBEDDING_MODEL": embeddings.embedding_model, "EMBEDDINGS_SWEEP_SECONDS": "1"}
    with sending_to(pool.queue):
        try:
            pool.purge()
            with broker_down(monkeypatch):
                deploy_conversation(thread)  # each append is stored; its embedding task never reaches the broker
            assert pool.queued() == 0
            assert not EmbeddingProgress.objects.filter(thread=thread).exists()
            assert embedding_service.threads_behind() == [thread.pk]

            pool.start("sweeper", pool="solo", extra_env=quick, beat=True)  # the broker is back, nobody appends
            wait_until(lambda: embedding_service.threads_behind() == [], pool, what="the sweep's embedding run")
            last_seq = thread.messages.order_by("-seq").values_list("seq", flat=True).first()
            assert EmbeddingProgress.objects.get(thread=thread).embedded_seq == last_seq
            assert "Task threadmem.embeddings.sweep[" in pool.log("sweeper")
        finally:
            pool.stop_all()
            pool.delete_queue()
