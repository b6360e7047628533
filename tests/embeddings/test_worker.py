"""Embedding on a real Celery worker over the real broker (marked ``worker``).

The append answers at once; the worker embeds the new messages through the
real ``openai`` SDK against the fake server, retries a failed model call
with backoff, and search then finds a paraphrase.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.factories import make_thread, token_client
from tests.support.semantic import EVIDENCE, PARAPHRASE, listed_ids, semantic_part
from tests.support.workers import Workers, api_post, running_workers, wait_until
from threadmem.features.search import search_memory
from threadmem.models import Chunk, EmbeddingProgress

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def worker(django_db_setup, fake_openai_server, tmp_path_factory) -> Iterator[Workers]:
    env = {"THREADMEM_EMBEDDING_MODEL": fake_openai_server.embedding_model}
    log_dir = tmp_path_factory.mktemp("embed-workers")
    with running_workers(fake_openai_server, log_dir, prefix="threadmem-embed-test", names={"embedder": env}) as pool:
        yield pool


@pytest.fixture
def embeddings(fake_openai, settings):
    settings.THREADMEM_EMBEDDING_MODEL = fake_openai.embedding_model
    return fake_openai


def test_the_worker_embeds_an_append_and_search_finds_a_paraphrase(worker, owner, embeddings):
    thread = make_thread(owner, "worker:embed")

    status, body = api_post(
        token_client(owner),
        "/api/v1/threads/worker:embed/messages/",
        {"role": "tool", "tool_call_id": "c1", "content": EVIDENCE},
    )

    assert status == 201
    wait_until(lambda: Chunk.objects.filter(message__thread=thread).exists(), worker, what="the worker to embed")
    assert EmbeddingProgress.objects.get(thread=thread).embedded_seq == 1
    part = semantic_part(search_memory(user=owner, query=PARAPHRASE, channel="worker:embed").text)
    assert listed_ids(part) == {body["id"]}


def test_a_failed_model_call_is_recorded_then_retried_with_backoff(worker, owner, embeddings):
    thread = make_thread(owner, "worker:retry")
    embeddings.push_error(503, endpoint="embeddings")

    status, _ = api_post(
        token_client(owner), "/api/v1/threads/worker:retry/messages/", {"role": "user", "content": EVIDENCE}
    )

    assert status == 201
    wait_until(lambda: Chunk.objects.filter(message__thread=thread).exists(), worker, what="the retry to embed")
    progress = EmbeddingProgress.objects.get(thread=thread)
    assert progress.embedded_seq == 1 and progress.failures == 0 and progress.last_error == ""
    assert len(embeddings.embedding_requests()) == 2  # the failed call and the retry
    assert "Retry in" in worker.log("embedder")
