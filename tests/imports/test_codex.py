"""Codex CLI rollouts (``import_sessions --format codex``, detection, capture, --follow): contract §11, Codex."""

from __future__ import annotations

import json
import shutil
import threading
from collections import Counter
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.support.capture import growth, run_capture, thread_rows
from tests.support.factories import row_counts
from threadmem.features.imports.follow import follow_paths
from threadmem.features.imports.report import ImportReport
from threadmem.models import Generation, Message, Thread

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "codex"
REAL = FIXTURES / "agent-sessions-small.jsonl"
LEDGER_ID = "5f0c1e2a-7d41-4c3e-9b8a-0c0dec0dec01"
LEDGER = FIXTURES / f"rollout-2026-01-02T10-00-00-{LEDGER_ID}.jsonl"


def run(*args: str) -> str:
    from io import StringIO

    out = StringIO()
    call_command("import_sessions", "--owner", "owner", *args, stdout=out)
    return out.getvalue()


def raw(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def by_line(thread: Thread) -> dict[int, Message]:
    return {int(m.source_id.split(":")[0][1:]): m for m in Message.objects.filter(thread=thread)}


def test_a_real_rollout_imports_every_record_type_as_its_raw_jsonl_says(owner):
    records = raw(REAL)
    run("--format", "codex", str(REAL))
    meta = records[0]["payload"]
    thread = Thread.objects.get(channel=f"codex:{meta['id']}")
    assert (thread.source_format, thread.source_cwd, thread.source_session_id) == ("codex", "/tmp/repo", meta["id"])
    messages = by_line(thread)
    items = {n: r["payload"] for n, r in enumerate(records, 1) if r["type"] == "response_item"}
    kinds = Counter(p["type"] for p in items.values())
    for n, item in items.items():
        kind = item["type"]
        if kind in ("ghost_snapshot", "image_generation_call"):
            assert n not in messages
            continue
        message = messages[n]
        if kind in ("function_call", "custom_tool_call", "web_search_call", "tool_search_call"):
            (call,) = message.tool_calls
            assert message.role == "assistant" and call["id"] == item.get("call_id", item.get("id"))
        elif kind.endswith("_output"):
            assert message.role == "tool" and message.tool_call_id == item["call_id"]
        elif kind == "reasoning":
            assert not message.model_visible and f"encrypted_content: {item['encrypted_content']}" in message.content
        elif kind == "message":
            expected = {"user": ("user", "message"), "assistant": ("assistant", "message")}
            assert (message.role, message.kind) == expected.get(item["role"], ("system", "machine_event"))
        elif kind == "agent_message":
            assert message.kind == "machine_event"
    assert kinds["custom_tool_call"] and kinds["reasoning"] and kinds["tool_search_output"]
    custom = next(m for m in messages.values() if m.tool_calls and m.tool_calls[0]["id"] == "call-1")
    assert custom.tool_calls[0] == {"id": "call-1", "name": "shell", "arguments": {"command": ["ls"]}}
    assert Message.objects.get(thread=thread, tool_call_id="call-1").content == "a.txt\nb.txt\n"
    assert Message.objects.get(thread=thread, tool_call_id="call-2").content == "a.txt\n"
    errors = [n for n, r in enumerate(records, 1) if r["type"] == "event_msg" and r["payload"]["type"] == "error"]
    assert messages[errors[0]].kind == "machine_event"
    compactions = sum(1 for r in records if r["type"] == "compacted")
    assert Generation.objects.filter(thread=thread, state="closed").count() == compactions == 6
    assert Message.objects.filter(thread=thread, kind="summary", summary_origin="codex").count() == 6


def test_a_codex_compaction_closes_a_generation_that_codexs_summary_opens(owner):
    run(str(LEDGER))  # no --format: read from the first record
    thread = Thread.objects.get(channel=f"codex:{LEDGER_ID}")
    first, second = Generation.objects.filter(thread=thread).order_by("number")
    assert first.state == "closed" and second.state == "open"
    summary = first.summary_message
    assert summary.generation == 2 and summary.summary_origin == "codex" and "row 4412" in summary.content
    before = Message.objects.filter(thread=thread, generation=1).order_by("seq")
    assert [m.kind for m in before[:3]] == [
        "machine_event"
    ] * 3  # developer, <user_instructions>, <environment_context>
    assert before.filter(tool_calls__0__name="local_shell").get().tool_calls[0]["arguments"]["command"][-1] == (
        "head -1 ledger-7731.csv"
    )
    assert before.get(tool_call_id="call_ls_01").content == "date;amount;memo"
    assert "*** Begin Patch" in before.get(tool_calls__0__name="apply_patch").tool_calls[0]["arguments"]["input"]
    reasoning = before.get(model_visible=False)
    assert reasoning.content.endswith("encrypted_content: gAAAAABoQ2xpZW50LXNpZGUtYmxvYi1rZXB0LWFzLWlz")
    after = Message.objects.filter(thread=thread, generation=2).exclude(kind="summary").order_by("seq")
    assert [m.role for m in after] == ["user", "assistant", "tool", "assistant"]
    assert after.get(role="tool").content == "(no output)"
    assert thread.title == "Why does the import of ledger-7731.csv fail?"


@pytest.mark.parametrize("path", [LEDGER, REAL], ids=["written", "real"])
def test_importing_a_rollout_again_adds_nothing(owner, path):
    run(str(path))
    before = row_counts()
    out = run("--format", "codex", str(path))
    assert row_counts() == before and " 0 new messages" in out


def test_claude_code_and_codex_files_in_one_folder_each_import_in_their_format(owner, tmp_path):
    from tests.support.sessions import data_dir

    shutil.copy(LEDGER, tmp_path / LEDGER.name)
    shutil.copy(data_dir() / "short.jsonl", tmp_path / "short.jsonl")
    run(str(tmp_path))
    assert Thread.objects.get(channel=f"codex:{LEDGER_ID}").source_format == "codex"
    assert Thread.objects.get(source_path=str(tmp_path / "short.jsonl")).source_format == "claude-code"


def test_capturing_a_rollout_growing_mid_record_imports_what_one_whole_import_does(owner, tmp_path, monkeypatch):
    folder = tmp_path / "2026" / "01" / "02"
    folder.mkdir(parents=True)
    live = folder / LEDGER.name
    live.write_bytes(b"")
    for piece in growth(LEDGER.read_bytes(), parts=12):
        with live.open("ab") as handle:
            handle.write(piece)
        out, err = run_capture(monkeypatch, "", "--owner", "owner", "--path", str(live))
        assert out == "" and err == ""
    run("--channel", "whole", str(LEDGER))
    captured = Thread.objects.get(channel=f"codex:{LEDGER_ID}")
    assert thread_rows(captured) == thread_rows(Thread.objects.get(channel="whole"))


def test_follow_imports_a_codex_folder_as_its_rollouts_grow(owner, tmp_path):
    pieces = list(growth(LEDGER.read_bytes(), parts=6))
    live = tmp_path / LEDGER.name
    live.write_bytes(b"")
    stop = threading.Event()

    def grow(report: ImportReport) -> None:
        if not pieces:
            stop.set()
            return
        with live.open("ab") as handle:
            handle.write(pieces.pop(0))

    follow_paths(paths=[tmp_path], fmt=None, owner=owner, report=ImportReport(), stop=stop, poll_seconds=0.01,
                 on_pass=grow)  # fmt: skip
    run("--channel", "whole", str(LEDGER))
    followed = Thread.objects.get(channel=f"codex:{LEDGER_ID}")
    assert thread_rows(followed) == thread_rows(Thread.objects.get(channel="whole"))
