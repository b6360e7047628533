"""A hand-made set of hostile inputs, in the spirit of issue 52's probe: integers at and past every column's range
in URL paths, query parameters and bodies, and NUL or a lone surrogate in every text field of every import format.
Each answers 4xx (or a report naming the line) and stores nothing of it: never a 500, on either database."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.support.api import SLACK
from tests.support.factories import append, make_thread
from threadmem.features.imports.export import thread_export_lines
from threadmem.models import Import, Message, Thread

pytestmark = pytest.mark.django_db

# A column's edges: PostgreSQL's integer and bigint, 64 bits unsigned, and far past them.
INTEGERS = [0, -1, 2**31 - 1, 2**31, 2**63 - 1, 2**63, 2**64, 10**30]
HOSTILE_TEXT = {"nul": "a\x00b", "surrogate": "a\ud800b"}
CODEX_LEDGER = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "codex"
    / "rollout-2026-01-02T10-00-00-5f0c1e2a-7d41-4c3e-9b8a-0c0dec0dec01.jsonl"
)


@pytest.fixture
def thread(owner):
    thread = make_thread(owner, SLACK)
    append(thread, {"role": "user", "content": "deploy staging"})
    return thread


@pytest.mark.parametrize("number", INTEGERS)
def test_integers_past_every_range_in_api_paths_and_parameters_answer_4xx(owner_api, thread, number):
    message = Message.objects.get(thread=thread)
    for path in (
        f"/api/v1/messages/{number}/",
        f"/api/v1/messages/{message.pk}/?offset={number}",
        f"/api/v1/imports/{number}/",
        f"/api/v1/threads/?page={number}",
        f"/api/v1/threads/{SLACK}/messages/?page={number}",
        f"/api/v1/threads/{SLACK}/compactions/?page={number}",
        f"/api/v1/tool-calls/?page={number}",
        f"/api/v1/threads/{number}/",
    ):
        response = owner_api.get(path)
        assert response.status_code < 500, (path, response.content)


@pytest.mark.parametrize("number", INTEGERS)
def test_integers_past_every_range_in_api_bodies_answer_4xx_and_store_nothing(owner_api, thread, number):
    before = Message.objects.count(), Thread.objects.count()
    for path, body in (
        (f"/api/v1/threads/{SLACK}/messages/", {"role": "user", "content": "x", "supersedes": number}),
        ("/api/v1/threads/", {"channel": "ops:fork", "fork_from": {"channel": SLACK, "message_id": number}}),
        ("/api/v1/search/", {"query": "deploy", "channel": SLACK, "cursor": str(number)}),
    ):
        response = owner_api.post(path, body, format="json")
        assert response.status_code < 500, (path, response.content)
        assert response.status_code >= 400, (path, response.content)
    assert (Message.objects.count(), Thread.objects.count()) == before
    capture = {"file": SimpleUploadedFile("s.jsonl", b"{}\n"), "offset": str(number), "name": "s.jsonl"}
    assert owner_api.post("/api/v1/imports/", capture, format="multipart").status_code < 500


@pytest.mark.parametrize("number", INTEGERS)
def test_integers_past_every_range_in_console_paths_answer_4xx(admin_console, thread, number):
    for path in (
        f"/console/threads/{number}/",
        f"/console/threads/{number}/compactions/",
        f"/console/messages/{number}/",
        f"/console/messages/{number}/raw/",
        f"/console/messages/{number}/model/",
        f"/console/tool-calls/{number}/",
        f"/console/threads/?page={number}",
    ):
        response = admin_console.get(path)
        assert response.status_code < 500, (path, response.status_code)
    for path in (f"/console/connectors/{number}/revoke/", f"/console/threads/{number}/isolation/"):
        assert admin_console.post(path).status_code < 500, path


# --- every text field of every import format --------------------------------------------------------------


def leaves(value: Any, path: tuple = ()) -> Iterator[tuple]:
    """The path of every string in a JSON value."""
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for key, child in value.items():
            yield from leaves(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from leaves(child, (*path, index))


def with_text(record: dict, path: tuple, text: str) -> dict:
    changed = copy.deepcopy(record)
    target = changed
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = text + target[path[-1]]
    return changed


def claude_code_session() -> list[dict]:
    base = {"sessionId": "s-hostile", "cwd": "/srv/app", "timestamp": "2026-01-01T00:00:00Z", "version": "2.1.0"}
    return [
        {**base, "type": "user", "uuid": "u1", "message": {"role": "user", "content": "deploy staging"}},
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "check the unit"},
                    {"type": "text", "text": "Running it."},
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "systemctl status"}},
                ],
            },
        },
        {
            **base,
            "type": "user",
            "uuid": "t1",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "active (running)"}],
            },
        },
        {**base, "type": "system", "subtype": "compact_boundary", "uuid": "b1", "content": "Conversation compacted"},
        {
            **base,
            "type": "user",
            "uuid": "c1",
            "isCompactSummary": True,
            "message": {"role": "user", "content": "Summary: staging deployed."},
        },
        {**base, "type": "summary", "summary": "Deploying staging", "leafUuid": "c1"},
    ]


def openai_conversations() -> list[dict]:
    return [
        {
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "list the pods", "name": "ana"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "kubectl", "arguments": '{"args": "get pods"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "api-7d9 Running"},
                {"role": "assistant", "content": [{"type": "text", "text": "One pod runs."}]},
            ]
        }
    ]


def codex_rollout() -> list[dict]:
    return [json.loads(line) for line in CODEX_LEDGER.read_text().splitlines() if line.strip()]


def threadmem_export(owner) -> list[dict]:
    thread = make_thread(owner, "ops:exported", title="exported")
    append(
        thread,
        {"role": "user", "content": "deploy", "source_id": "m1", "session_id": "s1"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "name": "sh", "arguments": {"cmd": "make"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
    )
    lines = [json.loads(line) for line in thread_export_lines(thread=thread, withhold_isolated=False)]
    thread.delete()
    return lines


FORMATS = {
    "claude-code": lambda owner: claude_code_session(),
    "codex": lambda owner: codex_rollout(),
    "openai": lambda owner: openai_conversations(),
    "threadmem": threadmem_export,
}


def stored_text_is_clean() -> bool:
    """Nothing stored holds NUL or a lone surrogate (SQLite would keep one; PostgreSQL refuses it)."""
    texts = [
        *Message.objects.values_list("content", "tool_call_id", "session_id", "source_id"),
        *Thread.objects.values_list("channel", "title", "source_path", "source_session_id", "source_cwd"),
    ]
    for row in texts:
        for text in row:
            if "\x00" in text or text.encode("utf-8", "surrogatepass").decode("utf-8", "replace") != text:
                return False
    return all(
        "\x00" not in json.dumps(calls) and "\\ud8" not in json.dumps(calls)
        for (calls,) in Message.objects.values_list("tool_calls")
    )


@pytest.mark.parametrize("text", list(HOSTILE_TEXT.values()), ids=list(HOSTILE_TEXT))
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_nul_or_a_lone_surrogate_in_any_text_field_of_any_format_never_answers_500(owner, owner_api, fmt, text):
    records = FORMATS[fmt](owner)
    for number, record in enumerate(records):
        for path in leaves(record):
            changed = [*records[:number], with_text(record, path, text), *records[number + 1 :]]
            body = b"".join(json.dumps(r).encode() + b"\n" for r in changed)
            upload = {"file": SimpleUploadedFile("s.jsonl", body), "format": fmt}
            response = owner_api.post("/api/v1/imports/", upload, format="multipart")
            where = (fmt, number, path)
            assert response.status_code in (201, 400), (where, response.content)
            if response.status_code == 201:
                # Imported otherwise: the line named in the report, or the text kept out of what is stored.
                assert response.json()["status"] == "succeeded", where
            assert stored_text_is_clean(), where
            Thread.objects.filter(owner=owner).delete()
            Import.objects.all().delete()
