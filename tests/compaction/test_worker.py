"""Compaction on real Celery workers over the real broker (marked ``worker``).

Skipped without CELERY_BROKER_URL (conftest.celery_mode); CI runs them on
PostgreSQL with Redis. The workers are separate processes started here with
``celery -A config worker``, pointed at pytest's test database and at the
loopback fake model server, consuming a queue of their own; tests use
committed data (``transaction=True``) so the workers see it.

- two prefork workers, ten concurrent requests (plus duplicate deliveries of
  the task): one claim, one model call, one new generation;
- messages appended while the model call is held open land in the new
  generation, none lost or duplicated;
- SIGKILL of the pool process running a compaction: ``reject_on_worker_lost``
  puts the message back at once, and the redelivered task takes over the dead
  claim (same host, pid gone) and completes;
- SIGKILL of a whole worker (solo pool, nothing left to report the loss): on
  Redis the message comes back after the visibility timeout, set to a few
  seconds for these workers (CELERY_VISIBILITY_TIMEOUT), and another worker
  completes it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.support.compaction import (
    assert_history_intact,
    compaction_held,
    compaction_of,
    deploy_conversation,
    nine_sections,
    section,
)
from tests.support.factories import make_thread, token_client
from tests.support.workers import Workers, api_post, sending_to, wait_until
from threadmem.domain import selectors
from threadmem.features.compaction.tasks import compaction_run_task
from threadmem.models import Compaction, Generation, Message

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

# The whole-worker kill test: Redis hands an unacknowledged task to another worker after this.
SHORT_VISIBILITY_TIMEOUT = 4


def test_ten_concurrent_requests_on_two_workers_make_exactly_one_new_generation(workers, owner, fake, idle_after):
    thread = make_thread(owner, "worker:concurrent")
    deploy_conversation(thread)
    before = Message.objects.filter(thread=thread).count()
    gate = fake.push_chat(nine_sections(s8="the one summary"), hold=True)
    url = f"/api/v1/threads/{thread.channel}/compact/"
    start = threading.Barrier(10)

    def request(_: int) -> tuple[int, Any]:
        client = token_client(owner)
        start.wait()
        return api_post(client, url)

    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(pool.map(request, range(10)))
    compaction = compaction_of(thread)
    # Once the requested task holds the claim (its model call is held open),
    # the same task is delivered again and again: both workers get copies.
    fake.wait_for_requests(1, path_suffix="/chat/completions")
    duplicates = [f"duplicate-{index}-{uuid.uuid4().hex[:8]}" for index in range(4)]
    for task_id in duplicates:
        compaction_run_task.apply_async(args=[compaction.id], task_id=task_id)
    time.sleep(1.5)  # let the duplicates reach the workers while the model call is held
    gate.set()
    wait_until(lambda: compaction_of(thread).status == "succeeded", workers, what="the compaction")
    wait_until(lambda: workers.queued() == 0, workers, what="the duplicates")
    time.sleep(1.5)

    assert [status for status, _ in answers] == [202] * 10
    assert {body["task_id"] for _, body in answers} == {compaction.task_id}
    assert {body["compaction_id"] for _, body in answers} == {compaction.id}
    assert Compaction.objects.filter(thread=thread).count() == 1
    assert len(fake.chat_requests()) == 1  # claimed once: one model call
    thread.refresh_from_db()
    assert thread.current_generation == 2
    assert list(Generation.objects.filter(thread=thread).values_list("number", "state")) == [
        (1, "closed"),
        (2, "open"),
    ]
    messages = assert_history_intact(thread, before=before)
    summary = next(m for m in messages if m.kind == Message.Kind.SUMMARY)
    assert section(summary.content, 8) == "the one summary"
    assert compaction_of(thread).attempts == 1
    # Both workers ran copies; every duplicate found the claim taken and left.
    for task_id in duplicates:
        finished = [line for line in workers.logs().splitlines() if task_id in line and "succeeded in" in line]
        assert len(finished) == 1, workers.logs()
        assert "'busy:" in finished[0] or "'skipped:" in finished[0]
    ran = [*duplicates, compaction.task_id]
    assert all(any(task_id in workers.log(name) for task_id in ran) for name in ("w1", "w2"))


def test_messages_appended_while_the_model_call_is_in_flight_land_in_the_new_generation(
    workers, owner, fake, idle_after
):
    thread = make_thread(owner, "worker:late-arrivals")
    deploy_conversation(thread)
    before = Message.objects.filter(thread=thread).count()
    gate = fake.push_chat(nine_sections(), hold=True)
    client = token_client(owner)
    messages_url = f"/api/v1/threads/{thread.channel}/messages/"

    status, started = api_post(client, f"/api/v1/threads/{thread.channel}/compact/")
    fake.wait_for_requests(1, path_suffix="/chat/completions")
    running = compaction_of(thread)

    def append_one(index: int) -> tuple[int, Any]:
        return api_post(token_client(owner), messages_url, {"role": "user", "content": f"late message {index}"})

    with ThreadPoolExecutor(max_workers=5) as pool:
        singles = list(pool.map(append_one, range(5)))
    batch_status, _ = api_post(
        client, messages_url, [{"role": "assistant", "content": f"late batch {index}"} for index in range(3)]
    )
    gate.set()
    wait_until(lambda: compaction_of(thread).status == "succeeded", workers, what="the compaction")

    assert status == 202 and started["generation"] == 1
    assert running.status == "running"
    assert running.cut_seq == before
    assert [s for s, _ in singles] == [201] * 5 and batch_status == 201
    late_texts = {f"late message {i}" for i in range(5)} | {f"late batch {i}" for i in range(3)}
    messages = assert_history_intact(thread, before=before + len(late_texts))
    generation_one = [m for m in messages if m.generation == 1]
    generation_two = [m for m in messages if m.generation == 2]
    assert [m.seq for m in generation_one] == list(range(1, before + 1))
    assert {m.content for m in generation_two if m.kind == Message.Kind.MESSAGE} == late_texts
    assert all(m.seq > running.cut_seq for m in generation_two)
    summary = next(m for m in generation_two if m.kind == Message.Kind.SUMMARY)
    assert not any(text in summary.content for text in late_texts)
    thread.refresh_from_db()
    context = selectors.context_messages(thread)
    assert context[0].id == summary.id
    assert [m.seq for m in context[1:]] == sorted(m.seq for m in generation_two if m.id != summary.id)


def test_a_pool_process_killed_mid_compaction_is_redelivered_and_completed(workers, owner, fake, idle_after):
    thread, before, gate, status = compaction_held(
        owner, fake, "worker:killed-child", then_section_8="written after the redelivery"
    )
    claimed = compaction_of(thread)
    state_while_running = Generation.objects.get(thread=thread, number=1).state
    holder_pid = int(claimed.claimed_by.rsplit(":", 2)[1])
    assert holder_pid not in {p.pid for p in workers.processes.values()}  # a pool process, not a worker
    os.kill(holder_pid, signal.SIGKILL)
    wait_until(lambda: compaction_of(thread).status == "succeeded", workers, what="the redelivered compaction")
    gate.set()

    assert status == 202
    assert claimed.status == "running"
    assert state_while_running == "compacting"
    done = compaction_of(thread)
    assert done.attempts == 2
    assert done.error == ""
    messages = assert_history_intact(thread, before=before)
    summary = next(m for m in messages if m.kind == Message.Kind.SUMMARY)
    assert section(summary.content, 8) == "written after the redelivery"
    assert Generation.objects.filter(thread=thread).count() == 2
    assert "WorkerLostError" in workers.logs() or "signal 9" in workers.logs()


def test_a_whole_worker_killed_mid_compaction_is_redelivered_by_the_broker(workers, owner, fake, tmp_path):
    """Solo workers: the task runs in the worker process itself, so killing it leaves nobody to
    reject the message; the broker hands it out again (Redis after the visibility timeout)."""
    solo = Workers(queue=f"{workers.queue}-solo", log_dir=tmp_path, fake=fake)
    short = {"CELERY_VISIBILITY_TIMEOUT": str(SHORT_VISIBILITY_TIMEOUT)}
    with sending_to(solo.queue):
        try:
            solo.purge()
            solo.start("s1", pool="solo", extra_env=short)
            solo.start("s2", pool="solo", extra_env=short)
            thread, before, gate, status = compaction_held(
                owner, fake, "worker:killed-worker", then_section_8="written by the other worker"
            )
            holder_pid = int(compaction_of(thread).claimed_by.rsplit(":", 2)[1])
            holder = next(name for name, process in solo.processes.items() if process.pid == holder_pid)
            survivor = next(name for name in solo.processes if name != holder)
            solo.kill(holder)
            wait_until(lambda: compaction_of(thread).status == "succeeded", solo, what="the broker's redelivery")
            gate.set()

            assert status == 202
            done = compaction_of(thread)
            assert done.attempts == 2
            messages = assert_history_intact(thread, before=before)
            summary = next(m for m in messages if m.kind == Message.Kind.SUMMARY)
            assert section(summary.content, 8) == "written by the other worker"
            assert done.task_id in solo.log(survivor)
            wait_until(lambda: solo.queued() == 0, solo, what="the queue to drain")
        finally:
            solo.stop_all()
            solo.delete_queue()
