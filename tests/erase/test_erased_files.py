"""Erasing a thread or an owner leaves none of their bytes under THREADMEM_IMPORT_DIR: copies under every name."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.core.management import call_command

from tests.support.sessions import data_dir
from threadmem.models import CaptureCursor, Thread

pytestmark = pytest.mark.django_db(transaction=True)

NAMES = (
    "/home/bob/.claude/projects/-home-bob-spotter/short.jsonl",
    "/home/bob/.claude/projects/-home-bob-spotter-moved/short.jsonl",
)


@pytest.fixture(autouse=True)
def import_dir(settings, tmp_path) -> Path:
    settings.THREADMEM_IMPORT_DIR = tmp_path / "imports"
    return settings.THREADMEM_IMPORT_DIR


def captured_under_both_names(client) -> Thread:
    raw = (data_dir() / "short.jsonl").read_bytes()
    for name in NAMES:
        query = urlencode({"offset": 0, "name": name})
        response = client.post(
            f"/api/v1/imports/?{query}",
            raw,
            content_type="application/octet-stream",
            HTTP_CONTENT_DISPOSITION='attachment; filename="short.jsonl"',
        )
        assert response.status_code == 200, response.content
    (thread,) = Thread.objects.all()
    return thread


def files_under(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file()] if folder.exists() else []


def test_deleting_a_thread_captured_under_two_names_removes_both_copies_and_cursors(owner_api, import_dir):
    thread = captured_under_both_names(owner_api)
    assert len(files_under(import_dir)) == 2 and CaptureCursor.objects.count() == 2

    response = owner_api.delete(f"/api/v1/threads/{thread.channel}/")

    assert response.status_code == 200, response.content
    assert response.json()["counts"]["capture_cursors"] == 2
    assert files_under(import_dir) == [] and not CaptureCursor.objects.exists()


def test_forget_owner_leaves_no_captured_copy_of_theirs(owner, owner_api, import_dir):
    captured_under_both_names(owner_api)
    assert len(files_under(import_dir)) == 2

    call_command("forget_owner", owner.username, "--yes", stdout=StringIO())

    assert files_under(import_dir) == [] and not CaptureCursor.objects.exists()


@pytest.mark.django_db
def test_forget_owner_removes_an_upload_still_waiting_for_its_task(
    owner, owner_api, import_dir, settings, django_capture_on_commit_callbacks
):
    # Past the inline size an upload waits in the import folder for its task (enqueued after the commit, which
    # this test's transaction never reaches).
    settings.IMPORT_INLINE_MAX_BYTES = 1
    response = owner_api.post(
        "/api/v1/imports/",
        (data_dir() / "short.jsonl").read_bytes(),
        content_type="application/octet-stream",
        HTTP_CONTENT_DISPOSITION='attachment; filename="short.jsonl"',
    )
    assert response.status_code == 202, response.content
    assert len(files_under(import_dir)) == 1

    with django_capture_on_commit_callbacks(execute=True):
        call_command("forget_owner", owner.username, "--yes", stdout=StringIO())

    assert files_under(import_dir) == []
