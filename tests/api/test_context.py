"""/api/v1/threads/{channel}/context/: what the model sees now, as chat messages."""

from __future__ import annotations

import json

import pytest

from tests.support.factories import append, fork_at_middle, make_summary
from threadmem.domain.services import message_set_isolated
from threadmem.models import Generation, Thread

SLACK = "slack:C042/1700000000.1"
CONTEXT = f"/api/v1/threads/{SLACK}/context/"


@pytest.mark.django_db
def test_it_answers_the_current_generation_as_chat_messages(owner_api, thread):
    append(
        thread,
        {"role": "user", "content": "is the api up on staging?"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "call_1", "name": "shell", "arguments": {"command": "systemctl status api", "timeout": 30}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "active (running)"},
        {"role": "system", "kind": "machine_event", "content": "steering: keep answers short"},
        {"role": "assistant", "content": "Yes, it is running."},
    )
    response = owner_api.get(CONTEXT)
    assert response.status_code == 200
    body = response.json()
    assert body["generation"] == 1
    messages = body["messages"]
    assert messages[0] == {"role": "user", "content": "is the api up on staging?"}
    call = messages[1]["tool_calls"][0]
    assert (call["id"], call["type"], call["function"]["name"]) == ("call_1", "function", "shell")
    # Arguments go out as a JSON string, as chat APIs expect them.
    assert json.loads(call["function"]["arguments"]) == {"command": "systemctl status api", "timeout": 30}
    assert messages[2] == {"role": "tool", "content": "active (running)", "tool_call_id": "call_1"}
    assert messages[3] == {"role": "system", "content": "steering: keep answers short"}
    assert messages[4] == {"role": "assistant", "content": "Yes, it is running."}


@pytest.mark.django_db
def test_it_leaves_out_hidden_isolated_and_superseded_messages(owner_api, admin, thread):
    _kept, hidden, isolated, draft = append(
        thread,
        {"role": "user", "content": "kept"},
        {"role": "system", "content": "operator note", "model_visible": False},
        {"role": "user", "content": "pasted a password"},
        {"role": "assistant", "content": "draft"},
    )
    append(thread, {"role": "assistant", "content": "final", "supersedes": draft.id})
    message_set_isolated(message=isolated, isolated=True, actor=admin)
    contents = [m["content"] for m in owner_api.get(CONTEXT).json()["messages"]]
    assert contents == ["kept", "final"]
    assert hidden.content not in contents


@pytest.mark.django_db
def test_it_starts_a_compacted_thread_with_the_summary(owner_api, thread):
    append(thread, {"role": "user", "content": "old work"})
    Thread.objects.filter(pk=thread.pk).update(current_generation=2, next_seq=3)
    Generation.objects.create(thread=thread, number=2)
    summary = make_summary(thread, generation=2, seq=2, content="1. Primary request and intent")
    Generation.objects.filter(thread=thread, number=1).update(state="closed", summary_message=summary)
    append(Thread.objects.get(pk=thread.pk), {"role": "user", "content": "new work"})
    body = owner_api.get(CONTEXT).json()
    assert body["generation"] == 2
    assert [m["content"] for m in body["messages"]] == ["1. Primary request and intent", "new work"]


@pytest.mark.django_db
def test_it_starts_a_fork_with_its_parents_context_up_to_the_fork_point(owner_api, owner, thread):
    _, fork = fork_at_middle(thread, "fork:1/a", "first", "fork here", "only in the parent")
    append(fork, {"role": "user", "content": "only in the fork"})
    body = owner_api.get("/api/v1/threads/fork:1/a/context/").json()
    assert [m["content"] for m in body["messages"]] == ["first", "fork here", "only in the fork"]


@pytest.mark.django_db
def test_it_answers_an_empty_context_for_a_new_thread(owner_api, thread):
    assert owner_api.get(CONTEXT).json() == {"generation": 1, "messages": []}


@pytest.mark.django_db
def test_it_answers_404_to_another_owner_and_to_unknown_channels(other_api, owner_api, thread):
    append(thread, {"role": "user", "content": "private"})
    response = other_api.get(CONTEXT)
    assert response.status_code == 404
    assert "private" not in response.content.decode()
    assert owner_api.get("/api/v1/threads/slack:C042/unknown/context/").status_code == 404


@pytest.mark.django_db
def test_it_shows_the_context_to_operators_and_admins(operator_api, admin_api, thread):
    append(thread, {"role": "user", "content": "visible to staff"})
    for client in (operator_api, admin_api):
        assert client.get(CONTEXT).json()["messages"] == [{"role": "user", "content": "visible to staff"}]
