"""``--follow`` tails files as a live session writes them; ``POST /api/v1/imports/`` imports an upload."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection

from cli.management.commands.import_sessions import Command
from tests.support.factories import make_thread, row_counts
from tests.support.sessions import data_dir
from threadmem.models import Import, Message, Thread


def wait_until(condition, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.mark.django_db(transaction=True)
def test_follow_imports_appended_lines_and_new_sessions_and_waits_for_a_half_written_line(owner, tmp_path: Path):
    lines = (data_dir() / "tool_heavy.jsonl").read_bytes().splitlines(keepends=True)
    folder = tmp_path / "project"
    folder.mkdir()
    live = folder / "live.jsonl"
    live.write_bytes(b"".join(lines[:10]))
    command = Command()

    def follow() -> None:
        try:
            call_command(
                command,
                "--format",
                "claude-code",
                "--owner",
                "owner",
                "--follow",
                "--poll-seconds",
                "0.1",
                "--follow-seconds",
                "60",
                str(folder),
            )
        finally:
            connection.close()

    runner = threading.Thread(target=follow)
    runner.start()
    try:

        def count() -> int:
            return Message.objects.filter(thread__source_path=str(live)).count()

        assert wait_until(lambda: count() > 0)
        first = count()
        with live.open("ab") as handle:
            handle.write(b"".join(lines[10:20]) + lines[20][:25])  # the last one half-written
        assert wait_until(lambda: count() > first)
        with live.open("ab") as handle:
            handle.write(lines[20][25:] + b"".join(lines[21:]))
        (folder / "short.jsonl").write_bytes((data_dir() / "short.jsonl").read_bytes())
        assert wait_until(lambda: Thread.objects.filter(source_path=str(folder / "short.jsonl")).exists())
        call_command(
            "import_sessions",
            "--format",
            "claude-code",
            "--owner",
            "owner",
            "--channel",
            "whole",
            str(data_dir() / "tool_heavy.jsonl"),
        )
        whole = list(Message.objects.filter(thread__channel="whole").order_by("seq").values_list("content", "role"))
        assert wait_until(lambda: count() == len(whole))
    finally:
        command.stop_event.set()
        runner.join(timeout=30)
    assert not runner.is_alive()
    followed = list(
        Message.objects.filter(thread__source_path=str(live)).order_by("seq").values_list("content", "role")
    )
    assert followed == whole


pytestmark = pytest.mark.django_db


def upload(client, body: bytes, **fields: str):
    data = {"file": SimpleUploadedFile("session.jsonl", body, content_type="application/jsonl"), **fields}
    return client.post("/api/v1/imports/", data, format="multipart")


def test_an_upload_imports_and_its_status_is_readable_by_its_owner_only(owner_api, other_api, owner):
    response = upload(owner_api, (data_dir() / "short.jsonl").read_bytes(), channel="uploaded")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "succeeded" and body["channels"] == ["uploaded"] and body["messages_imported"] == 8
    thread = Thread.objects.get(channel="uploaded")
    assert thread.owner == owner and thread.source_path == "upload:session.jsonl"
    assert owner_api.get(f"/api/v1/imports/{body['id']}/").json()["messages_imported"] == 8
    assert other_api.get(f"/api/v1/imports/{body['id']}/").status_code == 404
    again = upload(owner_api, (data_dir() / "short.jsonl").read_bytes(), channel="uploaded").json()
    assert again["messages_imported"] == 0 and again["messages_known"] == 8


def test_a_large_upload_imports_in_a_task(owner_api, settings, django_capture_on_commit_callbacks):
    settings.IMPORT_INLINE_MAX_BYTES = 100
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(owner_api, (data_dir() / "tool_heavy.jsonl").read_bytes())
    assert response.status_code == 202, response.content
    status = owner_api.get(f"/api/v1/imports/{response.json()['id']}/").json()
    assert status["status"] == "succeeded" and status["messages_imported"] > 0


def test_an_upload_that_is_not_jsonl_answers_400_and_stores_nothing(owner_api, owner):
    before = row_counts()
    response = upload(owner_api, b'{"type": "user"}\nthis is not json\n')
    assert response.status_code == 400 and "line 2" in response.json()["detail"]
    assert row_counts() == before and not Import.objects.exists()


def test_an_upload_to_a_channel_another_owner_holds_is_a_thread_of_ones_own(owner, other, other_api):
    mine = make_thread(owner, "owners-channel")
    response = upload(other_api, (data_dir() / "short.jsonl").read_bytes(), channel="owners-channel")
    assert response.status_code in (200, 201, 202), response.json()
    assert not mine.messages.exists()
    assert Thread.objects.get(owner=other, channel="owners-channel").messages.exists()


def test_imports_need_a_token(client):
    assert client.post("/api/v1/imports/", {}).status_code == 401
    assert client.get("/api/v1/imports/1/").status_code == 401


def test_the_console_shows_where_a_thread_came_from_and_whose_summary_it_is(owner, operator_console):
    from django.core.management import call_command

    path = data_dir() / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    call_command("import_sessions", "--format", "claude-code", "--owner", "owner", str(path))
    thread = Thread.objects.get(source_path=str(path))
    page = operator_console.get(f"/console/threads/{thread.pk}/?generation=1").content.decode()
    assert "imported from claude-code file" in page and str(path) in page and thread.source_session_id in page
    assert "imported: claude-code's own summary" in page
