"""/api/v1/threads/{channel}/messages/: append one or a batch (all or nothing), and list.

Every bad input: test_message_input.py."""

from __future__ import annotations

import json

import pytest

from api.serializers import MessageSerializer
from tests.support.api import GOOD, MESSAGES, SHELL_CALL, SLACK
from tests.support.factories import append, row_counts
from threadmem.domain.render import message_data
from threadmem.models import Generation, Message, Thread, ToolArgument

# contract §6's message, pinned here, not read from the serializer (a test of the serializer by itself could not fail).
MESSAGE_FIELDS = {
    *("id", "generation", "seq"),  # where it stands
    *("role", "kind", "content", "tool_calls", "tool_call_id"),  # what it says
    *("session_id", "source_id"),  # where it came from
    *("model_visible", "isolated", "superseded_by", "created_at"),  # its flags, its time
}


# --- append -----------------------------------------------------------------------


@pytest.mark.django_db
def test_it_appends_one_message_and_answers_with_one_stored_message(owner_api, thread):
    response = owner_api.post(
        MESSAGES, {"role": "user", "content": "deploy staging", "session_id": "s1"}, format="json"
    )
    assert response.status_code == 201
    body = response.json()
    assert isinstance(body, dict)
    assert set(body) == MESSAGE_FIELDS
    stored = Message.objects.get(pk=body["id"])
    assert (body["generation"], body["seq"], body["role"], body["kind"]) == (1, 1, "user", "message")
    assert (stored.thread, stored.content, stored.session_id) == (thread, "deploy staging", "s1")
    assert body["model_visible"] is True
    assert body["isolated"] is False
    assert body["superseded_by"] is None
    assert body["tool_calls"] == []


@pytest.mark.django_db
def test_it_appends_a_batch_and_answers_with_the_list_in_order(owner_api, thread):
    batch = [
        {"role": "user", "content": "check the api on staging"},
        {"role": "assistant", "content": "", "tool_calls": [SHELL_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "active (running)"},
        {"role": "system", "kind": "machine_event", "content": "turn took 2.1 s", "model_visible": False},
    ]
    response = owner_api.post(MESSAGES, batch, format="json")
    assert response.status_code == 201
    body = response.json()
    assert isinstance(body, list)
    assert [m["seq"] for m in body] == [1, 2, 3, 4]
    assert [m["role"] for m in body] == ["user", "assistant", "tool", "system"]
    assert body[1]["tool_calls"] == [SHELL_CALL]
    assert body[2]["tool_call_id"] == "call_1"
    assert (body[3]["kind"], body[3]["model_visible"]) == ("machine_event", False)
    leaves = list(ToolArgument.objects.filter(message_id=body[1]["id"]).values_list("tool_name", "path", "value"))
    assert leaves == [("shell", "command", SHELL_CALL["arguments"]["command"])]
    # The next append continues the order.
    again = owner_api.post(MESSAGES, [{"role": "user", "content": "thanks"}], format="json").json()
    assert [m["seq"] for m in again] == [5]
    thread.refresh_from_db()
    assert thread.next_seq == 6


@pytest.mark.django_db
def test_it_accepts_the_openai_wire_shape_of_tool_calls(owner_api, thread):
    call = {
        "id": "call_9",
        "type": "function",
        "function": {"name": "write_file", "arguments": json.dumps({"files": [{"path": "C:\\Users\\ops\\a.ps1"}]})},
    }
    body = owner_api.post(MESSAGES, {"role": "assistant", "tool_calls": [call]}, format="json").json()
    assert body["tool_calls"] == [
        {"id": "call_9", "name": "write_file", "arguments": {"files": [{"path": "C:\\Users\\ops\\a.ps1"}]}}
    ]
    leaf = ToolArgument.objects.get(message_id=body["id"])
    assert (leaf.path, leaf.value) == ("files[0].path", "C:\\Users\\ops\\a.ps1")


@pytest.mark.django_db
def test_it_marks_the_superseded_message(owner_api, thread):
    (old,) = append(thread, {"role": "assistant", "content": "draft answer"})
    body = owner_api.post(MESSAGES, {"role": "assistant", "content": "final", "supersedes": old.id}, format="json")
    assert body.status_code == 201
    old.refresh_from_db()
    assert old.superseded_by_id == body.json()["id"]
    listed = owner_api.get(MESSAGES).json()["results"]
    assert listed[0]["superseded_by"] == body.json()["id"]


@pytest.mark.django_db
def test_it_lets_operators_and_admins_append_to_any_thread(operator_api, admin_api, thread):
    for client in (operator_api, admin_api):
        response = client.post(MESSAGES, {"role": "system", "content": "note from staff"}, format="json")
        assert response.status_code == 201
    assert list(thread.messages.values_list("seq", flat=True)) == [1, 2]


@pytest.mark.django_db
def test_it_answers_404_to_an_append_to_another_owners_thread(other_api, thread):
    before = row_counts()
    response = other_api.post(MESSAGES, {"role": "user", "content": "hi"}, format="json")
    assert response.status_code == 404
    assert response.json()["detail"] == f"thread {SLACK!r} not found"
    assert row_counts() == before


@pytest.mark.django_db
def test_it_answers_404_to_an_append_to_an_unknown_channel(owner_api):
    before = row_counts()
    response = owner_api.post("/api/v1/threads/slack:nope/1/messages/", {"role": "user", "content": "x"}, format="json")
    assert response.status_code == 404
    assert "'slack:nope/1' not found" in response.json()["detail"]
    assert row_counts() == before


@pytest.mark.django_db
def test_it_stores_text_verbatim_whatever_characters_it_holds(owner_api, thread):
    # Tabs, newlines, backslashes and "\\N" are COPY's special characters on PostgreSQL.
    content = "line\tone\r\nline two \\N \\. é 🙂 \\\\server\\share"
    arguments = {"path": "C:\\Users\\ops\\deploy.ps1", "lines": ["a\tb", "\\N"], "n": 1, "ok": None}
    batch = [
        {"role": "user", "content": content},
        {"role": "assistant", "tool_calls": [{"id": "c\t1", "name": "write", "arguments": arguments}]},
    ]
    body = owner_api.post(MESSAGES, batch, format="json").json()
    stored = {m.id: m for m in Message.objects.filter(thread=thread)}
    assert sorted(stored) == sorted(m["id"] for m in body)
    assert stored[body[0]["id"]].content == content
    assert stored[body[1]["id"]].tool_calls == [{"id": "c\t1", "name": "write", "arguments": arguments}]
    assert [m["created_at"] for m in body] == [MessageSerializer(stored[m["id"]]).data["created_at"] for m in body]
    leaves = ToolArgument.objects.filter(message_id=body[1]["id"]).values_list("path", "value", "tool_call_id")
    assert list(leaves) == [
        ("path", "C:\\Users\\ops\\deploy.ps1", "c\t1"),
        ("lines[0]", "a\tb", "c\t1"),
        ("lines[1]", "\\N", "c\t1"),
    ]


@pytest.mark.django_db
def test_it_renders_appended_messages_exactly_as_the_serializer_does(thread):
    (first, second) = append(
        thread, {"role": "user", "content": "x", "session_id": "s"}, {"role": "assistant", "tool_calls": [SHELL_CALL]}
    )
    for message in (first, second, Message.objects.get(pk=second.pk)):
        assert message_data(message) == MessageSerializer(message).data


@pytest.mark.django_db
def test_it_answers_a_batch_with_the_rows_as_stored_ids_following_seq(owner_api, thread):
    append(thread, {"role": "user", "content": "earlier"})
    batch = [
        {"role": "user", "content": "check the api", "session_id": "s1"},
        {"role": "assistant", "content": "on it", "tool_calls": [SHELL_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "active (running)", "model_visible": False},
    ]
    body = owner_api.post(MESSAGES, batch, format="json").json()
    stored = Message.objects.filter(thread=thread, seq__gte=2).order_by("seq")
    assert body == [MessageSerializer(message).data for message in stored]
    # Search reads id order as "newest first".
    assert [m["seq"] for m in body] == [2, 3, 4]
    assert [m["id"] for m in body] == sorted(m["id"] for m in body)


# --- list ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_it_lists_messages_in_seq_order_with_pages(owner_api, thread):
    append(thread, *({"role": "user", "content": f"m{index}"} for index in range(5)))
    first = owner_api.get(MESSAGES, {"page_size": 2}).json()
    assert [m["seq"] for m in first["results"]] == [1, 2]
    assert set(first["results"][0]) == MESSAGE_FIELDS
    assert first["count"] == 5
    rest = owner_api.get(first["next"]).json()
    assert [m["content"] for m in rest["results"]] == ["m2", "m3"]


@pytest.mark.django_db
def test_it_lists_one_generation_when_asked(owner_api, thread):
    append(thread, {"role": "user", "content": "gen one"})
    Thread.objects.filter(pk=thread.pk).update(current_generation=2)
    Generation.objects.create(thread=thread, number=2)
    append(Thread.objects.get(pk=thread.pk), {"role": "user", "content": "gen two"})
    assert [m["content"] for m in owner_api.get(MESSAGES, {"generation": 1}).json()["results"]] == ["gen one"]
    assert [m["content"] for m in owner_api.get(MESSAGES, {"generation": 2}).json()["results"]] == ["gen two"]
    assert owner_api.get(MESSAGES).json()["count"] == 2


@pytest.mark.django_db
def test_it_shows_isolated_and_hidden_messages_with_their_flags_in_the_list(owner_api, admin, thread):
    from threadmem.domain.services import message_set_isolated

    _hidden, secret = append(
        thread, {"role": "system", "content": "x", "model_visible": False}, {"role": "user", "content": "token"}
    )
    message_set_isolated(message=secret, isolated=True, actor=admin)
    listed = owner_api.get(MESSAGES).json()["results"]
    assert [(m["model_visible"], m["isolated"]) for m in listed] == [(False, False), (True, True)]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("value", "status", "words"),
    [
        ("abc", 400, "generation must be a positive integer, got 'abc'"),
        ("0", 400, "generation must be a positive integer"),
        ("-1", 400, "generation must be a positive integer"),
        ("1.5", 400, "generation must be a positive integer"),
        ("2", 404, f"thread {SLACK!r} has no generation 2"),
        (str(2**70), 404, "has no generation"),
    ],
)
def test_it_refuses_a_bad_generation_filter(owner_api, thread, value, status, words):
    response = owner_api.get(MESSAGES, {"generation": value})
    assert response.status_code == status
    assert words in response.json()["detail"]


@pytest.mark.django_db
def test_it_answers_404_to_another_owners_message_list_and_shows_it_to_staff(
    other_api, operator_api, admin_api, thread
):
    append(thread, GOOD)
    assert other_api.get(MESSAGES).status_code == 404
    assert operator_api.get(MESSAGES).json()["count"] == 1
    assert admin_api.get(MESSAGES).json()["results"][0]["content"] == "fine"


@pytest.mark.django_db
def test_it_lists_a_page_in_a_fixed_number_of_queries(owner_api, thread, django_assert_num_queries):
    append(thread, *([GOOD] * 30))
    # token, thread, count, page
    with django_assert_num_queries(4):
        assert len(owner_api.get(MESSAGES).json()["results"]) == 30
