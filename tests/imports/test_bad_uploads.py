"""Bad imports answer a clear 4xx (an upload) or a per-line report (the command), never a 500, and an upload's
file never stays behind in THREADMEM_IMPORT_DIR when the answer is an error."""

from __future__ import annotations

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from tests.support.factories import row_counts
from threadmem.models import Import, Message

USER = {"type": "user", "uuid": "u1", "sessionId": "s1", "message": {"role": "user", "content": "hello"}}


def jsonl(*records) -> bytes:
    return b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in records)


def deep(levels: int) -> bytes:
    return b'{"a":' * levels + b"1" + b"}" * levels


def tool_input_nested(levels: int) -> bytes:
    block = b'{"type": "tool_use", "id": "t1", "name": "x", "input": ' + deep(levels) + b"}"
    return (
        b'{"type": "assistant", "uuid": "a1", "sessionId": "s1", "message": {"id": "m1", "content": [' + block + b"]}}"
    )


@pytest.fixture
def import_dir(settings, tmp_path):
    settings.THREADMEM_IMPORT_DIR = tmp_path / "imports"
    settings.THREADMEM_IMPORT_DIR.mkdir()
    return settings.THREADMEM_IMPORT_DIR


def upload(client, body: bytes, **fields: str):
    data = {"file": SimpleUploadedFile("session.jsonl", body), **fields}
    return client.post("/api/v1/imports/", data, format="multipart")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "fields", "status", "words"),
    [
        pytest.param(jsonl(USER, deep(100_000)), {}, 400, "line 2 of the upload nests too deeply", id="deep-line"),
        pytest.param(
            jsonl(tool_input_nested(3_000)), {}, 400, "line 1 of the upload nests too deeply", id="deep-input"
        ),
        pytest.param(jsonl(USER), {"channel": "a\x00b"}, 400, "channel contains a NUL", id="nul-channel"),
        pytest.param(jsonl(USER), {"channel": "c" * 256}, 400, "channel is longer than 255", id="long-channel"),
    ],
)
def test_a_bad_upload_answers_4xx_naming_it_and_leaves_nothing_behind(
    owner_api, import_dir, body, fields, status, words
):
    before = row_counts()
    response = upload(owner_api, body, **fields)
    assert response.status_code == status, response.content
    assert words in response.json()["detail"]
    assert row_counts() == before and not Import.objects.exists()
    assert list(import_dir.iterdir()) == []


@pytest.mark.django_db
def test_an_upload_over_the_cap_answers_413_and_leaves_nothing_behind(owner_api, import_dir, settings):
    settings.THREADMEM_IMPORT_MAX_BYTES = 1000
    body = jsonl(*[USER] * 20)
    huge = jsonl(*[USER] * 1000)  # past the multipart envelope's room: refused by its declared length
    assert 1000 < len(body) < 64 * 1024 < len(huge)
    before = row_counts()
    for response in (
        upload(owner_api, body),
        upload(owner_api, huge),
        owner_api.post(
            "/api/v1/imports/",
            body,
            content_type="application/octet-stream",
            HTTP_CONTENT_DISPOSITION="attachment; filename=s.jsonl",
        ),
    ):
        assert response.status_code == 413, response.content
        assert "THREADMEM_IMPORT_MAX_BYTES" in response.json()["detail"]
    assert row_counts() == before and not Import.objects.exists()
    assert list(import_dir.iterdir()) == []
    settings.THREADMEM_IMPORT_MAX_BYTES = len(body)
    assert upload(owner_api, body).status_code == 201


@pytest.mark.django_db
def test_the_import_command_reports_a_deep_line_and_imports_the_rest(owner, tmp_path):
    session = tmp_path / "s1.jsonl"
    session.write_bytes(jsonl(USER, deep(100_000), tool_input_nested(3_000)))
    stderr = io.StringIO()
    with pytest.raises(CommandError, match="skipped 2 bad line"):
        call_command("import_sessions", "--format", "claude-code", "--owner", "owner", str(session), stderr=stderr)
    assert "s1.jsonl:2: not JSON this service reads: it nests too deeply" in stderr.getvalue()
    assert "s1.jsonl:3:" in stderr.getvalue()
    assert Message.objects.filter(thread__owner=owner).count() == 1


@pytest.mark.django_db
def test_the_import_command_refuses_a_channel_holding_nul(owner, tmp_path):
    session = tmp_path / "s1.jsonl"
    session.write_bytes(jsonl(USER))
    before = row_counts()
    with pytest.raises(CommandError, match="channel contains a NUL"):
        call_command(
            "import_sessions", "--format", "claude-code", "--owner", "owner", "--channel", "a\x00b", str(session)
        )
    assert row_counts() == before
