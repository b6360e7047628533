"""Compaction's triggers and history: POST /compact/, GET /compactions/, `manage.py compact`."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.support.compaction import deploy_conversation, nine_sections
from tests.support.factories import append
from threadmem.features.compaction.tasks import compaction_run_task
from threadmem.models import Compaction, Generation, Message

CHANNEL = "slack:C042/1700000000.1"


def compact_url(channel: str = CHANNEL) -> str:
    return f"/api/v1/threads/{channel}/compact/"


def history_url(channel: str = CHANNEL) -> str:
    return f"/api/v1/threads/{channel}/compactions/"


@pytest.mark.django_db(transaction=True)
def test_compact_answers_202_with_the_task_id_and_the_generation(owner_api, thread, no_model):
    deploy_conversation(thread)

    response = owner_api.post(compact_url())

    assert response.status_code == 202, response.content
    body = response.json()
    compaction = Compaction.objects.get()
    assert body == {
        "task_id": compaction.task_id,
        "generation": 1,
        "compaction_id": compaction.id,
        "status": "succeeded",  # no broker: it ran on commit, in this process
    }
    assert compaction.requested_by.username == "owner"
    assert compaction.trigger == "api"
    thread.refresh_from_db()
    assert thread.current_generation == 2


def test_a_second_request_while_one_is_pending_answers_with_the_same_task(
    owner_api, thread, no_model, django_capture_on_commit_callbacks
):
    deploy_conversation(thread)

    with django_capture_on_commit_callbacks(execute=False):
        first = owner_api.post(compact_url()).json()
        second = owner_api.post(compact_url()).json()

    assert first["status"] == second["status"] == "pending"
    assert second["task_id"] == first["task_id"]
    assert second["compaction_id"] == first["compaction_id"]
    assert Compaction.objects.count() == 1


def test_compacting_again_with_nothing_new_answers_409_saying_so(
    owner_api, thread, no_model, django_capture_on_commit_callbacks
):
    deploy_conversation(thread)
    with django_capture_on_commit_callbacks(execute=True):
        owner_api.post(compact_url())

    response = owner_api.post(compact_url())

    assert response.status_code == 409
    assert "nothing to compact in generation 2" in response.json()["detail"]
    assert Generation.objects.filter(thread=thread).count() == 2


def test_the_compaction_routes_answer_404_for_another_owners_thread(other_api, thread, no_model):
    deploy_conversation(thread)

    assert other_api.post(compact_url()).status_code == 404
    assert other_api.get(history_url()).status_code == 404
    assert Compaction.objects.count() == 0


def test_the_compaction_routes_answer_404_for_an_unknown_thread(owner_api, thread):
    assert owner_api.post(compact_url("no-such-thread")).status_code == 404
    assert owner_api.get(history_url("no-such-thread")).status_code == 404


def test_the_compaction_routes_need_a_token(client, thread):
    assert client.post(compact_url()).status_code == 401
    assert client.get(history_url()).status_code == 401


def test_the_history_shows_started_finished_failed_with_reason_model_and_sizes(
    owner_api, operator_api, thread, fake_openai, django_capture_on_commit_callbacks
):
    deploy_conversation(thread)
    for _ in range(compaction_run_task.max_retries + 1):
        fake_openai.push_error(500, "down for maintenance")
    with django_capture_on_commit_callbacks(execute=True):
        owner_api.post(compact_url())
    fake_openai.push_chat(nine_sections())
    with django_capture_on_commit_callbacks(execute=True):
        owner_api.post(compact_url())

    response = owner_api.get(history_url())

    assert response.status_code == 200
    succeeded, failed = response.json()["results"]
    assert failed["status"] == "failed"
    assert "HTTP 500" in failed["error"] and "down for maintenance" in failed["error"]
    assert failed["started_at"] and failed["finished_at"]
    assert failed["attempts"] == compaction_run_task.max_retries + 1
    assert failed["summary_message_id"] is None
    assert succeeded["status"] == "succeeded"
    assert succeeded["model"] == fake_openai.chat_model
    assert succeeded["input_chars"] > 0
    summary = Message.objects.get(pk=succeeded["summary_message_id"])
    assert succeeded["output_chars"] == len(summary.content)
    assert succeeded["generation"] == failed["generation"] == 1
    assert succeeded["requested_by"] == "owner"
    # Operators read every thread's history.
    assert operator_api.get(history_url()).json()["results"] == response.json()["results"]


@pytest.mark.django_db(transaction=True)
def test_the_command_compacts_and_waits_for_the_outcome(thread, no_model):
    deploy_conversation(thread)
    out = StringIO()

    call_command("compact", CHANNEL, "--wait", "--timeout", "30", stdout=out)

    compaction = Compaction.objects.get()
    assert compaction.status == "succeeded"
    assert compaction.trigger == "command"
    assert f"summary messageId={compaction.summary_message_id}" in out.getvalue()


def test_the_command_names_an_unknown_thread_and_an_empty_generation(thread, no_model):
    with pytest.raises(CommandError, match="thread 'nope' not found"):
        call_command("compact", "nope")
    with pytest.raises(CommandError, match="nothing to compact in generation 1"):
        call_command("compact", CHANNEL)


@pytest.mark.django_db(transaction=True)
def test_the_command_exits_non_zero_when_the_compaction_failed(thread, fake_openai):
    append(thread, {"role": "user", "content": "hello"})
    fake_openai.push_error(401, "bad key")

    with pytest.raises(CommandError, match=r"failed: attempt 1 failed: .*HTTP 401"):
        call_command("compact", CHANNEL, "--wait", "--timeout", "30", stdout=StringIO())
