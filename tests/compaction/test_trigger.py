"""Automatic compaction: the running total of a generation's visible text, the threshold, and what it costs."""

from __future__ import annotations

import pytest
from django.utils import timezone

from tests.support.compaction import deploy_conversation
from tests.support.factories import append
from threadmem.features.compaction import compacting
from threadmem.models import Compaction, Generation

# --- the automatic trigger ------------------------------------------------------


def test_it_compacts_automatically_once_the_generation_passes_the_threshold(
    thread, no_model, settings, django_capture_on_commit_callbacks
):
    settings.THREADMEM_COMPACT_AT_CHARS = 1_000
    with django_capture_on_commit_callbacks(execute=True):
        append(thread, {"role": "user", "content": "x" * 600})
    assert Compaction.objects.count() == 0

    with django_capture_on_commit_callbacks(execute=True):
        append(thread, {"role": "assistant", "content": "y" * 600})

    compaction = Compaction.objects.get()
    assert (compaction.trigger, compaction.status) == ("auto", Compaction.Status.SUCCEEDED)
    thread.refresh_from_db()
    assert thread.current_generation == 2


def test_it_counts_tool_call_arguments_but_not_hidden_messages_towards_the_threshold(thread, no_model):
    append(thread, {"role": "user", "content": "abc"})
    base = compacting.compaction_selectors.generation_visible_chars(thread=thread, generation=1)

    append(thread, {"role": "user", "content": "z" * 500, "model_visible": False})
    after_hidden = compacting.compaction_selectors.generation_visible_chars(thread=thread, generation=1)
    append(
        thread, {"role": "assistant", "tool_calls": [{"id": "c", "name": "bash", "arguments": {"command": "x" * 300}}]}
    )
    after_call = compacting.compaction_selectors.generation_visible_chars(thread=thread, generation=1)

    assert base >= len("abc")
    assert after_hidden == base
    assert after_call - base >= 300


def test_the_automatic_trigger_costs_one_query_below_the_threshold(thread, no_model, django_assert_num_queries):
    append(thread, {"role": "user", "content": "short"})

    with django_assert_num_queries(1):
        compacting.compaction_auto_after_append(thread)


def test_the_automatic_trigger_waits_after_a_recent_failure(thread, fake_openai, settings):
    settings.THREADMEM_COMPACT_AT_CHARS = 10
    deploy_conversation(thread)  # no on_commit execution: the task does not run here
    live = Compaction.objects.get()
    Compaction.objects.filter(pk=live.pk).update(status=Compaction.Status.FAILED, finished_at=timezone.now())

    append(thread, {"role": "user", "content": "more text"})

    assert Compaction.objects.count() == 1


def test_a_request_re_enqueues_a_live_compaction_whose_task_was_lost(
    thread, no_model, django_capture_on_commit_callbacks
):
    deploy_conversation(thread)
    lost = compacting.compaction_request(thread=thread, enqueue=False)  # its message never reached a worker
    Compaction.objects.filter(pk=lost.pk).update(created_at=timezone.now() - compacting.lease_duration() * 2)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        again = compacting.compaction_request(thread=thread)

    lost.refresh_from_db()
    assert again.id == lost.id
    assert len(callbacks) == 1
    assert lost.status == Compaction.Status.SUCCEEDED


def test_a_request_does_not_re_enqueue_a_compaction_waiting_for_its_retry(
    thread, fake_openai, django_capture_on_commit_callbacks
):
    deploy_conversation(thread)
    compaction = compacting.compaction_request(thread=thread, enqueue=False)
    fake_openai.push_error(500)
    with pytest.raises(compacting.llm.LLMUnavailable):
        compacting.compaction_run(compaction_id=compaction.id, final_attempt=False)
    compaction.refresh_from_db()

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        again = compacting.compaction_request(thread=thread)

    assert again.id == compaction.id
    assert compaction.status == Compaction.Status.PENDING
    assert compaction.error.startswith("attempt 1 failed, retrying: ")
    assert compaction.lease_expires_at > timezone.now() + compacting.lease_duration()
    assert Generation.objects.get(thread=thread).state == Generation.State.OPEN
    assert callbacks == []


def test_appends_keep_a_running_total_of_the_generations_visible_text(thread, no_model):
    append(thread, {"role": "user", "content": "héllo"})  # 6 bytes in UTF-8
    append(thread, {"role": "user", "content": "hidden", "model_visible": False})
    append(thread, {"role": "assistant", "tool_calls": [{"id": "c", "name": "bash", "arguments": {"cmd": "ls"}}]})

    total = Generation.objects.get(thread=thread, number=1).visible_chars

    assert total == len("héllo".encode()) + len('[{"cmd": "ls"}]')
    assert compacting.compaction_selectors.generation_visible_chars(thread=thread, generation=1) == total


def test_the_new_generation_starts_its_total_with_the_summary_and_the_late_arrivals(thread, no_model):
    deploy_conversation(thread)
    claim = compacting.compaction_claim(compaction_id=compacting.compaction_request(thread=thread, enqueue=False).pk)
    data = compacting.compaction_selectors.generation_input(thread=thread, generation=1, cut_seq=claim.cut_seq)
    summary = compacting.summarize(data)
    append(thread, {"role": "user", "content": "late arrival " * 10})  # after the cut: moves to generation 2

    compacting.compaction_commit(claim=claim, summary=summary)

    new = Generation.objects.get(thread=thread, number=2)
    assert new.visible_chars == compacting.compaction_selectors.messages_visible_chars(thread=thread, generation=2)
    assert new.visible_chars >= len(summary.content) + len("late arrival " * 10)
