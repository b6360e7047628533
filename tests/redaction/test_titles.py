"""Thread titles are stored redacted, whichever path writes them (the API's create and PATCH, an import, a
restored export), so that no answer prints a secret a title held: the API's thread detail and list, an export, the
console, and the "Threads of these results" line of a global search."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from tests.support.redaction import api_reads, api_search, console_reads, holding, upload_export
from tests.support.secrets import CLASSIC_REDACTED, CLASSIC_TOKEN, claude_code_session
from tests.support.semantic import embedded, semantic_part
from threadmem.features.search.ranked import thread_legend
from threadmem.models import Thread

TITLE = f"push with {CLASSIC_TOKEN} to staging"
REDACTED = f"push with {CLASSIC_REDACTED} to staging"
QUESTION = "how did we fix the flaky zebrafish pipeline?"
FIX = "Fixed the flaky zebrafish pipeline: the runner cache was stale, cleared it and pinned the image."


def assert_read_redacted(owner_api, operator, thread: Thread) -> None:
    reads = {**api_reads(owner_api, thread), **console_reads(operator, thread)}
    assert holding(reads, CLASSIC_TOKEN) == []
    assert all(REDACTED in reads[name] for name in ("detail", "list", "export", "threads", "thread"))


@pytest.mark.django_db(transaction=True)
def test_a_title_patched_with_a_token_is_stored_redacted_and_global_search_names_the_thread_without_it(
    owner_api, operator, static_model
):
    created = owner_api.post("/api/v1/threads/", {"channel": "cli:zebrafish", "title": "ci week"}, format="json")
    assert created.status_code == 201, created.content
    messages = [{"role": "user", "content": "the zebrafish pipeline fails one run in five"}]
    messages.append({"role": "assistant", "content": FIX})
    assert owner_api.post("/api/v1/threads/cli:zebrafish/messages/", messages, format="json").status_code == 201

    patched = owner_api.patch("/api/v1/threads/cli:zebrafish/", {"title": TITLE}, format="json")

    assert patched.status_code == 200, patched.content
    assert patched.json()["title"] == REDACTED
    thread = Thread.objects.get(channel="cli:zebrafish")
    assert thread.title == REDACTED
    embedded(thread)
    answer = api_search(owner_api, QUESTION)
    legend = semantic_part(answer["text"])
    legend = legend[legend.index(thread_legend.HEAD) :]
    assert f'channel="cli:zebrafish" "{REDACTED}"' in legend
    assert CLASSIC_TOKEN not in json.dumps(answer)
    assert_read_redacted(owner_api, operator, thread)


def test_a_thread_created_with_a_token_in_its_title_stores_it_redacted(owner_api, operator):
    response = owner_api.post("/api/v1/threads/", {"channel": "cli:created", "title": TITLE}, format="json")

    assert response.status_code == 201, response.content
    assert response.json()["title"] == REDACTED
    assert_read_redacted(owner_api, operator, Thread.objects.get(channel="cli:created"))


def test_a_restored_exports_title_is_stored_redacted(owner_api, operator):
    lines = [
        {"format": "threadmem", "version": 1, "type": "thread", "thread": {"channel": "ops:restored", "title": TITLE}},
        {"type": "generation", "number": 1, "state": "open", "summary_seq": None},
        {"type": "message", "seq": 1, "generation": 1, "role": "user", "content": "deploy staging"},
        {"type": "end", "generations": 1, "messages": 1},
    ]

    answer = upload_export(owner_api, lines)

    assert CLASSIC_TOKEN not in json.dumps(answer)
    assert_read_redacted(owner_api, operator, Thread.objects.get(channel="ops:restored"))


def test_a_claude_code_sessions_title_is_stored_redacted(owner, owner_api, operator, tmp_path):
    session = "0b5e7c1a-2f4d-4e8a-9c6b-1d2e3f4a5b6c"
    records = [json.loads(line) for line in claude_code_session(session).splitlines()]
    records[0]["slug"] = TITLE  # Claude Code names a session by its slug: the thread's title
    path = tmp_path / f"{session}.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))

    call_command("import_sessions", "--owner", "owner", str(path))

    thread = Thread.objects.get(channel=f"claude-code:{session}")
    assert thread.title == REDACTED
    assert_read_redacted(owner_api, operator, thread)
