"""Agent turns over REST, continued: how a turn fails, the compaction check after it, the service directly.

The model is the loopback fake (tests/support/fake_openai.py) driven by the real
openai SDK; the helpers are tests/support/turns.py.
"""

from __future__ import annotations

import socket

import pytest

from tests.support.factories import make_thread, row_counts
from tests.support.turns import run_turn, search_call, stored, turn_url
from threadmem.errors import NotFound
from threadmem.features import agent
from threadmem.features.search.answer_caps import HEADER
from threadmem.models import Compaction, Message, ToolCall

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
