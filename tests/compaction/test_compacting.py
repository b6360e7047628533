"""Compaction as a service and a task (in-process here; tests/compaction/test_worker.py runs real workers).

Generations switch exactly once, late messages move, failed model calls are
retried and finally reported with the thread intact, claims are taken over
only from dead holders, and the automatic trigger stays cheap.
"""

from __future__ import annotations

import socket

import pytest
from django.utils import timezone

from tests.support.compaction import deploy_conversation, nine_sections, section
from tests.support.factories import append, make_thread
from threadmem.domain import selectors
from threadmem.features.compaction import compacting
from threadmem.features.compaction.tasks import compaction_run_task
from threadmem.models import Compaction, Generation, Message, Thread

ATTEMPTS = compaction_run_task.max_retries + 1


def request_and_run(thread: Thread, capture) -> Compaction:
    """Request a compaction and run its task in-process on commit, as the API does."""
    with capture(execute=True):
        compaction = compacting.compaction_request(thread=thread, trigger="test")
    compaction.refresh_from_db()
    return compaction


def snapshot(thread: Thread) -> list[tuple[int, int, str, str]]:
    return list(Message.objects.filter(thread=thread).order_by("seq").values_list("id", "seq", "role", "content"))


def test_it_closes_the_generation_and_opens_the_next_with_the_summary(
    thread, no_model, django_capture_on_commit_callbacks
):
    talk = deploy_conversation(thread)

    compaction = request_and_run(thread, django_capture_on_commit_callbacks)

    thread.refresh_from_db()
    assert compaction.status == Compaction.Status.SUCCEEDED
    assert compaction.model == "offline"
    assert compaction.attempts == 1
    assert compaction.cut_seq == talk.answer.seq
    assert thread.current_generation == 2
    first, second = Generation.objects.filter(thread=thread).order_by("number")
    assert (first.state, second.state) == (Generation.State.CLOSED, Generation.State.OPEN)
    assert first.closed_at is not None
    summary = first.summary_message
    assert summary.kind == Message.Kind.SUMMARY
    assert summary.generation == 2
    assert summary.id == compaction.summary_message_id
    assert compaction.output_chars == len(summary.content)
    # Nothing moved out of generation 1: every original message stays there, verbatim.
    assert Message.objects.filter(thread=thread, generation=1).count() == 8


def test_the_context_starts_with_the_summary_after_compaction(thread, no_model, django_capture_on_commit_callbacks):
    deploy_conversation(thread)
    request_and_run(thread, django_capture_on_commit_callbacks)
    (later,) = append(thread, {"role": "user", "content": "and now?"})

    thread.refresh_from_db()
    context = selectors.context_messages(thread)

    assert [m.kind for m in context] == [Message.Kind.SUMMARY, Message.Kind.MESSAGE]
    assert context[1].id == later.id
    assert context[0].content.startswith("Summary of generation 1")


def test_it_moves_messages_that_arrived_after_the_cut_into_the_new_generation(thread, no_model):
    deploy_conversation(thread)
    claim = compacting.compaction_claim(compaction_id=compacting.compaction_request(thread=thread, enqueue=False).id)
    # Appends go on while the model is being called.
    late = append(thread, {"role": "user", "content": "one more thing"}, {"role": "assistant", "content": "sure"})
    thread.refresh_from_db()
    summary = compacting.summarize(
        compacting.compaction_selectors.generation_input(thread=thread, generation=1, cut_seq=claim.cut_seq)
    )

    message = compacting.compaction_commit(claim=claim, summary=summary)

    assert claim.cut_seq == 8
    assert all(m.generation == 1 for m in late)  # they landed in generation 1 while it was compacting
    moved = Message.objects.filter(thread=thread, generation=2).order_by("seq")
    assert [m.id for m in moved] == [late[0].id, late[1].id, message.id]
    assert "one more thing" not in message.content  # after the cut: not summarized, not lost
    assert Message.objects.filter(thread=thread, generation=1).count() == 8
    seqs = list(Message.objects.filter(thread=thread).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, 12))
    thread.refresh_from_db()
    assert [m.id for m in selectors.context_messages(thread)] == [message.id, late[0].id, late[1].id]


def test_a_generation_with_nothing_new_answers_conflict(thread, no_model, django_capture_on_commit_callbacks):
    deploy_conversation(thread)
    request_and_run(thread, django_capture_on_commit_callbacks)

    with pytest.raises(compacting.Conflict, match="nothing to compact in generation 2"):
        compacting.compaction_request(thread=thread)

    assert Compaction.objects.filter(thread=thread).count() == 1


def test_an_empty_thread_has_nothing_to_compact(thread, no_model):
    with pytest.raises(compacting.Conflict, match="nothing to compact in generation 1"):
        compacting.compaction_request(thread=thread)


def test_a_request_while_one_is_live_answers_with_the_same_one(thread, no_model, django_capture_on_commit_callbacks):
    deploy_conversation(thread)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        first = compacting.compaction_request(thread=thread)
        second = compacting.compaction_request(thread=thread)

    assert second.id == first.id
    assert second.task_id == first.task_id
    assert len(callbacks) == 1  # enqueued once


def test_running_the_same_compaction_twice_makes_exactly_one_generation(thread, no_model):
    deploy_conversation(thread)
    compaction = compacting.compaction_request(thread=thread, enqueue=False)

    outcomes = [compacting.compaction_run(compaction_id=compaction.id) for _ in range(3)]

    assert [o.status for o in outcomes] == ["succeeded", "skipped", "skipped"]
    assert Generation.objects.filter(thread=thread).count() == 2
    assert Message.objects.filter(thread=thread, kind=Message.Kind.SUMMARY).count() == 1


def test_a_vanished_compaction_exits_cleanly(thread, no_model):
    deploy_conversation(thread)
    compaction = compacting.compaction_request(thread=thread, enqueue=False)
    compaction.delete()

    result = compaction_run_task.apply(args=[compaction.id]).get()

    assert result.startswith("skipped")
    assert Generation.objects.filter(thread=thread).count() == 1


def test_it_retries_http_500s_then_fails_with_the_reason_and_the_thread_intact(
    thread, fake_openai, django_capture_on_commit_callbacks
):
    deploy_conversation(thread)
    before = snapshot(thread)
    for _ in range(ATTEMPTS):
        fake_openai.push_error(500, "the GPU fell over")

    compaction = request_and_run(thread, django_capture_on_commit_callbacks)

    assert len(fake_openai.chat_requests()) == ATTEMPTS
    assert compaction.status == Compaction.Status.FAILED
    assert compaction.attempts == ATTEMPTS
    assert compaction.finished_at is not None
    assert "HTTP 500" in compaction.error and "the GPU fell over" in compaction.error
    thread.refresh_from_db()
    assert thread.current_generation == 1
    assert Generation.objects.get(thread=thread).state == Generation.State.OPEN
    assert snapshot(thread) == before
    # Usable: appends land, and the next compaction works once the model is back.
    append(thread, {"role": "user", "content": "still there?"})
    fake_openai.push_chat(nine_sections())
    assert request_and_run(thread, django_capture_on_commit_callbacks).status == Compaction.Status.SUCCEEDED


def test_it_retries_timeouts_and_server_errors_until_the_last_attempt_fails(
    thread, fake_openai, settings, django_capture_on_commit_callbacks
):
    settings.THREADMEM_LLM_TIMEOUT = 0.2
    deploy_conversation(thread)
    before = snapshot(thread)
    for attempt in range(ATTEMPTS):
        if attempt % 2:
            fake_openai.push_error(503)
        else:
            fake_openai.push_chat(nine_sections(), delay=0.6)

    compaction = request_and_run(thread, django_capture_on_commit_callbacks)

    assert compaction.status == Compaction.Status.FAILED
    assert compaction.attempts == ATTEMPTS
    last_was_timeout = (ATTEMPTS - 1) % 2 == 0
    assert ("no answer within 0.2 s" if last_was_timeout else "HTTP 503") in compaction.error
    assert snapshot(thread) == before
    assert Generation.objects.get(thread=thread).state == Generation.State.OPEN


def test_it_succeeds_when_the_model_recovers_before_the_last_attempt(
    thread, fake_openai, settings, django_capture_on_commit_callbacks
):
    settings.THREADMEM_LLM_TIMEOUT = 0.2
    deploy_conversation(thread)
    fake_openai.push_error(500)
    fake_openai.push_chat("late", delay=0.6)
    fake_openai.push_chat(nine_sections(s8="recovered"))

    compaction = request_and_run(thread, django_capture_on_commit_callbacks)

    assert compaction.status == Compaction.Status.SUCCEEDED
    assert compaction.attempts == 3
    assert compaction.error == ""
    assert compaction.model == fake_openai.chat_model
    assert compaction.input_chars > 0
    assert section(Message.objects.get(pk=compaction.summary_message_id).content, 8) == "recovered"
    assert Generation.objects.filter(thread=thread).count() == 2


@pytest.mark.parametrize(
    "garbage",
    [
        {"raw": "<html><h1>502 Bad Gateway</h1></html>", "content_type": "text/html"},
        {"raw": '{"unexpected": true}'},
        {"chat": ""},
        {"chat": "Sorry, I can't summarize this."},
    ],
    ids=["html", "wrong-json", "empty", "no-headings"],
)
def test_a_garbage_or_empty_answer_is_retried_and_finally_reported(
    thread, fake_openai, django_capture_on_commit_callbacks, garbage
):
    deploy_conversation(thread)
    before = snapshot(thread)
    for _ in range(ATTEMPTS):
        if "raw" in garbage:
            fake_openai.push_raw(garbage["raw"], content_type=garbage.get("content_type", "application/json"))
        else:
            fake_openai.push_chat(garbage["chat"])

    compaction = request_and_run(thread, django_capture_on_commit_callbacks)

    assert compaction.status == Compaction.Status.FAILED
    assert compaction.attempts == ATTEMPTS
    assert "chat completion:" in compaction.error
    assert snapshot(thread) == before
    assert Generation.objects.get(thread=thread).state == Generation.State.OPEN


def test_a_garbage_answer_followed_by_a_good_one_succeeds(thread, fake_openai, django_capture_on_commit_callbacks):
    deploy_conversation(thread)
    fake_openai.push_chat("")
    fake_openai.push_chat(nine_sections())

    compaction = request_and_run(thread, django_capture_on_commit_callbacks)

    assert (compaction.status, compaction.attempts) == (Compaction.Status.SUCCEEDED, 2)


def test_a_refused_request_fails_at_once_without_retrying(thread, fake_openai, django_capture_on_commit_callbacks):
    deploy_conversation(thread)
    fake_openai.push_error(404, "model 'fake-chat-model' not found")

    compaction = request_and_run(thread, django_capture_on_commit_callbacks)

    assert (compaction.status, compaction.attempts) == (Compaction.Status.FAILED, 1)
    assert "HTTP 404" in compaction.error
    assert len(fake_openai.chat_requests()) == 1


def test_a_claim_whose_holder_died_is_taken_over(thread, no_model):
    deploy_conversation(thread)
    compaction = compacting.compaction_request(thread=thread, enqueue=False)
    dead_pid = 2**22 + 12345  # above pid_max on Linux by default: no such process
    Compaction.objects.filter(pk=compaction.pk).update(
        status=Compaction.Status.RUNNING,
        attempts=1,
        claimed_by=f"{socket.gethostname()}:{dead_pid}:abcd",
        lease_expires_at=timezone.now() + compacting.lease_duration(),
    )
    Generation.objects.filter(thread=thread).update(state=Generation.State.COMPACTING)

    outcome = compacting.compaction_run(compaction_id=compaction.id)

    compaction.refresh_from_db()
    assert outcome.status == "succeeded"
    assert (compaction.status, compaction.attempts) == (Compaction.Status.SUCCEEDED, 2)
    assert Generation.objects.filter(thread=thread).count() == 2


def test_a_claim_whose_holder_is_alive_is_left_alone(thread, no_model):
    deploy_conversation(thread)
    compaction = compacting.compaction_request(thread=thread, enqueue=False)
    holder = compacting.claimant_token()  # this very process: alive
    Compaction.objects.filter(pk=compaction.pk).update(
        status=Compaction.Status.RUNNING,
        claimed_by=holder,
        lease_expires_at=timezone.now() + compacting.lease_duration(),
    )

    outcome = compacting.compaction_run(compaction_id=compaction.id)

    compaction.refresh_from_db()
    assert outcome.status == "busy"
    assert (compaction.status, compaction.claimed_by) == (Compaction.Status.RUNNING, holder)
    assert Generation.objects.filter(thread=thread).count() == 1


def test_a_claim_whose_lease_ran_out_is_taken_over_even_from_another_host(thread, no_model):
    deploy_conversation(thread)
    compaction = compacting.compaction_request(thread=thread, enqueue=False)
    Compaction.objects.filter(pk=compaction.pk).update(
        status=Compaction.Status.RUNNING,
        claimed_by="some-other-host:1:abcd",
        lease_expires_at=timezone.now() - timezone.timedelta(seconds=1),
    )

    assert compacting.compaction_run(compaction_id=compaction.id).status == "succeeded"


def test_a_claim_on_another_host_within_its_lease_is_looked_at_again_when_it_ends(thread, no_model):
    deploy_conversation(thread)
    compaction = compacting.compaction_request(thread=thread, enqueue=False)
    lease_end = timezone.now() + compacting.lease_duration()
    Compaction.objects.filter(pk=compaction.pk).update(
        status=Compaction.Status.RUNNING, claimed_by="some-other-host:1:abcd", lease_expires_at=lease_end
    )

    outcome = compacting.compaction_run(compaction_id=compaction.id)

    assert outcome.status == "busy"
    assert outcome.retry_at == lease_end


def test_a_commit_by_an_attempt_that_lost_its_claim_writes_nothing(thread, no_model):
    deploy_conversation(thread)
    compaction = compacting.compaction_request(thread=thread, enqueue=False)
    stale = compacting.compaction_claim(compaction_id=compaction.id)
    Compaction.objects.filter(pk=compaction.pk).update(claimed_by="newer-host:2:beef")
    data = compacting.compaction_selectors.generation_input(thread=thread, generation=1, cut_seq=stale.cut_seq)

    assert compacting.compaction_commit(claim=stale, summary=compacting.summarize(data)) is None

    assert Generation.objects.filter(thread=thread).count() == 1
    assert not Message.objects.filter(thread=thread, kind=Message.Kind.SUMMARY).exists()


def test_a_fork_compacts_its_inherited_context_too(owner, thread, no_model):
    talk = deploy_conversation(thread)
    fork = make_thread(owner, "fork-1", fork_from=talk.ssh_result)
    append(fork, {"role": "user", "content": "in the fork now"})

    compaction = compacting.compaction_run_now(thread=fork)

    text = Message.objects.get(pk=compaction.summary_message_id).content
    assert compaction.status == Compaction.Status.SUCCEEDED
    assert f"messageId={talk.request.id}: Please restart nginx" in section(text, 6)
    assert "in the fork now" in section(text, 6)
    assert f"first successful access: messageId={talk.ssh.id}" in section(text, 10)
    assert Generation.objects.filter(thread=thread).count() == 1  # the parent is untouched
