"""/api/v1/threads/{channel}/messages/: append one or a batch (all or nothing), list, and every bad input."""

from __future__ import annotations

import json

import pytest
from django.conf import settings as django_settings

from api.serializers import MessageSerializer
from tests.support.factories import append, make_thread, row_counts
from threadmem.models import Generation, Message, Thread, ToolArgument
from threadmem.render import message_data

SLACK = "slack:C042/1700000000.1"
MESSAGES = f"/api/v1/threads/{SLACK}/messages/"
MESSAGE_FIELDS = {
    "id",
    "generation",
    "seq",
    "role",
    "kind",
    "content",
    "tool_calls",
    "tool_call_id",
    "session_id",
    "source_id",
    "model_visible",
    "isolated",
    "superseded_by",
    "created_at",
}
SHELL_CALL = {
    "id": "call_1",
    "name": "shell",
    "arguments": {"command": "ssh deploy@staging-7.example.net 'systemctl status api'"},
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


# --- bad input ----------------------------------------------------------------------

GOOD = {"role": "user", "content": "fine"}

BAD_BODIES = [
    pytest.param([], 400, "the batch is empty", id="empty-batch"),
    pytest.param("just text", 400, "must be a message object or a list", id="string-body"),
    pytest.param(
        [GOOD, {"role": "narrator", "content": "x"}, GOOD], 400, "messages[1].role must be one of", id="bad-middle"
    ),
    pytest.param(
        {"role": "robot", "content": "x"}, 400, "role must be one of user, assistant, tool, system", id="role"
    ),
    pytest.param({"role": "user", "kind": "note", "content": "x"}, 400, "kind must be one of", id="kind"),
    pytest.param({"role": ["user"], "content": "x"}, 400, "role must be one of", id="role-not-a-string"),
    pytest.param({"role": "user", "kind": {"k": 1}, "content": "x"}, 400, "kind must be one of", id="kind-object"),
    pytest.param(
        {"role": "user", "kind": "summary", "content": "x"}, 400, "summaries are written by compaction", id="summary"
    ),
    pytest.param({"role": "user", "content": "x", "colour": "red"}, 400, "unknown fields: colour", id="field"),
    pytest.param([GOOD, "not an object"], 400, "messages[1] must be a JSON object", id="item-not-object"),
    pytest.param({"role": "user", "content": "a\u0000b"}, 400, "content contains a NUL", id="nul-content"),
    pytest.param(
        {"role": "tool", "content": "x", "tool_call_id": "c\u0000"}, 400, "tool_call_id contains a NUL", id="nul-id"
    ),
    pytest.param(
        {"role": "assistant", "tool_calls": [{"id": "c", "name": "shell", "arguments": {"command": "ls\u0000"}}]},
        400,
        "tool_calls[0].arguments contains a NUL",
        id="nul-tool-args",
    ),
    pytest.param(
        {"role": "assistant", "tool_calls": [{"id": "c", "name": "shell", "arguments": ["ls"]}]},
        400,
        "tool_calls[0].arguments must be a JSON object",
        id="args-not-object",
    ),
    pytest.param(
        {"role": "assistant", "tool_calls": [{"id": "c", "name": "shell", "arguments": '{"command": "ls"'}]},
        400,
        "tool_calls[0].arguments is not valid JSON",
        id="args-invalid-json",
    ),
    pytest.param(
        {"role": "assistant", "tool_calls": [{"id": "c", "name": "shell", "arguments": '"ls"'}]},
        400,
        "tool_calls[0].arguments must be a JSON object",
        id="args-json-string-not-object",
    ),
    pytest.param(
        {"role": "assistant", "tool_calls": {"name": "shell"}}, 400, "tool_calls must be a list", id="calls-not-list"
    ),
    pytest.param(
        {"role": "assistant", "tool_calls": [{"id": "c", "arguments": {}}]},
        400,
        "tool_calls[0].name must be a non-empty string",
        id="call-without-name",
    ),
    pytest.param({"role": "user", "tool_calls": [SHELL_CALL]}, 400, "only allowed on assistant", id="calls-on-user"),
    pytest.param({"role": "user", "content": 5}, 400, "content must be a string", id="content-type"),
    pytest.param({"role": "user", "content": ""}, 400, "needs content or tool_calls", id="empty-message"),
    pytest.param({"role": "user", "content": "x", "model_visible": "no"}, 400, "model_visible must be", id="visible"),
    pytest.param({"role": "user", "content": "x", "supersedes": "7"}, 400, "supersedes must be a message id", id="sup"),
    pytest.param(
        {"role": "user", "content": "x", "session_id": "s" * 256}, 400, "longer than 255", id="long-session-id"
    ),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("body", "status", "words"), BAD_BODIES)
def test_it_refuses_bad_messages_naming_the_problem_and_writes_nothing(owner_api, thread, body, status, words):
    append(thread, GOOD)
    before = row_counts()
    response = owner_api.post(MESSAGES, body, format="json")
    assert response.status_code == status
    assert words in response.json()["detail"]
    assert row_counts() == before
    thread.refresh_from_db()
    assert thread.next_seq == 2


@pytest.mark.django_db
def test_it_refuses_a_body_that_is_not_json(owner_api, thread):
    before = row_counts()
    response = owner_api.post(MESSAGES, '[{"role": "user", "content": "x"}', content_type="application/json")
    assert response.status_code == 400
    assert "not valid JSON" in response.json()["detail"]
    raw_nul = owner_api.post(MESSAGES, b'{"role": "user", "content": "a\x00b"}', content_type="application/json")
    assert raw_nul.status_code == 400
    assert row_counts() == before


@pytest.mark.django_db
def test_it_refuses_a_batch_with_one_bad_item_in_the_middle_whole(owner_api, thread):
    batch = [GOOD] * 10 + [{"role": "assistant", "tool_calls": [{"name": "x", "arguments": "{oops"}]}] + [GOOD] * 10
    before = row_counts()
    response = owner_api.post(MESSAGES, batch, format="json")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("messages[10].tool_calls[0].arguments is not valid JSON")
    assert row_counts() == before


@pytest.mark.django_db
def test_it_answers_413_to_a_message_over_the_configured_size(owner_api, thread, settings):
    settings.THREADMEM_MAX_MESSAGE_BYTES = 1000
    before = row_counts()
    big = owner_api.post(MESSAGES, [GOOD, {"role": "user", "content": "é" * 501}], format="json")
    assert big.status_code == 413
    assert "messages[1] is 1002 bytes; the limit is 1000 bytes" in big.json()["detail"]
    args = {"role": "assistant", "tool_calls": [{"name": "write", "arguments": {"content": "x" * 1000}}]}
    assert owner_api.post(MESSAGES, args, format="json").status_code == 413
    assert row_counts() == before
    assert owner_api.post(MESSAGES, {"role": "user", "content": "x" * 1000}, format="json").status_code == 201


@pytest.mark.django_db
def test_it_answers_413_beyond_the_default_two_megabytes(owner_api, thread):
    limit = django_settings.THREADMEM_MAX_MESSAGE_BYTES
    assert limit == 2 * 1024 * 1024
    before = row_counts()
    response = owner_api.post(MESSAGES, {"role": "tool", "content": "x" * (limit + 1)}, format="json")
    assert response.status_code == 413
    assert "THREADMEM_MAX_MESSAGE_BYTES" in response.json()["detail"]
    assert row_counts() == before


@pytest.mark.django_db
def test_it_answers_413_to_a_batch_of_more_than_1000(owner_api, thread):
    before = row_counts()
    response = owner_api.post(MESSAGES, [GOOD] * 1001, format="json")
    assert response.status_code == 413
    assert "the batch has 1001 messages; the limit is 1000" in response.json()["detail"]
    assert row_counts() == before
    assert len(owner_api.post(MESSAGES, [GOOD] * 1000, format="json").json()) == 1000


@pytest.mark.django_db
def test_it_refuses_to_supersede_a_message_of_another_thread(owner_api, owner, thread):
    (foreign,) = append(make_thread(owner, "elsewhere"), GOOD)
    before = row_counts()
    for target, words in (
        (foreign.id, f"supersedes names messages that are not in this thread: {foreign.id}"),
        (2**70, "messages[1].supersedes must be a message id"),
    ):
        batch = [GOOD, {"role": "user", "content": "x", "supersedes": target}]
        response = owner_api.post(MESSAGES, batch, format="json")
        assert response.status_code == 400
        assert response.json()["detail"] == words
    assert row_counts() == before
    foreign.refresh_from_db()
    assert foreign.superseded_by_id is None
    assert Thread.objects.get(pk=thread.pk).next_seq == 1


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
    from threadmem.services import message_set_isolated

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
