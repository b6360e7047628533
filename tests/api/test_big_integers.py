"""Integers outside 64 bits in tool-call arguments: refused before anything is stored on every way in
(REST appends, imports, a model's own call during a turn), and a row stored before never breaks a listing."""

from __future__ import annotations

import importlib
import json
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from tests.support.api import MESSAGES
from tests.support.factories import append, row_counts
from tests.support.turns import run_turn, stored
from threadmem.models import Message

BIG = 100000000000000000000000000000
BELOW = -(2**63) - 1
ints_as_text = importlib.import_module("threadmem.migrations.0020_tool_call_integers_as_text")


def call_message(arguments) -> dict:
    return {"role": "assistant", "tool_calls": [{"id": "c1", "name": "count", "arguments": arguments}]}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            b'{"role": "assistant", "tool_calls": [{"id": "c1", "name": "count", "arguments": '
            b'{"n": 100000000000000000000000000000}}]}',
            id="object-big",
        ),
        pytest.param(
            b'[{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"id": "c1", '
            b'"name": "count", "arguments": {"n": [-9223372036854775809]}}]}]',
            id="batch-below",
        ),
        pytest.param(json.dumps(call_message(json.dumps({"n": BIG}))).encode(), id="string-arguments"),
        pytest.param(
            json.dumps(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "count", "arguments": json.dumps({"n": BELOW})},
                        }
                    ],
                }
            ).encode(),
            id="openai-wire-shape",
        ),
    ],
)
def test_an_append_with_an_integer_outside_64_bits_answers_400_and_stores_nothing(owner_api, thread, body):
    before = row_counts()
    response = owner_api.post(MESSAGES, body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert "holds an integer outside 64 bits" in response.json()["detail"]
    assert row_counts() == before
    assert owner_api.get(MESSAGES).status_code == 200


@pytest.mark.django_db
def test_integers_at_the_edges_of_64_bits_are_stored_exactly(owner_api, thread):
    edges = {"low": -(2**63), "high": 2**64 - 1, "id": 1234567890123456789}
    response = owner_api.post(MESSAGES, call_message(edges), format="json")
    assert response.status_code == 201, response.content
    assert response.json()["tool_calls"][0]["arguments"] == edges
    assert owner_api.get(MESSAGES).json()["results"][0]["tool_calls"][0]["arguments"] == edges


@pytest.mark.django_db
def test_a_row_stored_before_the_check_neither_breaks_the_listing_nor_survives_the_migration(owner_api, thread):
    (message,) = append(thread, call_message({"n": 1}))
    # Written as an older version stored it, past today's checks.
    Message.objects.filter(pk=message.pk).update(
        tool_calls=[{"id": "c1", "name": "count", "arguments": {"n": BIG, "m": [BELOW], "ok": 7}}]
    )

    listing = owner_api.get(MESSAGES)

    assert listing.status_code == 200
    arguments = listing.json()["results"][0]["tool_calls"][0]["arguments"]
    assert arguments == {"n": str(BIG), "m": [str(BELOW)], "ok": 7}

    # The migration reads only the editor's connection (SQLite's editor cannot open inside the test's transaction).
    ints_as_text.forward(apps, SimpleNamespace(connection=connection))
    message.refresh_from_db()
    assert message.tool_calls[0]["arguments"] == {"n": str(BIG), "m": [str(BELOW)], "ok": 7}


@pytest.mark.django_db
def test_an_imported_line_with_an_integer_outside_64_bits_is_reported_and_skipped(owner_api, settings, tmp_path):
    settings.THREADMEM_IMPORT_DIR = tmp_path
    records = [
        {"type": "user", "uuid": "u1", "sessionId": "s1", "message": {"role": "user", "content": "count it"}},
        {
            "type": "assistant",
            "uuid": "a1",
            "sessionId": "s1",
            "message": {
                "id": "m1",
                "content": [{"type": "tool_use", "id": "t1", "name": "count", "input": {"n": BIG}}],
            },
        },
    ]
    body = "".join(json.dumps(record) + "\n" for record in records).encode()

    response = owner_api.post(
        "/api/v1/imports/", {"file": SimpleUploadedFile("s.jsonl", body), "channel": "imported"}, format="multipart"
    )

    assert response.status_code == 201, response.content
    report = response.json()
    assert report["messages_imported"] == 1 and report["lines_skipped"] == 1
    assert "holds an integer outside 64 bits" in report["errors"][0]
    assert owner_api.get("/api/v1/threads/imported/messages/").status_code == 200
    assert list(tmp_path.iterdir()) == []


@pytest.mark.django_db
def test_a_models_call_with_an_integer_outside_64_bits_is_kept_as_invalid_arguments_the_model_sees(
    thread, owner_api, fake_openai
):
    raw = '{"message_id": 100000000000000000000000000000}'
    fake_openai.push_chat(tool_calls=[{"id": "big", "name": "message_context_read", "arguments": raw}])
    fake_openai.push_chat("That id cannot exist.")

    response = run_turn(owner_api)

    assert response.status_code == 200, response.json()
    call, result = [m for m in stored(thread) if m.role in ("assistant", "tool")][:2]
    assert call.tool_calls[0]["arguments"] == {"invalid_arguments": raw}
    assert result.tool_call_id == "big" and "holds an integer outside 64 bits" in result.content
    _, second = fake_openai.chat_requests()
    assert any("holds an integer outside 64 bits" in str(m.get("content")) for m in second["messages"])
    assert owner_api.get("/api/v1/threads/slack:C042/1700000000.1/messages/").status_code == 200
