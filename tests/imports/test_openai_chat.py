"""OpenAI chat JSONL (``--format openai``): one ``{"messages": [...]}`` conversation a line, Chat Completions style."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from threadmem.features.search import search_memory
from threadmem.models import Message, Thread, ToolArgument

pytestmark = pytest.mark.django_db


def call(call_id: str, name: str, **arguments: object) -> dict:
    """A tool call as the Chat Completions API sends it: arguments are a JSON string."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


DEPLOY = [
    {"role": "system", "content": "You are the on-call assistant for the staging cluster."},
    {"role": "user", "content": "Why is web-3.prod.example.net returning 502s?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            call("call_nginx", "shell", command="tail -n 50 /var/log/nginx/error.log", host="web-3.prod.example.net"),
            call("call_pods", "kubectl", args=["get", "pods", "-n", "web"]),
        ],
    },
    {"role": "tool", "tool_call_id": "call_nginx", "content": "upstream timed out (110) while connecting to 10.4.2.17"},
    {"role": "tool", "tool_call_id": "call_pods", "content": "api-7f9c4d-x2k  0/1  CrashLoopBackOff  12"},
    {"role": "assistant", "content": "The api pod api-7f9c4d-x2k is crash-looping, so nginx has no upstream."},
]
PARTS = [
    {"role": "developer", "content": "Answer briefly."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What does this graph show?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ],
    },
    {"role": "assistant", "content": "Latency doubles after the 14:05 deploy."},
]
MIGRATION = [
    {"role": "user", "content": "Run the orders migration."},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [call("call_migrate", "shell", command="manage.py migrate orders")],
    },
    {"role": "tool", "tool_call_id": "call_migrate", "content": "Applying orders.0042_orders_customer_id_idx... OK"},
]
CONVERSATIONS = [DEPLOY, PARTS, MIGRATION]


def jsonl(*conversations: list[dict], extra: str = "") -> str:
    return "".join(json.dumps({"messages": messages}) + "\n" for messages in conversations) + extra


def run(path: Path, *args: str, owner: str = "owner") -> None:
    call_command("import_sessions", "--format", "openai", "--owner", owner, *args, str(path))


def stored(channel: str) -> list[Message]:
    return list(Message.objects.filter(thread__channel=channel).order_by("seq"))


@pytest.fixture
def chats(tmp_path) -> Path:
    path = tmp_path / "chats.jsonl"
    path.write_text(jsonl(*CONVERSATIONS))
    return path


def test_each_conversation_becomes_a_thread_with_its_messages_in_order(owner, chats):
    run(chats)

    threads = Thread.objects.filter(source_format="openai").order_by("channel")
    assert [t.channel for t in threads] == ["openai:chats:1", "openai:chats:2", "openai:chats:3"]
    assert all(t.owner == owner and t.source_path == str(chats) for t in threads)
    for number, conversation in enumerate(CONVERSATIONS, start=1):
        messages = stored(f"openai:chats:{number}")
        assert [m.role for m in messages] == [{"developer": "system"}.get(m["role"], m["role"]) for m in conversation]
        assert [m.source_id for m in messages] == [f"{number}:{index}" for index in range(len(conversation))]
    deploy = stored("openai:chats:1")
    assert deploy[0].content == DEPLOY[0]["content"] and deploy[0].role == "system"
    assert deploy[5].content == DEPLOY[5]["content"]
    assert stored("openai:chats:2")[1].content == "What does this graph show?\n[image_url]"


def test_tool_calls_in_the_wire_shape_are_stored_and_paired_with_their_results(owner, chats):
    run(chats)

    for number, conversation in enumerate(CONVERSATIONS, start=1):
        messages = stored(f"openai:chats:{number}")
        calls = {c["id"]: c for m in messages for c in m.tool_calls}
        results = {m.tool_call_id: m for m in messages if m.role == "tool"}
        assert set(calls) == set(results)  # every call has its result, every result its call
        for m in messages:
            if m.role == "tool":
                assert m.seq > next(a.seq for a in messages if m.tool_call_id in {c["id"] for c in a.tool_calls})
        wire = [c for m in conversation for c in m.get("tool_calls", [])]
        assert [(c["id"], c["name"], c["arguments"]) for c in calls.values()] == [
            (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in wire
        ]
    call_message = stored("openai:chats:1")[2]
    assert call_message.content == "" and len(call_message.tool_calls) == 2
    assert set(ToolArgument.objects.filter(message=call_message).values_list("tool_name", "path", "value")) == {
        ("shell", "command", "tail -n 50 /var/log/nginx/error.log"),
        ("shell", "host", "web-3.prod.example.net"),
        ("kubectl", "args[0]", "get"),
        ("kubectl", "args[1]", "pods"),
        ("kubectl", "args[2]", "-n"),
        ("kubectl", "args[3]", "web"),
    }
    result = search_memory(user=owner, query="CrashLoopBackOff", channel="openai:chats:1")
    assert [hit.message_id for hit in result.hits] == [stored("openai:chats:1")[4].pk]


def test_reimporting_adds_nothing_and_a_longer_conversation_adds_only_its_new_messages(owner, chats, capsys):
    run(chats)
    before = Message.objects.count()
    capsys.readouterr()

    run(chats)
    assert Message.objects.count() == before
    assert "0 new messages" in capsys.readouterr().out

    followup = {"role": "user", "content": "Restart it with the previous image."}
    chats.write_text(jsonl(DEPLOY, PARTS, [*MIGRATION, followup]))
    run(chats)
    assert Message.objects.count() == before + 1
    assert stored("openai:chats:3")[-1].content == followup["content"]


def test_a_bad_line_is_reported_with_file_and_line_and_the_rest_imports(owner, tmp_path, capsys):
    path = tmp_path / "mixed.jsonl"
    bad_message = [{"role": "user", "content": "hi", "tool_calls": [call("c1", "shell", command="ls")]}]
    path.write_text(
        json.dumps({"messages": DEPLOY})
        + "\n{not json\n"
        + json.dumps({"prompt": "a completion, not a chat"})
        + "\n"
        + json.dumps({"messages": bad_message})
        + "\n"
        + json.dumps({"messages": MIGRATION})
        + "\n"
    )

    with pytest.raises(CommandError, match="skipped 3 bad line"):
        run(path)

    err = capsys.readouterr().err
    assert f"{path}:2: not JSON" in err
    assert f'{path}:3: not a conversation: expected {{"messages": [...]}}' in err
    assert f"{path}:4: messages[0].tool_calls are only allowed on assistant messages" in err
    assert sorted(Thread.objects.values_list("channel", flat=True)) == ["openai:mixed:1", "openai:mixed:5"]
    assert len(stored("openai:mixed:5")) == len(MIGRATION)


def test_an_upload_with_format_openai_imports_under_the_caller(owner_api, owner, other_api):
    body = jsonl(*CONVERSATIONS).encode()
    data = {"file": SimpleUploadedFile("support.jsonl", body, content_type="application/jsonl"), "format": "openai"}

    response = owner_api.post("/api/v1/imports/", data, format="multipart")

    assert response.status_code == 201, response.content
    answer = response.json()
    assert answer["status"] == "succeeded" and answer["lines_skipped"] == 0
    assert answer["channels"] == [f"openai:upload:support:{n}" for n in (1, 2, 3)]
    assert answer["messages_imported"] == sum(len(c) for c in CONVERSATIONS)
    assert set(Thread.objects.values_list("owner", "source_format")) == {(owner.pk, "openai")}
    assert other_api.get(f"/api/v1/imports/{answer['id']}/").status_code == 404
    again = {"file": SimpleUploadedFile("support.jsonl", body, content_type="application/jsonl"), "format": "openai"}
    assert owner_api.post("/api/v1/imports/", again, format="multipart").json()["messages_imported"] == 0


def test_format_and_channel_as_query_parameters_name_the_uploads_format_not_the_answers(owner_api):
    """DRF reads ?format= as the answer's renderer (URL_FORMAT_OVERRIDE) and answered 404 for "openai"."""

    def upload(query: str):
        body = jsonl(*CONVERSATIONS[:1]).encode()
        data = {"file": SimpleUploadedFile("support.jsonl", body, content_type="application/jsonl")}
        return owner_api.post(f"/api/v1/imports/?{query}", data, format="multipart")

    response = upload("format=openai&channel=support:one")
    assert response.status_code == 201, response.content
    assert (response.json()["format"], response.json()["channels"]) == ("openai", ["support:one:1"])
    assert response["Content-Type"] == "application/json"
    # The query's format is the one read: as Claude Code's, the conversation is one bad line.
    as_claude = upload("format=claude-code").json()
    assert (as_claude["format"], as_claude["messages_imported"]) == ("claude-code", 0)
    refused = upload("format=yaml")
    assert (refused.status_code, refused.json()["field"]) == (400, "format")
    assert "format must be one of" in refused.json()["detail"]
