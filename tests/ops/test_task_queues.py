"""A queue per kind of work (CELERY_TASK_ROUTES), on a real worker over the real broker (marked ``worker``).

Compaction, embedding and import tasks each go to their own queue; a worker consuming only the compaction
queue compacts while an import backlog that nobody consumes waits on its queue, untouched.
"""

from __future__ import annotations

import os
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from config.celery import app
from tests.support.compaction import compaction_of, deploy_conversation, nine_sections
from tests.support.factories import make_thread, token_client
from tests.support.workers import Workers, api_post, delete_queue, purge, queued, sending_to, wait_until
from threadmem.models import Import, Message

IMPORTS_WAITING = 3


def test_each_kind_has_its_queue_and_beats_sweeps_stay_on_the_default_one(settings):
    def queue_of(task: str) -> str:
        return app.amqp.router.route({}, task)["queue"].name

    compaction = queue_of("threadmem.compaction.run")
    assert compaction == queue_of("threadmem.compaction.resummarize") == settings.COMPACTION_QUEUE
    embeddings = queue_of("threadmem.embeddings.embed_thread")
    assert embeddings == settings.EMBEDDINGS_QUEUE
    imports = queue_of("threadmem.imports.run")
    assert imports == settings.IMPORTS_QUEUE
    assert len({compaction, embeddings, imports, settings.CELERY_TASK_DEFAULT_QUEUE}) == 4
    sweeps = [entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()]
    assert {"threadmem.compaction.sweep", "threadmem.embeddings.sweep"} <= set(sweeps)
    assert "threadmem.compaction.sweep" in app.tasks and "threadmem.embeddings.sweep" in app.tasks
    for task in sweeps:
        assert queue_of(task) == settings.CELERY_TASK_DEFAULT_QUEUE


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_each_kind_of_task_goes_to_its_queue_and_a_compaction_runs_past_an_import_backlog(
    owner, fake_openai, settings, tmp_path
):
    if connection.vendor != "postgresql":
        pytest.skip("worker processes share the test database: PostgreSQL")
    base = f"threadmem-queues-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    queue_of = {
        "COMPACTION_QUEUE": f"{base}-compaction",
        "EMBEDDINGS_QUEUE": f"{base}-embeddings",
        "IMPORTS_QUEUE": f"{base}-imports",
    }
    compaction_queue, embeddings_queue, imports_queue = queue_of.values()
    fake_openai.default_chat = lambda body: nine_sections(s8="compacted past the import backlog")
    settings.THREADMEM_EMBEDDING_MODEL = fake_openai.embedding_model
    settings.IMPORT_INLINE_MAX_BYTES = 0  # every upload waits for its task
    pool = Workers(queue=base, log_dir=tmp_path, fake=fake_openai)
    client = token_client(owner)
    with sending_to(base, queue_of):
        try:
            for queue in (base, *queue_of.values()):
                purge(queue)
            pool.start("compactor", queues=[compaction_queue], extra_env=queue_of)
            for number in range(IMPORTS_WAITING):
                line = f'{{"type": "user", "message": {{"role": "user", "content": "upload {number}"}}}}\n'
                upload = SimpleUploadedFile("session.jsonl", line.encode(), content_type="application/jsonl")
                response = client.post("/api/v1/imports/", {"file": upload}, format="multipart")
                assert response.status_code == 202, response.content
            thread = make_thread(owner, "queues:compaction")
            deploy_conversation(thread)  # each append sends an embedding task
            status, body = api_post(client, f"/api/v1/threads/{thread.channel}/compact/")
            assert status == 202, body

            wait_until(lambda: compaction_of(thread).status == "succeeded", pool, what="the compaction")
            summary = Message.objects.get(thread=thread, kind=Message.Kind.SUMMARY)
            assert "compacted past the import backlog" in summary.content
            assert queued(imports_queue) == IMPORTS_WAITING
            assert set(Import.objects.values_list("status", flat=True)) == {Import.Status.PENDING}
            assert queued(embeddings_queue) >= 1
            assert queued(compaction_queue) == 0 and queued(base) == 0
            received = pool.log("compactor")
            assert "Task threadmem.compaction.run[" in received
            assert "Task threadmem.imports.run[" not in received
            assert "Task threadmem.embeddings.embed_thread[" not in received
        finally:
            pool.stop_all()
            for queue in (base, *queue_of.values()):
                delete_queue(queue)
