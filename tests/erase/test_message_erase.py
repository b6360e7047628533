"""DELETE /api/v1/messages/<id>/ (admins): a leaked secret erased, and the summaries that quoted it written again."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from tests.support.compaction import nine_sections
from tests.support.factories import append, make_thread
from threadmem.features.compaction.compacting import compaction_run_now
from threadmem.features.erase.messages import WITHDRAWN_SUMMARY, message_erase
from threadmem.features.erase.thread_delete import thread_delete
from threadmem.features.search import search_memory
from threadmem.models import Compaction, Deletion, Generation, Message, Thread

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "zx-leaked-token-0451"


def quoting(body: dict) -> str:
    return nine_sections(s6=f"the user pasted {SECRET}" if SECRET in json.dumps(body) else "the user asked to deploy")


@pytest.fixture
def compacted(owner, fake_openai, django_capture_on_commit_callbacks):
    """A thread whose first generation quoted the secret in its summary, and a fork after it."""
    fake_openai.default_chat = quoting
    thread = make_thread(owner, "leak")
    leak, _ = append(
        thread, {"role": "user", "content": f"my token is {SECRET}"}, {"role": "user", "content": "deploy it"}
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert compaction_run_now(thread=thread).status == "succeeded"
    after = append(thread, {"role": "user", "content": "and now the second generation"})[0]
    fork = make_thread(owner, "leak-fork", fork_from=after)
    return thread, leak, fork


def _texts(thread: Thread) -> str:
    return "\n".join(Message.objects.filter(thread=thread).values_list("content", flat=True))


def test_an_admin_erases_a_message_and_every_summary_quoting_it_is_rewritten(
    admin_api, admin, owner, compacted, django_capture_on_commit_callbacks
):
    thread, leak, fork = compacted
    assert SECRET in _texts(thread)  # the summary quotes it

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.delete(f"/api/v1/messages/{leak.pk}/")

    assert response.status_code == 200, response.content
    record = response.json()
    assert record["kind"] == "message" and record["message_id"] == leak.pk and record["channel"] == "leak"
    assert record["counts"]["messages"] == 1 and record["counts"]["summaries_withdrawn"] >= 1
    assert not Message.objects.filter(pk=leak.pk).exists()
    assert SECRET not in _texts(thread) and SECRET not in _texts(fork)
    summary = Generation.objects.get(thread=thread, number=1).summary_message
    assert "asked to deploy" in summary.content  # written again from what is left
    assert Compaction.objects.filter(thread=thread, trigger="isolation", status="succeeded").exists()
    assert "literal hits: 0" in search_memory(user=owner, query=SECRET).text
    assert Deletion.objects.get().actor == admin


def test_the_summaries_it_replaced_keep_no_quote_either(admin, compacted):
    thread, leak, fork = compacted
    quoted = Generation.objects.get(thread=thread, number=1).summary_message

    message_erase(message=leak, actor=admin)

    quoted.refresh_from_db()
    assert quoted.superseded_by_id is not None and quoted.content == WITHDRAWN_SUMMARY
    fork_summaries = Message.objects.filter(thread=fork, kind=Message.Kind.SUMMARY)
    assert all(SECRET not in s.content for s in fork_summaries)


@pytest.mark.parametrize("who", ["owner_api", "operator_api"])
def test_only_admins_erase(request, who, compacted):
    _, leak, _ = compacted

    response = request.getfixturevalue(who).delete(f"/api/v1/messages/{leak.pk}/")

    assert response.status_code == 403 and "only admins" in response.json()["detail"]
    assert Message.objects.filter(pk=leak.pk).exists() and not Deletion.objects.exists()


def test_refusals_leave_everything_in_place(admin_api, other_api, compacted):
    thread, leak, fork = compacted
    summary = Generation.objects.get(thread=thread, number=1).summary_message
    before = Message.objects.count()

    assert other_api.delete(f"/api/v1/messages/{leak.pk}/").status_code == 404
    assert admin_api.delete(f"/api/v1/messages/{summary.pk}/").status_code == 400
    forked_at = admin_api.delete(f"/api/v1/messages/{fork.fork_message_id}/")
    assert forked_at.status_code == 409 and "'leak-fork'" in forked_at.json()["detail"]
    assert admin_api.delete("/api/v1/messages/99999999/").status_code == 404

    assert Message.objects.count() == before and not Deletion.objects.exists()


def test_a_thread_deleted_while_its_compaction_writes_leaves_nothing_half_deleted(
    owner, fake_openai, django_capture_on_commit_callbacks
):
    thread = make_thread(owner, "deleted-during-compaction")
    append(thread, {"role": "user", "content": "deploy it"}, {"role": "assistant", "content": "deployed"})
    deleted: list[Deletion] = []

    def model(body: dict) -> str:
        # The owner's delete lands while the model writes (this runs in the fake server's thread).
        if not deleted:
            deleted.append(thread_delete(thread=Thread.objects.get(pk=thread.pk), actor=owner))
            connection.close()
        return nine_sections()

    fake_openai.default_chat = model
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(Compaction.DoesNotExist):
        compaction_run_now(thread=thread)

    assert deleted and not Thread.objects.exists()
    assert not Message.objects.exists() and not Compaction.objects.exists() and not Generation.objects.exists()
