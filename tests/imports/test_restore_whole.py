"""A threadmem export is restored whole or refused whole: a line that cannot be restored as exported refuses the
file (nothing stored, the import failed, every bad line listed), through the API and the command; numbers past a
column's range and text no database holds are such lines, never a 500."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from tests.support.factories import row_counts
from threadmem.models import Import, Thread

pytestmark = pytest.mark.django_db

CHANNEL = "ops:restored"


def header(**thread) -> dict:
    return {"format": "threadmem", "version": 1, "type": "thread", "thread": {"channel": CHANNEL, **thread}}


def message(seq: int, content: str = "text", **fields) -> dict:
    return {"type": "message", "seq": seq, "generation": 1, "role": "user", "content": content, **fields}


def export(*messages: dict, generation: dict | None = None, **thread) -> list[dict]:
    generation = generation or {"type": "generation", "number": 1, "state": "open", "summary_seq": None}
    return [header(**thread), generation, *messages, {"type": "end", "generations": 1, "messages": len(messages)}]


def body(lines: list[dict]) -> bytes:
    # ensure_ascii keeps a lone surrogate as its escape, as a client's JSON carries it.
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def post(client, lines: list[dict]):
    data = {"file": SimpleUploadedFile("backup.jsonl", body(lines), content_type="application/x-ndjson")}
    return client.post("/api/v1/imports/", data, format="multipart")


def good(seq: int) -> dict:
    return message(seq, f"message {seq}", source_id=f"s{seq}")


# Each a bad line at a seq (the file holds two: every one is listed).
BAD_LINES = {
    "a repeated seq": (lambda seq: message(2, "again"), "seq 2 does not follow seq"),
    "a repeated source_id": (lambda seq: message(seq, "copy", source_id="s2"), "repeats an earlier message's"),
    "an unknown role": (lambda seq: message(seq, role="wizard"), "role"),
    "a seq that is not a number": (lambda seq: message(str(seq)), "needs a seq from 1"),
    "a created_at that is no time": (
        lambda seq: message(seq, created_at="2026-13-45T00:00:00Z"),
        "must be an ISO 8601 time",
    ),
    "tool_calls that are not a list": (lambda seq: message(seq, role="assistant", tool_calls="ls"), "tool_calls"),
    "a NUL in the content": (lambda seq: message(seq, "a\x00b"), "NUL"),
    "a lone surrogate in the content": (lambda seq: message(seq, "a\ud800b"), "lone surrogate"),
    "a NUL in a tool call's arguments": (
        lambda seq: message(
            seq, role="assistant", tool_calls=[{"id": "c", "name": "sh", "arguments": {"cmd": "\x00"}}]
        ),
        "NUL",
    ),
}


@pytest.mark.parametrize("bad", list(BAD_LINES.values()), ids=list(BAD_LINES))
def test_an_export_with_a_bad_line_is_refused_whole_and_says_which_line(owner_api, bad):
    line, reason = bad
    before = row_counts()
    # Two bad lines (the fifth and the seventh of the file), each listed.
    response = post(owner_api, export(good(1), good(2), line(3), good(4), line(5)))
    assert response.status_code == 400, response.json()
    detail = response.json()["detail"]
    assert "nothing restored" in detail and "whole or not at all" in detail and "line 7: " in detail
    assert row_counts() == before
    assert not Thread.objects.filter(channel=CHANNEL).exists()
    record = owner_api.get(f"/api/v1/imports/{Import.objects.latest('pk').pk}/").json()
    assert (record["status"], record["messages_imported"], record["lines_skipped"]) == ("failed", 0, 2)
    assert [e.split(": ", 1)[0] for e in record["errors"]] == ["upload:backup.jsonl:5", "upload:backup.jsonl:7"]
    assert reason in record["errors"][0] and "nothing restored" in record["error"]
    # The same file without its bad lines restores every message.
    restored = post(owner_api, export(good(1), good(2), good(4)))
    assert (restored.status_code, restored.json()["status"], restored.json()["messages_imported"]) == (
        201,
        "succeeded",
        3,
    )


def test_a_refused_export_imported_in_a_task_reads_failed_with_its_bad_lines(
    owner_api, settings, django_capture_on_commit_callbacks
):
    settings.IMPORT_INLINE_MAX_BYTES = 100
    before = row_counts()
    with django_capture_on_commit_callbacks(execute=True):
        response = post(owner_api, export(good(1), message(1, "again"), good(3)))
    assert response.status_code == 202, response.content
    record = owner_api.get(f"/api/v1/imports/{response.json()['id']}/").json()
    assert (record["status"], record["messages_imported"]) == ("failed", 0)
    assert "nothing restored" in record["error"] and "line 4: seq 1 does not follow seq 1" in record["error"]
    assert record["errors"] == ["upload:backup.jsonl:4: seq 1 does not follow seq 1"]
    assert row_counts() == before


def test_the_command_refuses_an_export_with_an_oversized_line_and_restores_the_others(owner, tmp_path: Path, capsys):
    folder = tmp_path / "backup"
    folder.mkdir()
    # Past THREADMEM_MAX_MESSAGE_BYTES (2 MiB): the probe's 50 MB line, smaller.
    (folder / "big.jsonl").write_bytes(body(export(good(1), message(2, "x" * (3 * 1024 * 1024)), good(3))))
    (folder / "fine.jsonl").write_bytes(body(export(good(1), channel="ops:fine")))
    with pytest.raises(CommandError, match=r"refused 1 export\(s\) whole: nothing of them was restored"):
        call_command("import_sessions", "--owner", "owner", str(folder))
    err = capsys.readouterr().err
    assert "refused " in err and "big.jsonl: 1 line(s) of the export cannot be restored" in err and "line 4: " in err
    assert not Thread.objects.filter(channel=CHANNEL).exists()
    assert Thread.objects.get(channel="ops:fine").messages.count() == 1


# --- what a database cannot take: refused as the line's fault (PostgreSQL answered 500) ----------------------

HOSTILE = {
    "a generation past 2^31": (export(message(1, generation=2**31)), "generation from 1 to 2147483647"),
    "a generation line past 2^31": (
        export(message(1), generation={"type": "generation", "number": 2**31, "state": "open"}),
        "new number from 1 to 2147483647",
    ),
    "a seq at 2^63-1": (export(message(2**63 - 1)), "needs a seq from 1 to 9223372036854775806"),
    "a seq past 64 bits": (export(message(2**64)), "outside 64 bits"),
    "a superseded_by_seq past 64 bits": (export(message(1, superseded_by_seq=2**63)), "superseded_by_seq"),
    "a summary_seq past 2^63": (
        export(message(1), generation={"type": "generation", "number": 1, "state": "open", "summary_seq": 2**63}),
        "summary_seq",
    ),
    "a NUL in source_path": (export(message(1), source_path="/a\x00b"), "NUL"),
    "a NUL in source_cwd": (export(message(1), source_cwd="\x00"), "NUL"),
    "a NUL in source_session_id": (export(message(1), source_session_id="s\x00"), "NUL"),
    "a lone surrogate in source_path": (export(message(1), source_path="\udc00"), "lone surrogate"),
    "a NUL in the title": (export(message(1), title="t\x00"), "NUL"),
    "a NUL in the channel": (export(message(1), channel="ops:\x00"), "NUL"),
    "a NUL in the parent's channel": (export(message(1), parent={"channel": "\x00", "fork_message_seq": 1}), "NUL"),
    "a created_at past year 9999": (export(message(1), created_at="9999-12-31T23:59:59-14:00"), "ISO 8601"),
    "a NUL in a source_id": (export(message(1, source_id="\x00")), "NUL"),
    "a NUL in a summary's refs": (
        export(message(1, "messageId=7", kind="summary", refs=[{"id": 7, "channel": "\x00", "seq": 1}])),
        "NUL",
    ),
    "a NUL in a key": (export(message(1, **{"k\x00": 1})), "key"),
}


@pytest.mark.parametrize("case", list(HOSTILE.values()), ids=list(HOSTILE))
def test_numbers_past_a_column_and_text_no_database_holds_answer_400_and_store_nothing(owner_api, case):
    lines, reason = case
    before = row_counts()
    response = post(owner_api, lines)
    assert response.status_code == 400, response.content
    assert reason in response.json()["detail"] and "nothing restored" in response.json()["detail"]
    assert row_counts() == before


def test_a_restore_over_an_existing_channel_with_a_nul_source_id_is_refused(owner_api, owner):
    assert post(owner_api, export(good(1))).status_code == 201
    response = post(owner_api, export(message(1, source_id="s\x00")))
    assert response.status_code == 400 and "NUL" in response.json()["detail"]
