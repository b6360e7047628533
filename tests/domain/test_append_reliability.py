"""A stored append never answers an error, and a retried one never duplicates.

- ``source_id``: a message the thread already holds under that id is not
  stored again; the answer carries the stored one (a client retry, a re-import);
- the broker unreachable when an append crosses the automatic-compaction
  threshold: the append answers 201, and no compaction is left pending with a
  dead task (the next append past the threshold asks again);
- an explicit compaction request while the broker is down answers 503 naming
  it, and leaves nothing pending;
- (these run with ``transaction=True``: the enqueue happens on commit)
- the database connection dropping after the commit (PostgreSQL: the backend
  is terminated from another connection) still answers 201.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from django.db import connection

from config.celery import app
from tests.support.database import other_session
from tests.support.factories import make_thread, token_client
from threadmem.domain import services
from threadmem.models import Compaction, Message

SLACK = "slack:C042/1700000000.1"
MESSAGES = f"/api/v1/threads/{SLACK}/messages/"
# Nothing listens here: publishing a task fails the way a stopped broker does.
DEAD_BROKER = "redis://127.0.0.1:9/0"


def batch(*source_ids: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"step {source_id}", "source_id": source_id} for source_id in source_ids]


@pytest.mark.django_db
def test_a_retried_batch_answers_the_stored_messages_and_stores_nothing_twice(owner_api, thread):
    first = owner_api.post(MESSAGES, batch("r1", "r2", "r3"), format="json")
    again = owner_api.post(MESSAGES, batch("r1", "r2", "r3"), format="json")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert Message.objects.filter(thread=thread).count() == 3


@pytest.mark.django_db
def test_a_longer_batch_stores_only_the_new_messages_and_answers_in_request_order(owner_api, thread):
    first = owner_api.post(MESSAGES, batch("r2", "r3"), format="json").json()
    answer = owner_api.post(MESSAGES, batch("r1", "r2", "r3", "r4"), format="json").json()
    assert [m["source_id"] for m in answer] == ["r1", "r2", "r3", "r4"]
    assert answer[1:3] == first
    assert [m["seq"] for m in answer] == [3, 1, 2, 4]
    assert Message.objects.filter(thread=thread).count() == 4


@pytest.mark.django_db
def test_source_ids_are_unique_per_thread_not_across_threads(owner_api, owner, thread):
    other_thread = make_thread(owner, "slack:C042/other")
    owner_api.post(MESSAGES, batch("r1"), format="json")
    response = owner_api.post(f"/api/v1/threads/{other_thread.channel}/messages/", batch("r1"), format="json")
    assert response.status_code == 201
    assert Message.objects.filter(source_id="r1").count() == 2


@pytest.mark.django_db
def test_a_batch_repeating_a_source_id_is_refused_whole(owner_api, thread):
    response = owner_api.post(MESSAGES, batch("r1", "r2", "r1"), format="json")
    assert response.status_code == 400
    assert "messages[2].source_id 'r1' repeats" in response.json()["detail"]
    assert not Message.objects.filter(thread=thread).exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_retries_of_one_batch_store_it_once(owner):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers: PostgreSQL")
    make_thread(owner, SLACK)
    answers: list[int] = []

    def post() -> None:
        answers.append(token_client(owner).post(MESSAGES, batch("a", "b", "c"), format="json").status_code)
        connection.close()

    workers = [threading.Thread(target=post) for _ in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert answers == [201] * 6
    assert sorted(Message.objects.values_list("source_id", flat=True)) == ["a", "b", "c"]


@pytest.fixture
def broker_down(settings, monkeypatch) -> Iterator[None]:
    """Tasks go to a broker that refuses connections (the app's cached pools dropped on the way in and out)."""
    saved = app.conf.broker_url, app.conf.task_always_eager
    settings.CELERY_BROKER_URL = DEAD_BROKER
    monkeypatch.setenv("CELERY_BROKER_URL", DEAD_BROKER)  # Celery reads the environment before its own setting

    def reset_pools() -> None:
        app._pool = None
        app.amqp._producer_pool = None

    reset_pools()
    app.conf.broker_url, app.conf.task_always_eager = DEAD_BROKER, False
    yield
    reset_pools()
    app.conf.broker_url, app.conf.task_always_eager = saved


@pytest.mark.django_db(transaction=True)
def test_an_append_past_the_threshold_answers_201_while_the_broker_is_down(owner_api, thread, settings, broker_down):
    settings.THREADMEM_COMPACT_AT_CHARS = 10
    response = owner_api.post(MESSAGES, {"role": "user", "content": "long enough to compact"}, format="json")
    assert response.status_code == 201
    assert Message.objects.filter(thread=thread).count() == 1
    assert not Compaction.objects.filter(thread=thread).exists()


@pytest.mark.django_db(transaction=True)
def test_the_next_append_compacts_once_the_broker_is_back(owner_api, thread, settings, broker_down):
    settings.THREADMEM_COMPACT_AT_CHARS = 10
    owner_api.post(MESSAGES, {"role": "user", "content": "long enough to compact"}, format="json")
    app.conf.task_always_eager = True  # the broker is back: tasks run (here, in-process)
    assert owner_api.post(MESSAGES, {"role": "user", "content": "and more"}, format="json").status_code == 201
    assert list(Compaction.objects.filter(thread=thread).values_list("status", flat=True)) == ["succeeded"]


@pytest.mark.django_db(transaction=True)
def test_a_compaction_request_answers_503_naming_the_broker_and_leaves_nothing_pending(owner_api, thread, broker_down):
    owner_api.post(MESSAGES, {"role": "user", "content": "something to compact"}, format="json")
    response = owner_api.post(f"/api/v1/threads/{SLACK}/compact/")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert "the task broker did not take the compaction" in response.json()["detail"]
    assert not Compaction.objects.filter(thread=thread).exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_append_whose_connection_drops_after_the_commit_answers_201(owner, settings):
    if connection.vendor != "postgresql":
        pytest.skip("terminates a PostgreSQL backend")
    thread = make_thread(owner, SLACK)
    settings.THREADMEM_COMPACT_AT_CHARS = 10  # the automatic check queries the database after the commit

    def drop_connection(_thread) -> None:
        pid = connection.connection.info.backend_pid
        with other_session(autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", [pid])

    services.after_append_hooks.insert(0, drop_connection)
    try:
        response = token_client(owner).post(
            MESSAGES, {"role": "user", "content": "stored, then cut off"}, format="json"
        )
    finally:
        services.after_append_hooks.remove(drop_connection)
    connection.close()
    assert response.status_code == 201
    assert list(Message.objects.filter(thread=thread).values_list("content", flat=True)) == ["stored, then cut off"]
