"""A message isolated while its generation's compaction runs is not in the summary it commits (contract §1, §4).

The model writes for a while with no transaction open; an admin isolating a
message of the generation meanwhile must not find it quoted by the summary
once the compaction is done. The commit checks, under the thread's row lock,
that everything the summary was written from is still visible, and
summarizes again when not. The fake model quotes the secret exactly when its
input holds it; the isolation happens while the model call is in flight.
"""

from __future__ import annotations

import json

import pytest
from django.db import connection

from tests.support.compaction import compaction_of, deploy_conversation, nine_sections
from tests.support.factories import append, make_thread, token_client
from tests.support.workers import api_post, close_connections, wait_until
from threadmem.domain import selectors, services
from threadmem.features.compaction.compacting import compaction_run_now
from threadmem.models import Compaction, Generation, Message, Thread

SECRET = "hunter2-rotation-password"


def quoting(body: dict) -> str:
    return nine_sections(s6=f"the user gave {SECRET}" if SECRET in json.dumps(body) else "the user asked to deploy")


def context_text(thread: Thread) -> str:
    thread.refresh_from_db()
    return "\n".join(m.content for m in selectors.context_messages(thread))


@pytest.mark.django_db(transaction=True)
def test_a_message_isolated_while_the_model_writes_is_not_in_the_committed_summary(
    owner, admin, fake_openai, django_capture_on_commit_callbacks
):
    thread = make_thread(owner, "isolate:during")
    secret, _ = append(
        thread, {"role": "user", "content": f"the door code is {SECRET}"}, {"role": "user", "content": "deploy it"}
    )
    isolated: list[Message] = []

    def model(body: dict) -> str:
        # The admin's request lands while the model is writing (this runs in the fake server's thread).
        if not isolated:
            isolated.append(services.message_set_isolated(message=secret, isolated=True, actor=admin))
            connection.close()
        return quoting(body)

    fake_openai.default_chat = model
    with django_capture_on_commit_callbacks(execute=True):
        compaction = compaction_run_now(thread=thread)

    assert compaction.status == "succeeded"
    summary = Generation.objects.get(thread=thread, number=1).summary_message
    assert SECRET not in summary.content and "asked to deploy" in summary.content
    assert SECRET not in context_text(thread)
    sent = [json.dumps(body) for body in fake_openai.chat_requests()]
    assert [SECRET in body for body in sent] == [True, False]  # written again from what is left
    assert Message.objects.filter(thread=thread, kind=Message.Kind.SUMMARY).count() == 1


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_isolating_through_the_api_during_a_running_compaction_leaves_no_quote(workers, owner, admin, fake, idle_after):
    thread = make_thread(owner, "isolate:worker")
    (secret,) = append(thread, {"role": "user", "content": f"the door code is {SECRET}"})
    deploy_conversation(thread)
    fake.default_chat = quoting
    gate = fake.push_chat(nine_sections(s6=f"the user gave {SECRET}"), hold=True)
    owner_client, admin_client = token_client(owner), token_client(admin)
    status, _ = api_post(owner_client, f"/api/v1/threads/{thread.channel}/compact/")
    assert status == 202
    fake.wait_for_requests(1, path_suffix="/chat/completions")
    assert compaction_of(thread).status == "running"

    response = admin_client.patch(f"/api/v1/messages/{secret.id}/", {"isolated": True}, format="json")
    close_connections()
    assert response.status_code == 200
    gate.set()
    wait_until(lambda: compaction_of(thread).status == "succeeded", workers, what="the compaction")

    context = owner_client.get(f"/api/v1/threads/{thread.channel}/context/")
    close_connections()
    assert context.status_code == 200 and SECRET not in context.content.decode()
    assert "asked to deploy" in context.content.decode()
    assert [SECRET in json.dumps(body) for body in fake.chat_requests()] == [True, False]
    assert Compaction.objects.filter(thread=thread).count() == 1  # summarized again within the same compaction
