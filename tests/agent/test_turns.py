"""Agent turns over REST: the loop, what it stores, what it sends, and how it fails.

The model is the loopback fake (tests/support/fake_openai.py) driven by the real
openai SDK; the tools are the real search and audit read.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.factories import append, make_thread
from tests.support.turns import CHANNEL, run_turn, search_call, stored
from threadmem.features.search.answer_caps import HEADER, THREAD_SEARCH_MAX_CHARS
from threadmem.models import ToolCall


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
