"""An import's problems and notes are stored redacted: a note quotes what the file named, and the upload's answer,
the import's record and the API's import detail read what was stored."""

from __future__ import annotations

import pytest

from tests.support.redaction import upload_export
from tests.support.secrets import CLASSIC_REDACTED, CLASSIC_TOKEN
from threadmem.models import Import, Thread

pytestmark = pytest.mark.django_db


def test_a_restored_forks_note_naming_a_parent_channel_with_a_token_keeps_no_token(owner_api):
    header = {"channel": "ops:fork", "parent": {"channel": f"ops:{CLASSIC_TOKEN}", "fork_message_seq": 1}}
    lines = [
        {"format": "threadmem", "version": 1, "type": "thread", "thread": header},
        {"type": "generation", "number": 1, "state": "open", "summary_seq": None},
        {"type": "message", "seq": 1, "generation": 1, "role": "user", "content": "forked work"},
        {"type": "end", "generations": 1, "messages": 1},
    ]

    answer = upload_export(owner_api, lines)

    (note,) = answer["errors"]
    assert "restored as a plain thread" in note and f"ops:{CLASSIC_REDACTED}" in note
    assert Thread.objects.filter(channel="ops:fork", parent=None).exists()
    (record,) = Import.objects.all()
    assert record.errors == [note]
    detail = owner_api.get(f"/api/v1/imports/{record.pk}/")
    assert detail.status_code == 200 and detail.json()["errors"] == [note]
    assert CLASSIC_TOKEN not in str(answer) + detail.content.decode()
