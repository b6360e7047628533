"""A tool call's name is stored redacted, whichever path writes it (the API append, the Claude Code, Codex and
OpenAI chat importers, a capture, a restored export, an agent turn): in ``Message.tool_calls`` and in the
tool-argument rows' ``tool_name``, so that no hit header (``tool=…``), listing, export or console page prints it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.management import call_command

from tests.support.capture import hook_json, run_capture
from tests.support.redaction import api_reads, api_search, console_reads, holding, upload_export
from tests.support.secrets import CLASSIC_REDACTED, CLASSIC_TOKEN
from tests.support.turns import run_turn
from threadmem.models import Message, Thread, ToolArgument

pytestmark = pytest.mark.django_db

COMMAND = "make deploy-zebrafish"
ARGUMENTS = {"command": COMMAND}
RESULT = "deployed zebrafish to staging-7"
SESSION = "0b5e7c1a-2f4d-4e8a-9c6b-1d2e3f4a5b6c"


def assert_tool_name_redacted(owner_api, operator, thread: Thread) -> None:
    """Stored redacted where names are kept, and read back so by every surface, its search hits' headers too."""
    names = [call["name"] for m in Message.objects.filter(thread=thread) for call in m.tool_calls]
    assert names == [CLASSIC_REDACTED]
    assert set(ToolArgument.objects.filter(thread=thread).values_list("tool_name", flat=True)) == {CLASSIC_REDACTED}
    for channel in (thread.channel, None):
        for query in ("deploy-zebrafish", "staging-7"):  # the call's argument, its result
            answer = api_search(owner_api, query, channel)
            assert answer["literal_hits_total"] >= 1, (query, channel)
            assert f"tool={CLASSIC_REDACTED}" in answer["text"], (query, channel)
            assert CLASSIC_TOKEN not in json.dumps(answer)
    reads = {**api_reads(owner_api, thread), **console_reads(operator, thread, query="deploy-zebrafish")}
    assert holding(reads, CLASSIC_TOKEN) == []
    assert CLASSIC_REDACTED in reads["export"] and CLASSIC_REDACTED in reads["thread search"]


def write_jsonl(path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def claude_code_records() -> list[dict[str, Any]]:
    def record(kind: str, uuid: str, message: dict[str, Any]) -> dict[str, Any]:
        return {"type": kind, "uuid": uuid, "sessionId": SESSION, "cwd": "/srv/api", "message": message}

    call = {"type": "tool_use", "id": "toolu_1", "name": CLASSIC_TOKEN, "input": ARGUMENTS}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": RESULT}
    return [
        record("user", "u1", {"role": "user", "content": "deploy the zebrafish build"}),
        record("assistant", "a1", {"id": "msg_a1", "role": "assistant", "content": [call]}),
        record("user", "u2", {"role": "user", "content": [result]}),
    ]


def test_a_tool_call_appended_through_the_api_keeps_no_token_in_its_name(owner_api, operator, thread):
    response = owner_api.post(
        f"/api/v1/threads/{thread.channel}/messages/",
        [
            {"role": "assistant", "tool_calls": [{"id": "call_1", "name": CLASSIC_TOKEN, "arguments": ARGUMENTS}]},
            {"role": "tool", "tool_call_id": "call_1", "content": RESULT},
        ],
        format="json",
    )

    assert response.status_code == 201, response.content
    assert CLASSIC_TOKEN not in response.content.decode()
    assert_tool_name_redacted(owner_api, operator, thread)


def test_a_claude_code_session_imported_from_its_file_keeps_no_token_in_a_tool_name(owner_api, operator, tmp_path):
    path = tmp_path / f"{SESSION}.jsonl"
    write_jsonl(path, claude_code_records())

    call_command("import_sessions", "--owner", "owner", str(path))

    assert_tool_name_redacted(owner_api, operator, Thread.objects.get(channel=f"claude-code:{SESSION}"))


def test_a_captured_claude_code_session_keeps_no_token_in_a_tool_name(owner_api, operator, tmp_path, monkeypatch):
    path = tmp_path / f"{SESSION}.jsonl"
    write_jsonl(path, claude_code_records())

    out, err = run_capture(monkeypatch, hook_json("Stop", transcript=path, session_id=SESSION), "--owner", "owner")

    assert (out, err) == ("", "")
    assert_tool_name_redacted(owner_api, operator, Thread.objects.get(channel=f"claude-code:{SESSION}"))


def test_a_codex_rollout_keeps_no_token_in_a_tool_name(owner_api, operator, tmp_path):
    path = tmp_path / "rollout-2026-08-03T10-48-56-019fc8be.jsonl"

    def item(payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": "2026-08-03T10:48:57Z", "type": "response_item", "payload": payload}

    write_jsonl(
        path,
        [
            {"timestamp": "2026-08-03T10:48:56Z", "type": "session_meta", "payload": {"id": "019fc8be", "cwd": "/r"}},
            item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "deploy it"}]}),
            item({"type": "function_call", "name": CLASSIC_TOKEN, "arguments": json.dumps(ARGUMENTS), "call_id": "c1"}),
            item({"type": "function_call_output", "call_id": "c1", "output": RESULT}),
        ],
    )

    call_command("import_sessions", "--owner", "owner", str(path))

    assert_tool_name_redacted(owner_api, operator, Thread.objects.get())


def test_an_openai_chat_conversation_keeps_no_token_in_a_tool_name(owner_api, operator, tmp_path):
    path = tmp_path / "conversations.jsonl"
    call = {"id": "call_1", "type": "function", "function": {"name": CLASSIC_TOKEN, "arguments": json.dumps(ARGUMENTS)}}
    messages = [
        {"role": "user", "content": "deploy it"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": RESULT},
    ]
    write_jsonl(path, [{"messages": messages}])

    call_command("import_sessions", "--format", "openai", "--owner", "owner", str(path))

    assert_tool_name_redacted(owner_api, operator, Thread.objects.get())


def test_a_restored_export_keeps_no_token_in_a_tool_name(owner_api, operator):
    def message(seq: int, **fields: Any) -> dict[str, Any]:
        return {"type": "message", "seq": seq, "generation": 1, **fields}

    lines = [
        {"format": "threadmem", "version": 1, "type": "thread", "thread": {"channel": "ops:restored"}},
        {"type": "generation", "number": 1, "state": "open", "summary_seq": None},
        message(1, role="assistant", tool_calls=[{"id": "c1", "name": CLASSIC_TOKEN, "arguments": ARGUMENTS}]),
        message(2, role="tool", tool_call_id="c1", content=RESULT),
        {"type": "end", "generations": 1, "messages": 2},
    ]

    answer = upload_export(owner_api, lines)

    assert answer["errors"] == []
    assert_tool_name_redacted(owner_api, operator, Thread.objects.get(channel="ops:restored"))


def test_a_tool_the_model_names_with_a_token_in_an_agent_turn_is_stored_without_it(
    owner_api, operator, thread, fake_openai
):
    fake_openai.push_chat("Deploying.", tool_calls=[{"id": "call_1", "name": CLASSIC_TOKEN, "arguments": ARGUMENTS}])
    fake_openai.push_chat("Done.")

    response = run_turn(owner_api, "deploy the zebrafish build to staging-7", channel=thread.channel)

    assert response.status_code == 200, response.content
    (call,) = [m for m in Message.objects.filter(thread=thread) if m.tool_calls]
    assert call.tool_calls[0]["name"] == CLASSIC_REDACTED
    # The memory tools do not know it: the result says so, and names it as it was stored.
    (result,) = Message.objects.filter(thread=thread, role="tool")
    assert CLASSIC_TOKEN not in result.content
    reads = {**api_reads(owner_api, thread), **console_reads(operator, thread)}
    assert holding(reads, CLASSIC_TOKEN) == []
    assert CLASSIC_TOKEN not in json.dumps(fake_openai.chat_requests()[-1])
