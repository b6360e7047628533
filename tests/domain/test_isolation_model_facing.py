"""An isolated message or thread disappears from every model-facing read (contract §1), not only from search.

Non-staff callers hold the agent's token: their listing shows an isolated
message's place and flags without its content, and so does a summary an
isolation superseded (it was written from the isolated text); a fork of an isolated thread
starts without the parent's context (search in the fork already left it out),
and so does the summary a compaction of that fork writes.
"""

from __future__ import annotations

import pytest

from tests.support.factories import append, make_thread
from threadmem.domain import selectors, services
from threadmem.features.compaction import selectors as compaction_selectors
from threadmem.features.compaction.compacting import compaction_run_now
from threadmem.features.search import search_memory

SLACK = "slack:C042/1700000000.1"
MESSAGES = f"/api/v1/threads/{SLACK}/messages/"
SECRET = "hunter2-password-rotation"


@pytest.mark.django_db
def test_an_owner_lists_an_isolated_message_without_its_content(owner_api, operator_api, admin, thread):
    _kept, secret = append(
        thread,
        {"role": "user", "content": "kept"},
        {
            "role": "assistant",
            "content": SECRET,
            "tool_calls": [{"id": "c", "name": "shell", "arguments": {"a": SECRET}}],
        },
    )
    services.message_set_isolated(message=secret, isolated=True, actor=admin)

    listed = owner_api.get(MESSAGES).json()["results"]
    assert [(m["content"], m["tool_calls"], m["isolated"]) for m in listed] == [("kept", [], False), ("", [], True)]
    assert SECRET not in owner_api.get(MESSAGES).content.decode()
    assert SECRET in operator_api.get(MESSAGES).content.decode()


@pytest.mark.django_db
def test_a_fork_of_an_isolated_thread_starts_without_the_parents_context(owner, owner_api, admin, thread):
    (_, fork_point) = append(thread, {"role": "user", "content": SECRET}, {"role": "assistant", "content": "noted"})
    fork = make_thread(owner, f"{SLACK}-fork", fork_from=fork_point)
    append(fork, {"role": "user", "content": "carry on"})
    assert SECRET in str(owner_api.get(f"/api/v1/threads/{fork.channel}/context/").json())

    services.thread_set_isolated(thread=thread, isolated=True, actor=admin)
    fork.refresh_from_db()
    context = owner_api.get(f"/api/v1/threads/{fork.channel}/context/").json()
    assert [m["content"] for m in context["messages"]] == ["carry on"]
    assert search_memory(user=owner, query=SECRET, channel=fork.channel, surface="api").literal_hits_total == 0
    summarized = compaction_selectors.generation_input(thread=fork, generation=1, cut_seq=fork.next_seq)
    assert [m.content for m in summarized.messages] == ["carry on"]


@pytest.mark.django_db
def test_a_fork_of_a_fork_starts_as_its_parents_context_did(owner, thread):
    (root_point,) = append(thread, {"role": "user", "content": "root"})
    middle = make_thread(owner, f"{SLACK}-middle", fork_from=root_point)
    (middle_point,) = append(middle, {"role": "user", "content": "middle"})
    leaf = make_thread(owner, f"{SLACK}-leaf", fork_from=middle_point)
    assert [m.content for m in selectors.context_messages(leaf)] == ["root", "middle"]


@pytest.mark.django_db
def test_an_owner_lists_a_summary_an_isolation_superseded_without_its_content(
    owner_api, operator_api, admin, thread, no_model, django_capture_on_commit_callbacks
):
    (secret,) = append(thread, {"role": "user", "content": f"the door code is {SECRET}"})
    compaction_run_now(thread=thread)
    with django_capture_on_commit_callbacks(execute=True):
        services.message_set_isolated(message=secret, isolated=True, actor=admin)

    listed = owner_api.get(MESSAGES).json()["results"]
    old, new = [m for m in listed if m["kind"] == "summary"]
    assert old["superseded_by"] == new["id"] and not old["isolated"]
    assert (old["content"], new["superseded_by"]) == ("", None) and new["content"]
    assert SECRET not in owner_api.get(MESSAGES).content.decode()
    operator_listed = operator_api.get(MESSAGES).json()["results"]
    assert SECRET in next(m["content"] for m in operator_listed if m["id"] == old["id"])
