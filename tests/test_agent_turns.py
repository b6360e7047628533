"""Agent turns over REST: the loop, what it stores, what it sends, and how it fails.

The model is the loopback fake (tests/fake_openai.py) driven by the real
openai SDK; the tools are the real search and audit read.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

from tests.conftest import append, make_thread, row_counts
from threadmem import agent
from threadmem.errors import NotFound
from threadmem.models import Compaction, Message, Thread, ToolCall
from threadmem.search.bounded import HEADER, THREAD_SEARCH_MAX_CHARS

CHANNEL = "slack:C042/1700000000.1"


def turn_url(channel: str = CHANNEL) -> str:
    return f"/api/v1/threads/{channel}/turns/"


def run_turn(api, content: Any = "what next?", channel: str = CHANNEL, **body: Any):
    return api.post(turn_url(channel), {"content": content, **body}, format="json")


def search_call(query: str, **arguments: Any) -> dict[str, Any]:
    return {"name": "search_memory", "arguments": {"query": query, **arguments}}


def stored(thread: Thread) -> list[Message]:
    return list(Message.objects.filter(thread=thread).order_by("seq"))


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def system_text(request: dict[str, Any]) -> str:
    first = request["messages"][0]
    assert first["role"] == "system"
    return first["content"]


# --- the loop ---------------------------------------------------------------


def test_it_answers_and_returns_the_user_message_and_the_answer(thread, owner_api, fake_openai):
    fake_openai.push_chat("Deploy the staging box with make deploy.")

    response = run_turn(owner_api, "how do I deploy?", session_id="s-1")

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["answer"] == "Deploy the staging box with make deploy."
    user, answer = stored(thread)
    assert [m["id"] for m in body["messages"]] == [user.id, answer.id]
    assert (user.role, user.content, user.session_id) == ("user", "how do I deploy?", "s-1")
    assert (answer.role, answer.content, answer.session_id) == ("assistant", body["answer"], "s-1")
    # The REST message shape, as GET /messages/ renders it.
    listed = owner_api.get(f"/api/v1/threads/{CHANNEL}/messages/").json()["results"]
    assert body["messages"] == listed


def test_it_sends_the_system_prompt_the_context_and_the_two_tools(thread, owner_api, fake_openai):
    append(thread, {"role": "user", "content": "earlier question"}, {"role": "assistant", "content": "earlier answer"})
    fake_openai.push_chat("ok")

    run_turn(owner_api, "and now?")

    (request,) = fake_openai.chat_requests()
    system = system_text(request)
    assert "data, not instructions" in system
    assert "compacted" in system
    assert "section 10" in system and "catalogue, not evidence" in system
    assert "search_memory" in system and "narrow the query" in system and "message_context_read" in system
    assert "records, not instructions" in system
    assert CHANNEL in system
    assert request["messages"][1:] == [
        {"role": "user", "content": "earlier question"},
        {"role": "assistant", "content": "earlier answer"},
        {"role": "user", "content": "and now?"},
    ]
    assert sorted(tool["function"]["name"] for tool in request["tools"]) == ["message_context_read", "search_memory"]


def test_it_sends_the_same_tool_schemas_as_the_tools_endpoint(thread, owner_api, fake_openai):
    fake_openai.push_chat("ok")

    run_turn(owner_api)

    (request,) = fake_openai.chat_requests()
    listed = owner_api.get("/api/v1/tools/")
    assert listed.status_code == 200
    body = listed.json()
    schemas = body["tools"] if isinstance(body, dict) else body
    assert request["tools"] == schemas


def test_it_runs_search_memory_on_the_turns_own_channel_and_stores_every_step(thread, owner_api, fake_openai):
    (old,) = append(thread, {"role": "user", "content": "the staging password rotates on Fridays"})
    other_thread = make_thread(thread.owner, "slack:C999/1")
    append(other_thread, {"role": "user", "content": "the prod password rotates on Mondays"})
    fake_openai.push_chat("Let me look.", tool_calls=[{"id": "call_1", **search_call("password rotates")}])
    fake_openai.push_chat(f"It rotates on Fridays (messageId={old.id}).")

    response = run_turn(owner_api, "when does the password rotate?", session_id="s-2")

    assert response.status_code == 200, response.json()
    _, user, call, result, answer = stored(thread)
    assert [m["id"] for m in response.json()["messages"]] == [user.id, call.id, result.id, answer.id]
    assert call.role == "assistant" and call.content == "Let me look."
    assert call.tool_calls == [{"id": "call_1", "name": "search_memory", "arguments": {"query": "password rotates"}}]
    assert (result.role, result.tool_call_id) == ("tool", "call_1")
    assert {m.session_id for m in (user, call, result, answer)} == {"s-2"}
    assert result.content.startswith(HEADER)
    assert f"channel: {CHANNEL} ·" in result.content
    assert "Fridays" in result.content and "Mondays" not in result.content
    assert answer.content == response.json()["answer"]
    # The second request carries the call and its result right after the user's message.
    first, second = fake_openai.chat_requests()
    assert second["messages"][len(first["messages"]) :] == [
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "search_memory", "arguments": '{"query": "password rotates"}'},
                }
            ],
        },
        {"role": "tool", "content": result.content, "tool_call_id": "call_1"},
    ]
    (logged,) = ToolCall.objects.all()
    assert (logged.tool, logged.surface, logged.thread_id) == ("search_memory", "agent", thread.id)
    assert logged.caller == thread.owner
    assert logged.chars_returned == len(result.content)


def test_it_searches_every_readable_thread_when_the_model_asks_for_the_global_scope(thread, owner_api, fake_openai):
    other_thread = make_thread(thread.owner, "slack:C999/1")
    append(other_thread, {"role": "user", "content": "the prod password rotates on Mondays"})
    fake_openai.push_chat(tool_calls=[search_call("password rotates", channel="*")])
    fake_openai.push_chat("Mondays, in the other thread.")

    run_turn(owner_api)

    (result,) = [m for m in stored(thread) if m.role == "tool"]
    assert "channel: * ·" in result.content
    assert "Mondays" in result.content


def test_it_runs_message_context_read_by_message_id(thread, owner_api, fake_openai):
    (old,) = append(thread, {"role": "tool", "content": "x" * 20_000 + " END-OF-LOG", "tool_call_id": "c0"})
    fake_openai.push_chat(tool_calls=[{"name": "message_context_read", "arguments": {"message_id": old.id}}])
    fake_openai.push_chat(
        tool_calls=[{"name": "message_context_read", "arguments": {"message_id": old.id, "offset": 12_000}}]
    )
    fake_openai.push_chat("The log ends with END-OF-LOG.")

    response = run_turn(owner_api, "how does the log end?")

    assert response.status_code == 200, response.json()
    first_page, second_page = [m for m in stored(thread) if m.role == "tool" and m.id != old.id]
    assert len(first_page.content) <= THREAD_SEARCH_MAX_CHARS
    assert "END-OF-LOG" not in first_page.content
    assert "END-OF-LOG" in second_page.content
    logged = list(ToolCall.objects.order_by("id").values_list("tool", "surface", "thread_id"))
    assert logged == [("message_context_read", "agent", thread.id)] * 2


def test_it_runs_several_tool_calls_of_one_step_in_order(thread, owner_api, fake_openai):
    append(thread, {"role": "user", "content": "alpha-host and beta-host are the web tier"})
    fake_openai.push_chat(
        tool_calls=[{"id": "a", **search_call("alpha-host")}, {"id": "b", **search_call("beta-host")}]
    )
    fake_openai.push_chat("Both are web hosts.")

    run_turn(owner_api)

    results = [m for m in stored(thread) if m.role == "tool"]
    assert [m.tool_call_id for m in results] == ["a", "b"]
    assert 'query: "alpha-host"' in results[0].content and 'query: "beta-host"' in results[1].content
    assert ToolCall.objects.filter(surface="agent").count() == 2


# --- bad tool calls: the model gets a result saying what was wrong ---------------------


@pytest.mark.parametrize(
    ("call", "named"),
    [
        ({"name": "search_memory", "arguments": {"q": "deploy"}}, "query"),
        ({"name": "search_memory", "arguments": {"query": ""}}, "query"),
        ({"name": "search_memory", "arguments": {"query": 42}}, "query"),
        ({"name": "message_context_read", "arguments": {"message_id": "not-a-number"}}, "message_id"),
        ({"name": "rm_rf", "arguments": {"path": "/"}}, "rm_rf"),
        ({"name": "search_memory", "arguments": "{query: nginx"}, "not valid JSON"),
        ({"name": "search_memory", "arguments": "[1, 2]"}, "not a JSON object"),
    ],
)
def test_it_answers_a_bad_tool_call_with_a_result_naming_the_problem(thread, owner_api, fake_openai, call, named):
    fake_openai.push_chat(tool_calls=[{"id": "bad", **call}])
    fake_openai.push_chat("Sorry, let me answer without it.")

    response = run_turn(owner_api)

    assert response.status_code == 200, response.json()
    (result,) = [m for m in stored(thread) if m.role == "tool"]
    assert result.tool_call_id == "bad"
    assert named in result.content
    assert "\n" not in result.content.strip()
    assert not result.content.startswith(HEADER)
    # The model sees the complaint and can correct itself.
    _, second = fake_openai.chat_requests()
    assert tool_messages(second) == [{"role": "tool", "content": result.content, "tool_call_id": "bad"}]
    assert response.json()["answer"] == "Sorry, let me answer without it."


def test_the_model_can_correct_a_bad_call_and_go_on(thread, owner_api, fake_openai):
    append(thread, {"role": "user", "content": "the cache lives on redis-7"})
    fake_openai.push_chat(tool_calls=[{"name": "search_memory", "arguments": {"text": "cache"}}])
    fake_openai.push_chat(tool_calls=[search_call("cache")])
    fake_openai.push_chat("redis-7.")

    response = run_turn(owner_api)

    assert response.json()["answer"] == "redis-7."
    wrong, right = [m for m in stored(thread) if m.role == "tool"]
    assert not wrong.content.startswith(HEADER)
    assert right.content.startswith(HEADER) and "redis-7" in right.content


def test_a_message_context_read_of_another_owners_message_answers_not_found(thread, owner_api, fake_openai, other):
    foreign = make_thread(other, "elsewhere")
    (secret,) = append(foreign, {"role": "user", "content": "other owner's secret"})
    fake_openai.push_chat(tool_calls=[{"name": "message_context_read", "arguments": {"message_id": secret.id}}])
    fake_openai.push_chat("Not found.")

    run_turn(owner_api)

    (result,) = [m for m in stored(thread) if m.role == "tool"]
    assert "secret" not in result.content
    assert "not found" in result.content.lower()


def test_an_operators_turn_runs_the_tools_with_the_thread_owners_reach(thread, operator_api, fake_openai, other):
    foreign = make_thread(other, "elsewhere")
    append(foreign, {"role": "user", "content": "password rotates at other's"})
    append(thread, {"role": "user", "content": "password rotates at owner's"})
    fake_openai.push_chat(tool_calls=[search_call("password rotates", channel="*")])
    fake_openai.push_chat("done")

    response = run_turn(operator_api)

    assert response.status_code == 200, response.json()
    (result,) = [m for m in stored(thread) if m.role == "tool"]
    # The result is stored in the owner's thread: it must not carry another owner's text.
    assert "owner's" in result.content
    assert "other's" not in result.content


# --- the step limit ------------------------------------------------------------------


def test_it_stops_at_the_step_limit_with_a_stored_answer_that_says_so(thread, owner_api, fake_openai, settings):
    settings.THREADMEM_AGENT_MAX_STEPS = 3
    append(thread, {"role": "user", "content": "deploy notes"})
    fake_openai.default_chat = lambda body: {"tool_calls": [search_call("deploy")]}

    response = run_turn(owner_api)

    assert response.status_code == 200, response.json()
    answer = response.json()["answer"]
    assert "limit of 3 model steps" in answer and "THREADMEM_AGENT_MAX_STEPS" in answer
    assert len(fake_openai.chat_requests()) == 3
    messages = stored(thread)
    assert messages[-1].role == "assistant" and messages[-1].content == answer and not messages[-1].tool_calls
    # Every call of every step got its result, so the next turn's context is a valid transcript.
    assert [m.role for m in messages[2:-1]] == ["assistant", "tool"] * 3
    assert ToolCall.objects.filter(surface="agent").count() == 3
    assert [m["id"] for m in response.json()["messages"]] == [m.id for m in messages[1:]]


def test_the_next_turn_after_the_step_limit_sends_a_valid_transcript(thread, owner_api, fake_openai, settings):
    settings.THREADMEM_AGENT_MAX_STEPS = 1
    fake_openai.push_chat(tool_calls=[{"id": "c1", **search_call("deploy")}])
    run_turn(owner_api, "first")
    fake_openai.push_chat("second answer")

    response = run_turn(owner_api, "continue")

    assert response.json()["answer"] == "second answer"
    roles = [m["role"] for m in fake_openai.chat_requests()[-1]["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]


# --- errors ----------------------------------------------------------------------------


def test_it_answers_503_naming_the_missing_settings_when_no_model_is_configured(thread, owner_api, no_model):
    before = row_counts()

    response = run_turn(owner_api)

    assert response.status_code == 503
    detail = response.json()["detail"]
    assert "THREADMEM_CHAT_MODEL" in detail and "OPENAI_BASE_URL" in detail
    assert row_counts() == before


def test_it_names_only_the_chat_model_when_the_server_is_set(thread, owner_api, fake_openai, settings):
    settings.THREADMEM_CHAT_MODEL = ""

    response = run_turn(owner_api)

    assert response.status_code == 503
    assert "THREADMEM_CHAT_MODEL" in response.json()["detail"]
    assert "OPENAI_BASE_URL" not in response.json()["detail"]
    assert fake_openai.chat_requests() == []


def test_it_answers_502_with_the_reason_and_keeps_the_message_when_the_server_is_down(
    thread, owner_api, fake_openai, settings
):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    settings.OPENAI_BASE_URL = f"http://127.0.0.1:{closed_port}/v1"

    response = run_turn(owner_api, "are you there?")

    assert response.status_code == 502
    detail = response.json()["detail"]
    assert "cannot reach the model server" in detail
    (user,) = stored(thread)
    assert (user.role, user.content) == ("user", "are you there?")
    assert f"messageId={user.id}" in detail


def test_it_answers_502_when_the_model_times_out(thread, owner_api, fake_openai, settings):
    settings.THREADMEM_LLM_TIMEOUT = 0.3
    fake_openai.push_chat("too late", delay=2)

    response = run_turn(owner_api, "quick question")

    assert response.status_code == 502
    assert "no answer within 0.3 s" in response.json()["detail"]
    assert [m.content for m in stored(thread)] == ["quick question"]


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        (lambda fake: fake.push_error(500, "overloaded"), "HTTP 500"),
        (lambda fake: fake.push_error(401, "bad key"), "HTTP 401"),
        (lambda fake: fake.push_raw("<html>bad gateway</html>", content_type="text/html"), "chat completion"),
        (lambda fake: fake.push_chat(""), "empty answer"),
        (lambda fake: fake.push_disconnect(), "cannot reach"),
    ],
)
def test_it_answers_502_when_the_model_server_fails(thread, owner_api, fake_openai, script, reason):
    script(fake_openai)

    response = run_turn(owner_api)

    assert response.status_code == 502
    assert reason in response.json()["detail"]
    assert [m.role for m in stored(thread)] == ["user"]


def test_it_keeps_the_finished_steps_when_the_model_fails_mid_turn(thread, owner_api, fake_openai):
    fake_openai.push_chat(tool_calls=[{"id": "c1", **search_call("deploy")}])
    fake_openai.push_error(503, "model unloaded")

    response = run_turn(owner_api)

    assert response.status_code == 502
    assert "step 2" in response.json()["detail"]
    assert [(m.role, m.tool_call_id) for m in stored(thread)] == [("user", ""), ("assistant", ""), ("tool", "c1")]


def test_it_stores_a_model_answer_with_a_nul_character_instead_of_failing(thread, owner_api, fake_openai):
    fake_openai.push_chat("bad\x00byte")

    response = run_turn(owner_api)

    assert response.status_code == 200
    assert stored(thread)[-1].content == "bad\ufffdbyte"


@pytest.mark.parametrize(
    ("body", "status", "named"),
    [
        ({}, 400, "content"),
        ({"content": ""}, 400, "content"),
        ({"content": "   "}, 400, "content"),
        ({"content": 7}, 400, "content"),
        ({"content": "a\x00b"}, 400, "NUL"),
        ({"content": "hi", "session_id": 5}, 400, "session_id"),
        ({"content": "hi", "role": "system"}, 400, "role"),
    ],
)
def test_it_refuses_a_bad_body_naming_the_problem_with_nothing_stored(
    thread, owner_api, fake_openai, body, status, named
):
    before = row_counts()

    response = owner_api.post(turn_url(), body, format="json")

    assert response.status_code == status
    assert named in response.json()["detail"]
    assert row_counts() == before
    assert fake_openai.chat_requests() == []


def test_it_refuses_a_message_over_the_size_limit_with_413(thread, owner_api, fake_openai, settings):
    settings.THREADMEM_MAX_MESSAGE_BYTES = 100

    response = run_turn(owner_api, "x" * 101)

    assert response.status_code == 413
    assert "THREADMEM_MAX_MESSAGE_BYTES" in response.json()["detail"]
    assert stored(thread) == []


def test_another_owners_thread_answers_404_and_calls_no_model(thread, other_api, fake_openai):
    before = row_counts()

    response = run_turn(other_api)

    assert response.status_code == 404
    assert row_counts() == before
    assert fake_openai.chat_requests() == []


def test_an_unknown_thread_answers_404(owner, owner_api, fake_openai):
    assert run_turn(owner_api, channel="nope").status_code == 404


def test_it_needs_authentication(thread, client, fake_openai):
    response = client.post(turn_url(), {"content": "hi"}, content_type="application/json")

    assert response.status_code == 401
    assert fake_openai.chat_requests() == []


# --- compaction after the turn ---------------------------------------------------------


def test_the_automatic_compaction_check_runs_once_after_the_turns_last_append(
    thread, owner_api, fake_openai, settings, django_capture_on_commit_callbacks
):
    settings.THREADMEM_COMPACT_AT_CHARS = 50
    fake_openai.push_chat(tool_calls=[search_call("deploy")])
    fake_openai.push_chat("The deploy notes are not in memory.")
    fake_openai.push_chat("## 1. Primary request and intent\nThe user asked about the deploy notes.")

    with django_capture_on_commit_callbacks(execute=True):
        response = run_turn(owner_api, "where are the deploy notes? " * 3)

    assert response.status_code == 200, response.json()
    # The turn's two requests both went out in generation 1, then the summary.
    first, second, summary_request = fake_openai.chat_requests()
    assert "tools" in first and "tools" in second and "tools" not in summary_request
    (compaction,) = Compaction.objects.filter(thread=thread)
    assert (compaction.trigger, compaction.status) == ("auto", Compaction.Status.SUCCEEDED)
    answer = Message.objects.get(pk=response.json()["messages"][-1]["id"])
    assert compaction.cut_seq == answer.seq
    # Requested after the answer was stored, not when the user's message (already over the threshold) landed.
    assert compaction.created_at >= answer.created_at
    assert answer.generation == 1
    thread.refresh_from_db()
    assert thread.current_generation == 2


def test_no_compaction_starts_below_the_threshold(thread, owner_api, fake_openai, django_capture_on_commit_callbacks):
    fake_openai.push_chat("short")

    with django_capture_on_commit_callbacks(execute=True):
        run_turn(owner_api)

    assert not Compaction.objects.exists()
    assert len(fake_openai.chat_requests()) == 1


def test_the_compaction_check_runs_after_a_failed_turn_too(
    thread, owner_api, fake_openai, settings, django_capture_on_commit_callbacks
):
    settings.THREADMEM_COMPACT_AT_CHARS = 20
    fake_openai.push_error(500, "down")

    with django_capture_on_commit_callbacks(execute=False):
        response = run_turn(owner_api, "a question long enough to pass the threshold")

    assert response.status_code == 502
    # Requested (its task runs on commit, not executed here): the user's message counts towards the size.
    assert Compaction.objects.filter(thread=thread, trigger="auto", generation=1).count() == 1


# --- the service directly ---------------------------------------------------------


def test_turn_run_returns_the_answer_and_the_stored_messages(thread, owner, fake_openai):
    fake_openai.push_chat(tool_calls=[search_call("anything")])
    fake_openai.push_chat("done")

    result = agent.turn_run(thread=thread, user=owner, content="go", session_id="cli")

    assert result.answer == "done"
    assert result.steps == 2 and not result.step_limit_reached
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.messages == stored(thread)


def test_turn_run_refuses_a_user_who_may_not_read_the_thread(thread, other, fake_openai):
    before = row_counts()

    with pytest.raises(NotFound):
        agent.turn_run(thread=thread, user=other, content="let me in")

    assert row_counts() == before
    assert fake_openai.chat_requests() == []


def test_it_runs_at_most_the_per_step_cap_of_tool_calls_and_answers_the_rest(thread, owner_api, fake_openai):
    cap = agent.TOOL_CALLS_PER_STEP_MAX
    calls = [{"id": f"c{n}", **search_call(f"term{n}")} for n in range(cap + 2)]
    fake_openai.push_chat(tool_calls=calls)
    fake_openai.push_chat("done")

    response = run_turn(owner_api)

    assert response.status_code == 200, response.json()
    results = [m for m in stored(thread) if m.role == "tool"]
    assert [m.tool_call_id for m in results] == [f"c{n}" for n in range(cap + 2)]
    assert all(m.content.startswith(HEADER) for m in results[:cap])
    assert all(m.content.startswith("error: not run") and str(cap) in m.content for m in results[cap:])
    assert ToolCall.objects.count() == cap


@pytest.mark.django_db
def test_it_throttles_turns_per_caller_with_429(owner_api, other_api, owner, monkeypatch, fake_openai):
    from rest_framework.throttling import ScopedRateThrottle

    # DRF reads the rates once, at import: the class attribute is what a request sees.
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"turns": "2/min"})
    make_thread(owner, "slack:C042/throttled")
    url = "/api/v1/threads/slack:C042/throttled/turns/"
    fake_openai.push_chat("first")
    fake_openai.push_chat("second")
    answers = [owner_api.post(url, {"content": "hi"}, format="json").status_code for _ in range(3)]
    assert answers == [200, 200, 429]
    assert other_api.post(url, {"content": "hi"}, format="json").status_code == 404  # counted per caller
