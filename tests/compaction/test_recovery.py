"""A worker killed mid-compaction stalls its thread for about one lease, on every broker (compaction/recovery.py).

The claim of a worker's attempt carries a short lease that a heartbeat
renews; once a dead worker's lease runs out, the sweep (Celery beat) sends the
compaction to a worker again and the next attempt takes the claim over. The
worker test uses Redis with its default visibility timeout (an hour), so the
broker's own redelivery cannot be what completes the compaction.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from tests.support.compaction import (
    assert_history_intact,
    compaction_held,
    compaction_of,
    deploy_conversation,
    section,
)
from tests.support.factories import append, make_thread, token_client
from tests.support.workers import Workers, api_post, sending_to, wait_until
from threadmem.features.compaction import compacting, recovery
from threadmem.features.compaction.claim import dispatch_timeout
from threadmem.features.compaction.lease import claim_heartbeat
from threadmem.models import Compaction, Message

LEASE = 4  # seconds a killed worker's claim is still trusted


def running_claim(thread, *, expires_in: float) -> Compaction:
    compaction = compacting.compaction_request(thread=thread, enqueue=False)
    claim = compacting.compaction_claim(compaction_id=compaction.id)
    Compaction.objects.filter(pk=claim.compaction_id).update(
        claimed_by="elsewhere:1:dead", lease_expires_at=timezone.now() + timedelta(seconds=expires_in)
    )
    return Compaction.objects.get(pk=compaction.pk)


@pytest.mark.django_db
def test_the_sweep_sends_again_a_compaction_whose_lease_ran_out(owner, thread, no_model):
    append(thread, {"role": "user", "content": "deploy staging-7"})
    stale = running_claim(thread, expires_in=-1)
    assert recovery.compaction_sweep() == 1  # tasks run in-process here: the takeover completes it
    stale.refresh_from_db()
    assert (stale.status, stale.attempts) == ("succeeded", 2)


@pytest.mark.django_db
def test_the_sweep_leaves_a_claim_whose_lease_is_alive(owner, thread, no_model):
    append(thread, {"role": "user", "content": "deploy staging-7"})
    alive = running_claim(thread, expires_in=60)
    assert recovery.compaction_sweep() == 0
    alive.refresh_from_db()
    assert alive.status == "running"


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_renews_the_lease_until_the_attempt_ends(owner, no_model):
    thread = make_thread(owner, "recovery:heartbeat")
    append(thread, {"role": "user", "content": "deploy staging-7"})
    compaction = compacting.compaction_request(thread=thread, enqueue=False)
    lease = timedelta(seconds=0.4)
    claim = compacting.compaction_claim(compaction_id=compaction.id, lease=lease)
    first = Compaction.objects.get(pk=compaction.pk).lease_expires_at
    with claim_heartbeat(compaction_id=claim.compaction_id, token=claim.token, lease=lease):
        deadline = time.monotonic() + 10
        while Compaction.objects.get(pk=compaction.pk).lease_expires_at <= first:
            assert time.monotonic() < deadline, "the lease was never renewed"
            time.sleep(0.05)
    renewed = Compaction.objects.get(pk=compaction.pk).lease_expires_at
    time.sleep(0.3)  # past the heartbeat's next beat: it stopped with the block
    assert Compaction.objects.get(pk=compaction.pk).lease_expires_at == renewed


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_whole_worker_killed_mid_compaction_is_completed_within_a_lease_by_the_sweep(owner, fake, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("worker processes share the test database: PostgreSQL")
    pool = Workers(queue=f"threadmem-recovery-{tmp_path.name}", log_dir=tmp_path, fake=fake)
    quick = {"COMPACTION_LEASE": str(LEASE), "COMPACTION_SWEEP_SECONDS": "1"}
    with sending_to(pool.queue):
        try:
            pool.purge()
            pool.start("holder", pool="solo", extra_env=quick)
            thread, before, gate, status = compaction_held(
                owner, fake, "worker:killed-then-swept", then_section_8="written after the sweep"
            )
            pool.kill("holder")  # the whole process group: nobody is left to give the task back
            pool.start("survivor", pool="solo", extra_env=quick, beat=True)
            # wait_until gives up after 60 s: the bound from a worker being back.
            wait_until(lambda: compaction_of(thread).status == "succeeded", pool, what="the sweep's takeover")
            gate.set()

            assert status == 202
            done = compaction_of(thread)
            assert done.attempts == 2
            summary = next(m for m in assert_history_intact(thread, before=before) if m.kind == Message.Kind.SUMMARY)
            assert section(summary.content, 8) == "written after the sweep"
        finally:
            pool.stop_all()
            pool.delete_queue()


@pytest.mark.django_db
def test_the_sweep_sends_again_a_compaction_never_started_within_the_dispatch_timeout(owner, thread, no_model):
    append(thread, {"role": "user", "content": "deploy staging-7"})
    lost = compacting.compaction_request(thread=thread, enqueue=False)  # its task message never reached a worker
    sent_at = timezone.now() - dispatch_timeout() - timedelta(seconds=1)
    Compaction.objects.filter(pk=lost.pk).update(created_at=sent_at)
    assert sent_at + compacting.lease_duration() > timezone.now()  # long before a lease would have run out
    assert recovery.compaction_sweep() == 1  # tasks run in-process here: the resent task completes it
    lost.refresh_from_db()
    assert (lost.status, lost.attempts) == ("succeeded", 1)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_compaction_whose_task_was_lost_after_its_202_is_sent_again_after_the_dispatch_timeout(
    owner, fake, settings, tmp_path
):
    if connection.vendor != "postgresql":
        pytest.skip("worker processes share the test database: PostgreSQL")
    pool = Workers(queue=f"threadmem-lost-{tmp_path.name}", log_dir=tmp_path, fake=fake)
    quick = {"COMPACTION_DISPATCH_TIMEOUT": "2", "COMPACTION_SWEEP_SECONDS": "1"}
    settings.COMPACTION_DISPATCH_TIMEOUT = 2  # the process that sends the task sets its deadline
    with sending_to(pool.queue):
        try:
            pool.purge()
            thread = make_thread(owner, "worker:lost-task")
            deploy_conversation(thread)
            status, _ = api_post(token_client(owner), f"/api/v1/threads/{thread.channel}/compact/")
            assert status == 202
            assert pool.queued() == 1
            pool.purge()  # the broker restarted without persistence: the task message is gone
            started = time.monotonic()
            pool.start("worker", pool="solo", extra_env=quick, beat=True)
            wait_until(lambda: compaction_of(thread).status == "succeeded", pool, what="the sweep sending it again")
            assert time.monotonic() - started < 30  # not a lease (16.5 minutes by default)
            assert compaction_of(thread).attempts == 1
        finally:
            pool.stop_all()
            pool.delete_queue()
