"""A delete right after an append: the thread's embedding run is storing pieces while the delete runs.

The race is built, not hoped for: another session holds the row lock of the
thread's embedding progress, so the embedding run (on a background thread of
this process, or a real Celery worker) stops at its batch's commit; the
DELETE is sent meanwhile and reaches its own wait; then the lock goes and
both go on. Before the fix the batch's pieces landed under messages the
delete was removing: 500 at its commit, the thread left withdrawn with its
rows. PostgreSQL only: SQLite runs one writer at a time, so the two never
interleave there (the stopped-deletion tests below run on both).
"""

from __future__ import annotations

from collections.abc import Iterator
from io import StringIO

import pytest
from django.conf import settings as dj_settings
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone

from tests.support.database import other_session, wait_for_lock_waiters
from tests.support.erase import DeleteInThread, rows_left
from tests.support.factories import append, make_thread
from tests.support.workers import Workers, running_workers
from threadmem.domain import services
from threadmem.features.embeddings import choice
from threadmem.features.embeddings.tasks import embed_thread_later, embed_thread_task, wait_for_background
from threadmem.features.erase import thread_delete as erase_delete
from threadmem.features.erase.tasks import erase_sweep
from threadmem.models import Deletion, EmbeddingProgress, Message, Thread

pytestmark = pytest.mark.django_db(transaction=True)

APPENDED = 300
# About 250 characters a message, as the probe sent.
TEXT = "the staging rollout of the billing service stalled on migration 0042 while the cache warmed; " * 3


def appended(owner, channel: str) -> tuple[int, list[int]]:
    """A thread of APPENDED messages stored without their after-append hooks (the test starts the embedding)."""
    thread = make_thread(owner, channel)
    batch = [{"role": "user" if n % 2 else "assistant", "content": f"{n}: {TEXT[:240]}"} for n in range(APPENDED)]
    services.messages_store(thread=thread, messages=services.messages_parse(batch), run_hooks=False)
    return thread.pk, list(Message.objects.filter(thread_id=thread.pk).values_list("pk", flat=True))


def race(owner_api, thread_id: int, channel: str, model: str, start_embedding) -> DeleteInThread:
    """Embedding stopped at its batch's commit, the DELETE sent and waiting too, then both let go."""
    progress = EmbeddingProgress.objects.create(thread_id=thread_id, model=model)
    with other_session() as holder:
        holder.execute("SELECT id FROM threadmem_embeddingprogress WHERE id = %s FOR UPDATE", [progress.pk])
        start_embedding()
        wait_for_lock_waiters(1)  # the embedding run, at its batch
        delete = DeleteInThread(owner_api, f"/api/v1/threads/{channel}/")
        delete.start()
        wait_for_lock_waiters(2)  # and the delete
        holder.commit()
    delete.join(timeout=120)
    return delete


def assert_deleted_whole(delete: DeleteInThread, thread_id: int, message_ids: list[int], channel: str) -> None:
    assert delete.status == 200, delete.body
    assert delete.body["channel"] == channel and delete.body["counts"]["messages"] == APPENDED
    assert rows_left([thread_id], message_ids) == {}
    assert Deletion.objects.filter(channel=channel).count() == 1


@pytest.fixture
def postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("SQLite runs one writer at a time: an embedding batch and a delete never interleave there")


def test_a_delete_while_the_threads_embedding_run_stores_pieces_answers_200_and_leaves_no_row(
    postgres_only, owner, owner_api, static_model
):
    thread_id, message_ids = appended(owner, "claude-code:append-then-delete")
    model = choice.active_model()

    delete = race(
        owner_api, thread_id, "claude-code:append-then-delete", model, lambda: embed_thread_later(thread_id, model)
    )
    wait_for_background()

    assert_deleted_whole(delete, thread_id, message_ids, "claude-code:append-then-delete")


@pytest.fixture(scope="module")
def embedder(django_db_setup, fake_openai_server, tmp_path_factory) -> Iterator[Workers]:
    env = {"THREADMEM_EMBEDDING_MODEL": fake_openai_server.embedding_model}
    log_dir = tmp_path_factory.mktemp("erase-workers")
    with running_workers(fake_openai_server, log_dir, prefix="threadmem-erase-test", names={"embedder": env}) as pool:
        yield pool


@pytest.mark.worker
def test_a_delete_while_a_celery_worker_embeds_the_thread_answers_200_and_leaves_no_row(
    postgres_only, embedder, owner, owner_api, fake_openai, settings
):
    settings.THREADMEM_EMBEDDING_MODEL = fake_openai.embedding_model
    thread_id, message_ids = appended(owner, "claude-code:worker-append-then-delete")
    model = fake_openai.embedding_model

    delete = race(
        owner_api,
        thread_id,
        "claude-code:worker-append-then-delete",
        model,
        lambda: embed_thread_task.delay(thread_id, model),
    )
    embedder.wait_for_log("embedder", "succeeded", 60)

    assert_deleted_whole(delete, thread_id, message_ids, "claude-code:worker-append-then-delete")
    assert "IntegrityError" not in embedder.log("embedder")


def stopped_half_way(thread) -> None:
    """What a process killed after a deletion's first step leaves: the thread withdrawn, its rows stored."""
    with transaction.atomic():
        erase_delete._withdraw(thread=thread, with_forks=False, idle_before=None)


def test_a_deletion_stopped_half_way_is_finished_by_the_next_delete_not_404(owner, owner_api):
    thread = make_thread(owner, "claude-code:stopped")
    append(thread, {"role": "user", "content": "half way"}, {"role": "assistant", "content": "still stored"})
    message_ids = list(Message.objects.filter(thread=thread).values_list("pk", flat=True))
    stopped_half_way(thread)
    assert owner_api.get("/api/v1/threads/claude-code:stopped/").status_code == 404  # withdrawn: no read finds it

    response = owner_api.delete("/api/v1/threads/claude-code:stopped/")

    assert response.status_code == 200, response.content
    assert response.json()["channel"] == "claude-code:stopped" and response.json()["counts"]["messages"] == 2
    assert rows_left([thread.pk], message_ids) == {}
    assert Deletion.objects.get().channel == "claude-code:stopped"
    assert owner_api.delete("/api/v1/threads/claude-code:stopped/").status_code == 404


def test_a_deletion_stopped_half_way_is_listed_by_retention_and_finished_by_the_sweep_with_retention_off(
    owner, settings
):
    settings.THREADMEM_RETENTION_DAYS = 0
    thread = make_thread(owner, "claude-code:abandoned")
    append(thread, {"role": "user", "content": "left behind"})
    message_ids = list(Message.objects.filter(thread=thread).values_list("pk", flat=True))
    stopped_half_way(thread)
    # A deletion at work is left to the request doing it; one stopped past the grace is the sweep's.
    assert erase_sweep() == 0 and Thread.objects.filter(pk=thread.pk).exists()
    Thread.objects.filter(pk=thread.pk).update(last_activity_at=timezone.now() - erase_delete.WITHDRAWN_GRACE * 2)
    out = StringIO()
    call_command("retention", "--days", "30", "--dry-run", stdout=out)
    assert "claude-code:abandoned\towner\tdeletion unfinished since" in out.getvalue()

    assert erase_sweep() == 1  # the periodic task (Celery beat), whatever retention says

    assert rows_left([thread.pk], message_ids) == {}
    record = Deletion.objects.get()
    assert record.channel == "claude-code:abandoned" and record.actor_name == "sweep" and record.counts["messages"] == 1
    assert "erase-sweep" in dj_settings.CELERY_BEAT_SCHEDULE


def test_a_deletion_that_fails_after_withdrawing_says_so_and_the_next_delete_finishes_it(
    postgres_only, owner, owner_api
):
    thread = make_thread(owner, "claude-code:cut-off")
    append(thread, {"role": "user", "content": "one"}, {"role": "assistant", "content": "two"})
    message_ids = list(Message.objects.filter(thread=thread).values_list("pk", flat=True))
    with other_session() as holder:
        # The delete's batch waits for this message; its connection is then cut, as a database restart would.
        holder.execute("SELECT id FROM threadmem_message WHERE id = %s FOR UPDATE", [message_ids[-1]])
        delete = DeleteInThread(owner_api, "/api/v1/threads/claude-code:cut-off/")
        delete.start()
        wait_for_lock_waiters(1)
        holder.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        delete.join(timeout=60)
        holder.rollback()

    assert delete.status == 503, delete.body
    assert "withdrawn" in delete.body["detail"] and "send DELETE again" in delete.body["detail"]
    assert "nothing was stored" not in delete.body["detail"].lower()
    assert owner_api.delete("/api/v1/threads/claude-code:cut-off/").status_code == 200
    assert rows_left([thread.pk], message_ids) == {}
