"""``manage.py capture``: Claude Code's hooks bring in what a session gained, nothing twice (contract §11, Capture)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from cli.management.commands.capture import _log
from tests.support.capture import growth, hook_json, imported_whole, run_capture, thread_rows
from tests.support.factories import make_thread, row_counts
from tests.support.sessions import LONG, data_dir, raw_records
from threadmem.features.imports.catalogue import SESSION_CATALOGUE_MAX_CHARS
from threadmem.models import CaptureCursor, Generation, Message, Thread

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def session_id_of(path: Path) -> str:
    return next(r["sessionId"] for r in raw_records(path) if r.get("sessionId"))


def test_captures_of_a_session_growing_mid_record_import_what_one_whole_import_does(owner, tmp_path, monkeypatch):
    source = data_dir() / f"{LONG}.jsonl"
    project = tmp_path / "project"
    live = project / f"{LONG}.jsonl"
    project.mkdir()
    live.write_bytes(b"")
    stop = hook_json("Stop", transcript=live, session_id=LONG)
    pieces = list(growth(source.read_bytes(), parts=40))
    assert sum(1 for p in pieces if not p.endswith(b"\n")) > 30  # most captures see a half-written record
    for piece in pieces:
        with live.open("ab") as handle:
            handle.write(piece)
        out, err = run_capture(monkeypatch, stop, "--owner", "owner")
        assert out == "" and err == ""
    # The subagents finish: their files appear beside the session, and SubagentStop brings them in.
    shutil.copytree(data_dir() / LONG, project / LONG)
    run_capture(monkeypatch, hook_json("SubagentStop", transcript=live, session_id=LONG), "--owner", "owner")

    imported_whole(tmp_path / "whole", source, sessions=data_dir() / LONG)
    captured = Thread.objects.get(channel=f"claude-code:{LONG}")
    assert thread_rows(captured) == thread_rows(Thread.objects.get(channel="whole"))
    assert Generation.objects.filter(thread=captured, state="closed").count() == 1
    for agent in ("agent-a881341", "agent-acompact-fffbd0"):
        fork = Thread.objects.get(channel=f"claude-code:{LONG}:{agent}")
        assert fork.parent == captured and fork.fork_message is not None
        assert thread_rows(fork) == thread_rows(Thread.objects.get(channel=f"whole:{agent}"))
    cursor = CaptureCursor.objects.get(path=str(live))
    assert cursor.offset <= live.stat().st_size and cursor.last_source_id

    before = row_counts()
    run_capture(monkeypatch, stop, "--owner", "owner")
    assert row_counts() == before


@pytest.mark.parametrize("event", ["Stop", "SubagentStop", "PreCompact", "SessionEnd"])
def test_each_capturing_hook_event_imports_the_new_records(owner, tmp_path, monkeypatch, event):
    lines = (data_dir() / "short.jsonl").read_bytes().splitlines(keepends=True)
    session = session_id_of(data_dir() / "short.jsonl")
    live = tmp_path / f"{session}.jsonl"
    live.write_bytes(b"".join(lines[: len(lines) // 2]))
    run_capture(monkeypatch, hook_json(event, transcript=live, session_id=session), "--owner", "owner")
    first = Message.objects.filter(thread__channel=f"claude-code:{session}").count()
    assert first > 0
    live.write_bytes(b"".join(lines))
    out, err = run_capture(monkeypatch, hook_json(event, transcript=live, session_id=session), "--owner", "owner")
    assert out == "" and err == ""
    assert Message.objects.filter(thread__channel=f"claude-code:{session}").count() == 8 > first


def test_an_event_that_does_not_capture_does_nothing_and_says_so_in_one_line(owner, tmp_path, monkeypatch):
    live = tmp_path / "s.jsonl"
    shutil.copy(data_dir() / "short.jsonl", live)
    before = row_counts()
    out, err = run_capture(
        monkeypatch, hook_json("UserPromptSubmit", transcript=live, session_id="s"), "--owner", "owner"
    )
    assert out == "" and err.count("\n") == 1 and "UserPromptSubmit" in err
    assert row_counts() == before


def test_a_rewritten_or_shrunk_file_is_imported_whole_again_adding_only_what_is_new(owner, tmp_path, monkeypatch):
    short, other = data_dir() / "short.jsonl", data_dir() / "tool_heavy.jsonl"
    live = tmp_path / "live.jsonl"
    live.write_bytes(short.read_bytes())
    stop = hook_json("Stop", transcript=live, session_id="live")
    run_capture(monkeypatch, stop, "--owner", "owner")
    lines = short.read_bytes().splitlines(keepends=True)
    live.write_bytes(b"".join(lines[:5]))  # shrunk
    before = row_counts()
    run_capture(monkeypatch, stop, "--owner", "owner")
    assert row_counts() == before and CaptureCursor.objects.get().offset <= live.stat().st_size
    live.write_bytes(other.read_bytes())  # rewritten: other bytes before the cursor
    run_capture(monkeypatch, stop, "--owner", "owner")
    call_command("import_sessions", "--format", "claude-code", "--owner", "owner", "--channel", "whole", str(other))
    rewritten = Thread.objects.get(channel=f"claude-code:{session_id_of(other)}")
    assert thread_rows(rewritten) == thread_rows(Thread.objects.get(channel="whole"))
    assert Message.objects.filter(thread__channel=f"claude-code:{session_id_of(short)}").count() == 8


def test_a_capture_for_one_owner_never_lands_in_anothers_thread(owner, other, tmp_path, monkeypatch):
    session = session_id_of(data_dir() / "short.jsonl")
    make_thread(owner, f"claude-code:{session}")
    live = tmp_path / f"{session}.jsonl"
    shutil.copy(data_dir() / "short.jsonl", live)
    before = Message.objects.filter(thread__owner=owner).count()
    out, err = run_capture(monkeypatch, hook_json("Stop", transcript=live, session_id=session), "--owner", "other")
    # Channels are per owner: the other owner's capture is a thread of their own.
    assert out == "" and err == ""
    assert Message.objects.filter(thread__owner=owner).count() == before
    assert Thread.objects.get(owner=other, channel=f"claude-code:{session}").messages.exists()


def test_the_token_in_threadmem_token_names_the_owner(owner, tmp_path, monkeypatch):
    from rest_framework.authtoken.models import Token

    live = tmp_path / "s.jsonl"
    shutil.copy(data_dir() / "short.jsonl", live)
    monkeypatch.setenv("THREADMEM_TOKEN", Token.objects.create(user=owner).key)
    run_capture(monkeypatch, hook_json("Stop", transcript=live, session_id="s"))
    assert Thread.objects.get(source_path=str(live)).owner == owner
    monkeypatch.setenv("THREADMEM_TOKEN", "not-a-token")
    out, err = run_capture(monkeypatch, hook_json("Stop", transcript=live, session_id="s"))
    assert out == "" and err == "threadmem capture failed: THREADMEM_TOKEN is not a valid token\n"


def test_session_start_points_at_the_projects_earlier_sessions_without_their_content(
    owner, other, tmp_path, monkeypatch
):
    project = tmp_path / "-home-marco-projects-spotter"
    project.mkdir()
    for name in ("short", "tool_heavy"):
        shutil.copy(data_dir() / f"{name}.jsonl", project / f"{name}.jsonl")
    for n in range(40):  # older sessions than fit: the catalogue stays bounded, the newest first
        t = make_thread(owner, f"claude-code:old-{n}", title="x" * 400)
        Thread.objects.filter(pk=t.pk).update(source_cwd="/home/marco/projects/spotter")
    call_command("import_sessions", "--format", "claude-code", "--owner", "owner", str(project))
    make_thread(other, "claude-code:bobs", title="bob's session")
    Thread.objects.filter(channel="claude-code:bobs").update(source_cwd="/home/marco/projects/spotter")
    short = Thread.objects.get(source_path=str(project / "short.jsonl"))
    secret = Message.objects.filter(thread=short, role="assistant").exclude(content="").first().content

    out, err = run_capture(
        monkeypatch,
        hook_json("SessionStart", transcript=project / "new.jsonl", session_id=short.source_session_id),
        "--owner",
        "owner",
    )
    assert err == ""
    context = json.loads(out)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    text = context["additionalContext"]
    assert len(text) <= SESSION_CATALOGUE_MAX_CHARS
    assert "search_memory" in text.splitlines()[-1]
    tool_heavy = Thread.objects.get(source_path=str(project / "tool_heavy.jsonl"))
    assert tool_heavy.channel in text and "messages" in text
    assert short.channel not in text  # the session starting is not an earlier one
    assert "claude-code:bobs" not in text and secret[:40] not in text

    out, _ = run_capture(
        monkeypatch,
        hook_json("SessionStart", transcript="/elsewhere/x.jsonl", session_id="x", cwd="/elsewhere"),
        "--owner",
        "owner",
    )
    assert out == ""  # no earlier session of that project: nothing added to the context


def capture_process(stdin: str, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, "manage.py", "capture", *(["--owner", "owner"])],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environment,
        timeout=120,
    )


def test_a_failing_capture_exits_0_with_one_line_and_the_details_in_the_log():
    # The checkout is writable here, so the log is the checkout's (other runs may share it: read what this one added).
    log = ROOT / "var" / "capture.log"
    start = log.stat().st_size if log.exists() else 0
    unreachable = capture_process(
        hook_json("Stop", transcript=data_dir() / "short.jsonl", session_id="s"),
        DATABASE_URL="postgres://postgres@127.0.0.1:9/nowhere",
    )
    assert unreachable.returncode == 0 and unreachable.stdout == ""
    assert unreachable.stderr.count("\n") == 1 and unreachable.stderr.startswith("threadmem capture failed:")
    assert "Traceback" in log.read_bytes()[start:].decode(errors="replace")
    garbage = capture_process("this is not JSON")
    assert garbage.returncode == 0 and garbage.stderr.count("\n") == 1 and "not the hook's JSON" in garbage.stderr
    bad_option = subprocess.run(
        [sys.executable, "manage.py", "capture", "--no-such-option"],
        input="{}",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert bad_option.returncode == 0  # 2 would block Claude Code


def test_where_the_checkout_is_not_writable_the_log_goes_to_the_users_cache(tmp_path, settings, monkeypatch):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "var").write_text("a file where the folder would be: var/capture.log cannot be created")
    settings.DATA_DIR = checkout  # the checkout, or an installed copy's data directory
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    _log("capture failed", exc=None)
    assert "capture failed" in (tmp_path / "home" / ".cache" / "threadmem" / "capture.log").read_text()
