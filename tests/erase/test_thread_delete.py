"""DELETE /api/v1/threads/<channel>/: the thread and everything derived from it, on every path afterwards."""

from __future__ import annotations

import pytest

from tests.support.factories import append, append_tool_exchange, console_client, make_thread
from tests.support.semantic import embedded, ranked_ids, semantic_part
from threadmem.domain import services
from threadmem.errors import NotFound
from threadmem.features.erase.thread_delete import thread_delete
from threadmem.features.imports.catalogue import session_catalogue
from threadmem.features.search import message_context_read, search_memory
from threadmem.models import (
    CaptureCursor,
    Chunk,
    Compaction,
    Deletion,
    EmbeddingProgress,
    Generation,
    Import,
    Message,
    Thread,
    ToolArgument,
    ToolCall,
)

pytestmark = pytest.mark.django_db(transaction=True)

WORD = "quetzalcoatl-rollout"
CHANNEL = "claude-code:doomed"


@pytest.fixture
def doomed(owner, static_model):
    """A thread with a tool exchange, pieces, a search logged against it, an import record and a capture cursor."""
    thread = make_thread(owner, CHANNEL, title="the doomed session")
    Thread.objects.filter(pk=thread.pk).update(source_path="/home/dev/.claude/projects/p/doomed.jsonl", source_cwd="/p")
    thread.refresh_from_db()
    append(thread, {"role": "user", "content": f"roll out {WORD} to the staging fleet"})
    append_tool_exchange(
        thread,
        {"id": "call_9", "name": "Bash", "arguments": {"command": f"deploy --name {WORD}"}},
        f"{WORD} deployed on 12 hosts",
    )
    embedded(thread)
    search_memory(user=owner, query=WORD, channel=CHANNEL)
    Import.objects.create(owner=owner, format="claude-code", channel=CHANNEL, channels=[CHANNEL])
    CaptureCursor.objects.create(owner=owner, path=thread.source_path, format="claude-code", offset=10)
    return thread


def test_the_owner_deletes_a_thread_and_nothing_of_it_is_left_on_any_path(owner, owner_api, operator, doomed):
    kept = make_thread(owner, "claude-code:kept")
    append(kept, {"role": "user", "content": f"{WORD} is mentioned here too"})
    embedded(kept)
    ids = list(Message.objects.filter(thread=doomed).values_list("pk", flat=True))
    # The ranked lane keeps the owner's pieces in this process: warmed before the delete.
    assert set(ranked_ids(owner, f"how did the {WORD} deploy go?")) & set(ids)

    response = owner_api.delete(f"/api/v1/threads/{CHANNEL}/")

    assert response.status_code == 200, response.content
    record = response.json()
    assert record["kind"] == "thread" and record["channel"] == CHANNEL and record["actor"] == owner.username
    assert record["counts"]["messages"] == 3 and record["counts"]["tool_arguments"] == 1
    assert record["counts"]["chunks"] > 0 and record["counts"]["tool_calls"] == 1
    assert WORD not in str(record)
    # Rows
    assert not Thread.objects.filter(channel=CHANNEL).exists()
    for model, lookup in [
        (Message, {"pk__in": ids}),
        (ToolArgument, {"message_id__in": ids}),
        (Chunk, {"message_id__in": ids}),
        (Generation, {"thread_id": doomed.pk}),
        (Compaction, {"thread_id": doomed.pk}),
        (EmbeddingProgress, {"thread_id": doomed.pk}),
        (ToolCall, {"thread_id": doomed.pk}),
        (CaptureCursor, {"owner": owner}),
        (Import, {"owner": owner}),
    ]:
        assert not model.objects.filter(**lookup).exists(), model
    assert Deletion.objects.get().owner_name == owner.username
    # The log's rows of the thread (before the calls below, which log the channel the caller names).
    assert CHANNEL not in str(owner_api.get("/api/v1/tool-calls/").json())
    assert CHANNEL not in console_client(operator).get("/console/tool-calls/").content.decode()
    # Paths: the thread answers 404, a global search shows only the kept thread.
    for suffix in ("", "messages/", "context/", "export/"):
        assert owner_api.get(f"/api/v1/threads/{CHANNEL}/{suffix}").status_code == 404, suffix
    assert CHANNEL not in str(owner_api.get("/api/v1/threads/").json())
    with pytest.raises(NotFound):
        search_memory(user=owner, query=WORD, channel=CHANNEL)
    text = search_memory(user=owner, query=WORD).text
    assert "mentioned here too" in text and CHANNEL not in text and "staging fleet" not in text
    answer = search_memory(user=owner, query=f"how did the {WORD} deploy go?").text
    assert CHANNEL not in answer and not set(ranked_ids(owner, f"how did the {WORD} deploy go?")) & set(ids)
    assert "deployed on 12 hosts" not in semantic_part(answer)
    for message_id in ids:
        with pytest.raises(NotFound):
            message_context_read(user=owner, message_id=message_id)
        assert owner_api.get(f"/api/v1/messages/{message_id}/").status_code == 404
    assert CHANNEL not in session_catalogue(owner=owner, cwd="/p")
    console = console_client(operator)
    assert console.get(f"/console/c/{CHANNEL}/").status_code == 404
    assert CHANNEL not in console.get("/console/").content.decode()
    assert CHANNEL in console.get("/console/deletions/").content.decode()
    assert WORD not in console.get("/console/deletions/").content.decode()
    assert CHANNEL not in owner_api.get("/metrics").content.decode()


def test_another_owner_gets_404_and_nothing_is_deleted(other_api, doomed):
    before = Message.objects.count()

    assert other_api.delete(f"/api/v1/threads/{CHANNEL}/").status_code == 404

    assert Message.objects.count() == before and not Deletion.objects.exists()


def test_an_operator_deletes_any_owners_thread(operator_api, operator, doomed):
    response = operator_api.delete(f"/api/v1/threads/{CHANNEL}/")

    assert response.status_code == 200
    assert response.json()["actor"] == operator.username and response.json()["owner"] == doomed.owner.username
    assert not Thread.objects.filter(pk=doomed.pk).exists()


def test_a_thread_with_forks_is_refused_unless_its_forks_go_with_it(owner, owner_api):
    parent = make_thread(owner, "parent")
    messages = append(parent, {"role": "user", "content": "start"}, {"role": "assistant", "content": "ok"})
    fork = make_thread(owner, "fork-1", fork_from=messages[1])
    grandchild = make_thread(owner, "fork-2", fork_from=append(fork, {"role": "user", "content": "more"})[0])

    refused = owner_api.delete("/api/v1/threads/parent/")
    assert refused.status_code == 409
    assert "'fork-1'" in refused.json()["detail"] and "'fork-2'" in refused.json()["detail"]
    assert "forks=delete" in refused.json()["detail"]
    assert owner_api.delete("/api/v1/threads/parent/?forks=maybe").status_code == 400
    assert Thread.objects.count() == 3

    response = owner_api.delete("/api/v1/threads/parent/?forks=delete")

    assert response.status_code == 200
    assert sorted(response.json()["counts"]["forks"]) == ["fork-1", "fork-2"]
    assert not Thread.objects.filter(pk__in=[parent.pk, fork.pk, grandchild.pk]).exists()
    assert not Message.objects.exists()
    # A fork alone goes without touching its parent.
    again = make_thread(owner, "parent-2")
    first = append(again, {"role": "user", "content": "x"})[0]
    make_thread(owner, "fork-3", fork_from=first)
    assert owner_api.delete("/api/v1/threads/fork-3/").status_code == 200
    assert Message.objects.filter(thread=again).count() == 1


def test_an_append_that_waited_for_a_deleted_thread_answers_404(owner, owner_api):
    thread = make_thread(owner, "gone-while-waiting")
    append(thread, {"role": "user", "content": "first"})
    stale = Thread.objects.get(pk=thread.pk)  # what an append read before the delete took the lock

    thread_delete(thread=thread, actor=owner)

    with pytest.raises(NotFound, match="deleted"):
        services.messages_store(thread=stale, messages=services.messages_parse({"role": "user", "content": "late"}))
    assert not Message.objects.exists() and not Thread.objects.exists()


def test_the_django_admin_deletes_nothing_every_deletion_goes_through_the_recorded_path(admin, owner):
    thread = make_thread(owner, "admin-cannot")
    (message,) = append(thread, {"role": "user", "content": "kept"})
    client = console_client(admin)

    assert client.get(f"/admin/threadmem/thread/{thread.pk}/delete/").status_code == 403
    assert client.get(f"/admin/threadmem/message/{message.pk}/delete/").status_code == 403
    assert client.get("/admin/threadmem/deletion/").status_code == 200
    assert Message.objects.filter(pk=message.pk).exists()


def test_a_large_thread_goes_in_batches(owner, monkeypatch):
    from threadmem.features.erase import thread_delete as erase_delete

    monkeypatch.setattr(erase_delete, "BATCH_MESSAGES", 2)
    thread = make_thread(owner, "in-batches")
    for n in range(7):
        append_tool_exchange(thread, {"id": f"c{n}", "name": "Bash", "arguments": {"command": f"ls {n}"}}, f"out {n}")

    record = thread_delete(thread=thread, actor=owner)

    assert record.counts["messages"] == 14 and record.counts["tool_arguments"] == 7
    assert not Message.objects.exists() and not ToolArgument.objects.exists()
