"""/api/v1/threads/{channel}/messages/: every bad input is refused, naming the problem, and writes nothing."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings

from tests.support.api import GOOD, MESSAGES, SHELL_CALL
from tests.support.factories import append, make_thread, row_counts
from threadmem.models import Thread

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
