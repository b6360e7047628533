"""REST: /api/v1/search/, /messages/{id}/, /tool-calls/, /tools/ (contract §6)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.support.factories import append, append_tool_exchange, make_thread, open_generation
from threadmem.domain import services
from threadmem.features.search import search_memory
from threadmem.models import IsolationEvent, Message, ToolCall


@pytest.fixture
def stored(thread):
    call = {"id": "c1", "name": "shell", "arguments": {"command": "ssh deploy@gamma-9"}}
    return append_tool_exchange(thread, call, "welcome to gamma-9", session_id="s1")


@pytest.mark.django_db
def test_search_answers_the_spec_shape_with_the_text_the_model_reads(owner, owner_api, thread, stored):
    call, result = stored
    response = owner_api.post("/api/v1/search/", {"query": "gamma-9", "channel": thread.channel}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"text", "literal_hits_total", "literal_hits_shown", "truncated", "hits", "next_cursor"}
    assert body["text"] == search_memory(user=owner, query="gamma-9", channel=thread.channel).text
    # The call and its result both match: one hit, headed by the call, with the result's window.
    assert (body["literal_hits_total"], body["literal_hits_shown"], body["truncated"]) == (1, 1, False)
    assert body["hits"] == [
        {
            "message_id": call.id,
            "session_id": "s1",
            "generation": 1,
            "role": "assistant",
            "field": "result.content",
            "window": "welcome to gamma-9",
            "tool": "shell",
            "result_message_ids": [result.id],
            "call_message_id": None,
            "result_chars": [len("welcome to gamma-9")],
            "arguments": "command=ssh deploy@gamma-9",
            "identical_message_ids": [],
        }
    ]
    assert body["next_cursor"] is None


@pytest.mark.django_db
def test_search_works_with_query_parameters_and_globally(owner_api, thread, stored):
    response = owner_api.get("/api/v1/search/", {"query": "gamma-9"})
    assert response.status_code == 200
    assert response.json()["literal_hits_total"] == 1
    assert '\nchannel: * · query: "gamma-9"' in response.json()["text"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        ({"query": ""}, 400, "query must not be empty"),
        ({"query": "x" * 1001}, 400, "the limit is 1000"),
        ({"query": "a\u0000b"}, 400, "NUL"),
        ({}, 400, "query is required"),
        ({"query": "x", "scope": "all"}, 400, "unknown fields: scope"),
        ({"query": "ab"}, 400, "3 letters or digits"),
        ({"query": "gamma", "channel": "no-such"}, 404, "not found"),
        (["gamma"], 400, "JSON object"),
    ],
)
def test_search_refuses_bad_input_naming_the_problem(owner_api, thread, body, status, detail):
    response = owner_api.post("/api/v1/search/", body, format="json")
    assert response.status_code == status
    assert detail in response.json()["detail"]


@pytest.mark.django_db
def test_search_of_another_owners_thread_is_not_found_and_needs_a_token(other_api, thread, stored):
    body = {"query": "gamma", "channel": thread.channel}
    assert other_api.post("/api/v1/search/", body, format="json").status_code == 404
    assert other_api.post("/api/v1/search/", {"query": "gamma-9"}, format="json").json()["literal_hits_total"] == 0
    assert APIClient().post("/api/v1/search/", {"query": "gamma-9"}, format="json").status_code == 401


@pytest.mark.django_db
def test_an_operator_searches_every_thread_that_is_not_isolated(operator_api, owner, stored):
    theirs = make_thread(owner, "second")
    append(theirs, {"role": "user", "content": "gamma-9 again"})
    body = operator_api.post("/api/v1/search/", {"query": "gamma-9"}, format="json").json()
    assert body["literal_hits_total"] == 2  # the call with its result, and the other thread's message


@pytest.mark.django_db
def test_the_audit_read_answers_stored_fields_a_page_and_the_model_text(owner_api, thread, stored):
    call, result = stored
    response = owner_api.get(f"/api/v1/messages/{result.id}/", {"view": "audit", "offset": 0})
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == result.id
    assert (body["channel"], body["role"], body["tool_call_id"], body["generation"]) == (
        thread.channel,
        "tool",
        "c1",
        1,
    )
    assert (body["content"], body["next_offset"], body["content_chars"]) == ("welcome to gamma-9", None, 18)
    assert body["call_message_id"] == call.id
    assert body["text"].startswith(f"[message_context_read] messageId={result.id} view=audit\n")
    assert owner_api.get(f"/api/v1/messages/{result.id}/", {"offset": 8}).json()["content"] == "to gamma-9"
    call_body = owner_api.get(f"/api/v1/messages/{call.id}/").json()
    assert call_body["result_message_ids"] == [result.id]
    assert call_body["tool_calls"] == [{"id": "c1", "name": "shell", "arguments": {"command": "ssh deploy@gamma-9"}}]


@pytest.mark.django_db
def test_the_audit_read_refuses_bad_parameters(owner_api, stored):
    call, _ = stored
    for params, detail in [
        ({"offset": "-1"}, "offset must be a non-negative integer"),
        ({"offset": "abc"}, "offset must be a non-negative integer"),
        ({"offset": "999"}, "past the end"),
        ({"view": "raw"}, "view must be one of: audit"),
    ]:
        response = owner_api.get(f"/api/v1/messages/{call.id}/", params)
        assert response.status_code == 400
        assert detail in response.json()["detail"]
    assert owner_api.get("/api/v1/messages/not-a-number/").status_code == 404
    assert owner_api.get("/api/v1/messages/987654/").status_code == 404


@pytest.mark.django_db
def test_the_audit_read_is_model_facing_for_operators_too(owner_api, operator_api, other_api, admin, thread, stored):
    """contract §3, docs/api.md: operators read what a model could; the console shows them isolated messages."""
    call, _ = stored
    (event,) = append(thread, {"role": "system", "kind": "machine_event", "content": "status line"})
    services.message_set_isolated(message=call, isolated=True, actor=admin)
    summary = open_generation(thread, "summary text")
    for message in (event, summary, call):
        assert owner_api.get(f"/api/v1/messages/{message.id}/").status_code == 404
        response = operator_api.get(f"/api/v1/messages/{message.id}/", {"view": "audit"})
        assert response.status_code == 404
        assert "deploy@gamma-9" not in response.content.decode()
    assert other_api.get(f"/api/v1/messages/{stored[1].id}/").status_code == 404
    assert operator_api.get(f"/api/v1/messages/{stored[1].id}/").status_code == 200
    logged = ToolCall.objects.filter(tool=ToolCall.Tool.MESSAGE_CONTEXT_READ, arguments__message_id=str(call.id))
    assert sorted(logged.values_list("status_code", flat=True)) == [404, 404]


@pytest.mark.django_db
def test_only_admins_isolate_a_message_and_every_toggle_is_recorded(
    owner_api, operator_api, other_api, admin_api, admin, stored
):
    call, _ = stored
    url = f"/api/v1/messages/{call.id}/"
    assert owner_api.patch(url, {"isolated": True}, format="json").status_code == 403
    assert operator_api.patch(url, {"isolated": True}, format="json").status_code == 403
    assert other_api.patch(url, {"isolated": True}, format="json").status_code == 404
    assert not Message.objects.get(pk=call.id).isolated
    assert admin_api.patch(url, {"isolated": "yes"}, format="json").status_code == 400
    response = admin_api.patch(url, {"isolated": True}, format="json")
    assert response.status_code == 200
    assert response.json()["isolated"] is True
    event = IsolationEvent.objects.get()
    assert (event.actor, event.message_id, event.isolated) == (admin, call.id, True)
    assert owner_api.get(url).status_code == 404
    assert owner_api.post("/api/v1/search/", {"query": "deploy@gamma-9"}, format="json").json()["hits"] == []


@pytest.mark.django_db
def test_the_tool_call_log_shows_owners_their_calls_and_operators_all(owner_api, other_api, operator_api, thread):
    owner_api.post("/api/v1/search/", {"query": "anything", "channel": thread.channel}, format="json")
    other_api.post("/api/v1/search/", {"query": "their own global search"}, format="json")
    mine = owner_api.get("/api/v1/tool-calls/").json()
    assert mine["count"] == 1
    entry = mine["results"][0]
    assert (entry["tool"], entry["channel"], entry["caller"], entry["surface"]) == (
        "search_memory",
        thread.channel,
        "owner",
        "api",
    )
    assert entry["arguments"] == {"query": "anything", "channel": thread.channel}
    assert {"hits_total", "hits_shown", "chars_returned", "truncated", "latency_ms", "created_at"} <= set(entry)
    assert operator_api.get("/api/v1/tool-calls/").json()["count"] == 2
    assert operator_api.get("/api/v1/tool-calls/", {"channel": thread.channel}).json()["count"] == 1
    assert other_api.get("/api/v1/tool-calls/", {"channel": thread.channel}).status_code == 404
    assert ToolCall.objects.count() == 2


@pytest.mark.django_db
def test_the_tools_endpoint_lists_both_function_schemas(owner_api):
    tools = owner_api.get("/api/v1/tools/").json()
    assert [tool["function"]["name"] for tool in tools] == ["search_memory", "message_context_read"]
    assert all(tool["type"] == "function" for tool in tools)


@pytest.mark.django_db
def test_the_schema_documents_the_memory_endpoints(owner_api):
    response = owner_api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert {"/api/v1/search/", "/api/v1/messages/{message_id}/", "/api/v1/tool-calls/", "/api/v1/tools/"} <= set(paths)
