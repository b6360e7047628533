"""Secrets are never stored: every ingest path stores them redacted, and search finds none of them (issue #42).

The paths: the API append (content and tool-call arguments), an upload, a command import, a capture (a
streamed message that grows too), an agent turn (the model's answer, its tool calls, the tool-call log) and a
compaction summary. ``THREADMEM_REDACT_SECRETS=false`` stores them as they came.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from tests.support import secrets as made_up
from tests.support.api import MESSAGES, SLACK
from tests.support.capture import hook_json, run_capture
from tests.support.compaction import deploy_conversation, nine_sections
from tests.support.factories import append
from tests.support.turns import run_turn, search_call
from threadmem.features.compaction import compacting
from threadmem.lib.jsonleaves import string_leaves
from threadmem.models import Generation, Message, Thread, ToolArgument, ToolCall

pytestmark = pytest.mark.django_db

REDACTED_URL = "postgres://app:[redacted: password]@db.internal:5432/orders"


def search(api, query: str, channel: str | None = SLACK) -> dict[str, Any]:
    body = {"query": query} if channel is None else {"query": query, "channel": channel}
    response = api.post("/api/v1/search/", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def stored_text(thread: Thread) -> str:
    """Everything the thread stores as text: contents, tool calls, their leaves, the title."""
    rows = Message.objects.filter(thread=thread).values_list("content", "tool_calls")
    leaves = ToolArgument.objects.filter(thread=thread).values_list("value", flat=True)
    return "\n".join([thread.title, *(f"{c}\n{json.dumps(t)}" for c, t in rows), *leaves])


def assert_no_secret(text: str) -> None:
    for secret in made_up.SECRETS:
        assert secret not in text
    assert "-----BEGIN RSA" not in text


# --- the API append -----------------------------------------------------------------------------------------


def test_an_appended_tool_call_and_result_store_each_secret_redacted_and_search_finds_none(owner_api, thread):
    response = owner_api.post(
        MESSAGES,
        [
            {
                "role": "assistant",
                "content": f"Connecting with {made_up.DATABASE_URL}",
                "tool_calls": [{"id": "call_1", "name": "shell", "arguments": made_up.SECRET_ARGUMENTS}],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": made_up.SECRET_RESULT},
        ],
        format="json",
    )

    assert response.status_code == 201, response.content
    call, result = Message.objects.filter(thread=thread).order_by("seq")
    assert call.content == f"Connecting with {REDACTED_URL}"
    assert call.tool_calls == [{"id": "call_1", "name": "shell", "arguments": made_up.REDACTED_ARGUMENTS}]
    assert result.content == made_up.REDACTED_RESULT
    leaves = dict(ToolArgument.objects.filter(message=call).values_list("path", "value"))
    assert leaves == {path: value for path, value in string_leaves(made_up.REDACTED_ARGUMENTS)}
    # The answer is what was stored.
    assert [m["content"] for m in response.json()] == [call.content, made_up.REDACTED_RESULT]
    for secret in made_up.SECRETS:
        for channel in (SLACK, None):
            body = search(owner_api, secret, channel)
            # The answer's header repeats the query; nothing else in it holds the secret.
            text = body["text"].replace(f'query: "{secret}"', "")
            assert body["literal_hits_total"] == 0 and secret not in text, secret
    # What was there is findable by its placeholder.
    hits = search(owner_api, "[redacted: github token]")["hits"]
    assert any(hit["message_id"] == call.id and "[redacted: github token]" in hit["window"] for hit in hits)


def test_a_secret_in_a_single_user_message_is_redacted_too(owner_api, thread):
    response = owner_api.post(MESSAGES, {"role": "user", "content": f"the key is {made_up.AWS_KEY_ID}"}, format="json")
    assert response.json()["content"] == "the key is [redacted: aws access key]"
    assert Message.objects.get(thread=thread).content == "the key is [redacted: aws access key]"


def test_with_redaction_off_secrets_are_stored_as_they_came(owner_api, thread, settings):
    settings.THREADMEM_REDACT_SECRETS = False
    owner_api.post(
        MESSAGES,
        [
            {
                "role": "assistant",
                "tool_calls": [{"id": "call_1", "name": "shell", "arguments": made_up.SECRET_ARGUMENTS}],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": made_up.SECRET_RESULT},
        ],
        format="json",
    )
    call, result = Message.objects.filter(thread=thread).order_by("seq")
    assert call.tool_calls[0]["arguments"] == made_up.SECRET_ARGUMENTS and result.content == made_up.SECRET_RESULT
    assert search(owner_api, made_up.GITHUB_TOKEN)["literal_hits_total"] >= 1


# --- imports and captures -----------------------------------------------------------------------------------


def test_an_uploaded_session_stores_its_secrets_summary_and_problems_redacted(owner_api):
    bad_line = json.dumps({"type": f"mystery {made_up.AWS_KEY_ID}"}).encode() + b"\n"
    data = {
        "file": SimpleUploadedFile("session.jsonl", made_up.claude_code_session() + bad_line),
        "channel": "uploaded",
    }
    response = owner_api.post("/api/v1/imports/", data, format="multipart")

    assert response.status_code == 201, response.content
    body = response.json()
    thread = Thread.objects.get(channel="uploaded")
    assert_no_secret(stored_text(thread))
    assert Message.objects.get(thread=thread, role="tool").content == made_up.REDACTED_RESULT
    call = Message.objects.get(thread=thread, role="assistant")
    assert call.tool_calls[0]["arguments"] == made_up.REDACTED_ARGUMENTS
    # Claude Code's own summary opens generation 2: imported through its own write, redacted as well.
    summary = Generation.objects.get(thread=thread, number=1).summary_message
    assert summary.content == "Summary: the app reads [redacted: aws access key] from .env"
    # The problem quoting the bad line keeps no secret either.
    assert body["errors"] == ["upload:session.jsonl:6: unknown record type 'mystery [redacted: aws access key]'"]
    assert made_up.AWS_KEY_ID not in json.dumps(body)
    assert search(owner_api, made_up.STRIPE_KEY, "uploaded")["literal_hits_total"] == 0


def test_a_codex_sessions_title_taken_from_its_first_prompt_is_redacted(owner, tmp_path):
    path = tmp_path / "rollout-2026-08-03T10-48-56-019fc8be.jsonl"
    records = [
        {"timestamp": "2026-08-03T10:48:56Z", "type": "session_meta", "payload": {"id": "019fc8be", "cwd": "/repo"}},
        {
            "timestamp": "2026-08-03T10:48:57Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": f"push with {made_up.GITHUB_TOKEN} please"}],
            },
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))

    call_command("import_sessions", "--owner", "owner", str(path))

    thread = Thread.objects.get()
    assert thread.title == "push with [redacted: github token] please"
    assert_no_secret(stored_text(thread))


def test_a_captured_session_stores_its_secrets_redacted_as_its_streamed_message_grows(owner, tmp_path, monkeypatch):
    session = "0b5e7c1a-2f4d-4e8a-9c6b-1d2e3f4a5b6c"
    lines = made_up.claude_code_session(session, stream=True).splitlines(keepends=True)
    live = tmp_path / f"{session}.jsonl"
    stop = hook_json("Stop", transcript=live, session_id=session)
    # First capture: the prompt and the first record of the streamed assistant message (its text).
    live.write_bytes(b"".join(lines[:2]))
    run_capture(monkeypatch, stop, "--owner", "owner")
    thread = Thread.objects.get(channel=f"claude-code:{session}")
    streamed = Message.objects.get(thread=thread, role="assistant")
    assert streamed.tool_calls == []
    assert Message.objects.get(thread=thread, role="user").content == f"deploy with {REDACTED_URL}"

    live.write_bytes(b"".join(lines))
    out, err = run_capture(monkeypatch, stop, "--owner", "owner")

    assert (out, err) == ("", "")
    streamed.refresh_from_db()  # the same message, grown by its tool call
    assert streamed.tool_calls[0]["arguments"] == made_up.REDACTED_ARGUMENTS
    assert set(ToolArgument.objects.filter(message=streamed).values_list("value", flat=True)) == {
        value for _, value in string_leaves(made_up.REDACTED_ARGUMENTS)
    }
    assert Message.objects.get(thread=thread, role="tool").content == made_up.REDACTED_RESULT
    assert_no_secret(stored_text(thread))


# --- agent turns and compaction -----------------------------------------------------------------------------


def test_an_agent_turn_stores_the_models_secrets_redacted_and_never_sends_one_back(thread, owner_api, fake_openai):
    fake_openai.push_chat(
        "Let me look.", tool_calls=[{"id": "call_1", **search_call(f"who used {made_up.GITHUB_TOKEN}")}]
    )
    fake_openai.push_chat(f"Connect with {made_up.DATABASE_URL}; the key is {made_up.AWS_KEY_ID}.")

    response = run_turn(owner_api, f"my stripe key is {made_up.STRIPE_KEY}; what next?")

    assert response.status_code == 200, response.content
    answer = f"Connect with {REDACTED_URL}; the key is [redacted: aws access key]."
    assert response.json()["answer"] == answer
    assert Message.objects.filter(thread=thread).order_by("-seq").first().content == answer
    (call,) = [m for m in Message.objects.filter(thread=thread, role="assistant") if m.tool_calls]
    assert call.tool_calls[0]["arguments"] == {"query": "who used [redacted: github token]"}
    assert_no_secret(stored_text(thread))
    # Neither request to the model carries a secret: the transcript is what was stored.
    for request in fake_openai.chat_requests():
        sent = json.dumps(request)
        assert made_up.STRIPE_KEY not in sent and made_up.GITHUB_TOKEN not in sent
    # The tool-call log keeps the model's query redacted too.
    assert ToolCall.objects.get().arguments["query"] == "who used [redacted: github token]"


def _compacted_summary(thread: Thread, capture) -> Message:
    with capture(execute=True):
        compacting.compaction_request(thread=thread, trigger="test")
    return Generation.objects.get(thread=thread, number=1).summary_message


def test_a_summary_the_model_writes_out_a_secret_in_is_stored_redacted(
    thread, fake_openai, django_capture_on_commit_callbacks
):
    deploy_conversation(thread)
    fake_openai.push_chat(nine_sections(s5=f"The deploy pushed with {made_up.GITHUB_TOKEN}."))

    summary = _compacted_summary(thread, django_capture_on_commit_callbacks)

    assert "The deploy pushed with [redacted: github token]." in summary.content
    assert made_up.GITHUB_TOKEN not in summary.content


def test_a_summary_of_messages_stored_before_redaction_keeps_none_of_their_secrets(
    thread, no_model, settings, django_capture_on_commit_callbacks
):
    settings.THREADMEM_REDACT_SECRETS = False
    deploy_conversation(thread)
    append(thread, {"role": "user", "content": f"the password is in {made_up.DATABASE_URL}"})
    settings.THREADMEM_REDACT_SECRETS = True

    summary = _compacted_summary(thread, django_capture_on_commit_callbacks)

    # The offline summary quotes the URL (its resource catalogue lists it): without its password.
    assert REDACTED_URL in summary.content
    assert made_up.DB_PASSWORD not in summary.content
