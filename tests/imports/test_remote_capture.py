"""Remote capture: ``POST /api/v1/imports/`` with ``offset``, and the hook script that sends only new bytes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.core.management import call_command
from rest_framework.authtoken.models import Token

from tests.support.capture import growth, hook_json, imported_whole, thread_rows
from tests.support.factories import make_thread, row_counts
from tests.support.sessions import LONG, data_dir
from threadmem.models import Message, Thread

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "plugin" / "scripts" / "threadmem-capture-hook"
CLIENT_DIR = "/home/marco/.claude/projects/-home-marco-projects-spotter"


@pytest.fixture(autouse=True)
def import_dir(settings, tmp_path):
    settings.THREADMEM_IMPORT_DIR = tmp_path / "imports"


def send(client, name: str, offset: int, body: bytes):
    query = urlencode({"offset": offset, "name": name})
    return client.post(
        f"/api/v1/imports/?{query}",
        body,
        content_type="application/octet-stream",
        HTTP_CONTENT_DISPOSITION=f'attachment; filename="{Path(name).name}"',
    )


@pytest.mark.django_db
def test_remote_captures_of_a_growing_session_import_what_one_whole_import_does(owner_api, tmp_path):
    source = data_dir() / f"{LONG}.jsonl"
    name = f"{CLIENT_DIR}/{LONG}.jsonl"
    offset = 0
    for piece in growth(source.read_bytes(), parts=25):
        response = send(owner_api, name, offset, piece)
        assert response.status_code == 200, response.content
        offset = response.json()["offset"]
    assert offset == source.stat().st_size
    for agent in sorted((data_dir() / LONG / "subagents").iterdir()):
        response = send(owner_api, f"{CLIENT_DIR}/{LONG}/subagents/{agent.name}", 0, agent.read_bytes())
        assert response.status_code == 200, response.content

    imported_whole(tmp_path / "whole", source, sessions=data_dir() / LONG)
    captured = Thread.objects.get(channel=f"claude-code:{LONG}")
    assert captured.source_path == name
    assert thread_rows(captured) == thread_rows(Thread.objects.get(channel="whole"))
    for agent in ("agent-a881341", "agent-acompact-fffbd0"):
        fork = Thread.objects.get(channel=f"claude-code:{LONG}:{agent}")
        assert fork.parent == captured and thread_rows(fork) == thread_rows(
            Thread.objects.get(channel=f"whole:{agent}")
        )


@pytest.mark.django_db
def test_bytes_that_do_not_start_where_the_servers_copy_ends_answer_409_with_its_offset(owner_api):
    raw = (data_dir() / "short.jsonl").read_bytes()
    name = f"{CLIENT_DIR}/short.jsonl"
    first = send(owner_api, name, 0, raw[:4000]).json()["offset"]
    before = row_counts()
    stale = send(owner_api, name, 1000, raw[1000:])
    assert stale.status_code == 409 and stale.json()["offset"] == first == 4000
    ahead = send(owner_api, name, 9000, raw[9000:])
    assert ahead.status_code == 409 and ahead.json()["offset"] == 4000
    assert row_counts() == before
    done = send(owner_api, name, first, raw[first:])
    assert done.status_code == 200 and done.json()["offset"] == len(raw)
    assert Message.objects.filter(thread__source_path=name).count() == 8
    again = send(owner_api, name, 0, raw)  # the whole file again: nothing twice
    assert again.status_code == 200 and again.json()["messages_imported"] == 0
    assert Message.objects.filter(thread__source_path=name).count() == 8


@pytest.mark.django_db
def test_a_remote_capture_for_one_owner_never_lands_in_anothers_thread(owner, other, other_api):
    raw = (data_dir() / "short.jsonl").read_bytes()
    session = json.loads(raw.splitlines()[1])["sessionId"]
    mine = make_thread(owner, f"claude-code:{session}")
    response = send(other_api, f"{CLIENT_DIR}/short.jsonl", 0, raw)
    # Channels are per owner: the other's capture is a thread of their own, and nothing says the name was held.
    assert response.status_code == 200, response.json()
    assert not mine.messages.exists()
    assert Thread.objects.get(owner=other, channel=f"claude-code:{session}").messages.exists()


@pytest.mark.django_db
def test_a_refused_remote_capture_keeps_none_of_its_bytes(owner_api, settings):
    before = row_counts()
    # A threadmem export is restored whole, never captured: refused after its bytes reached the server's copy.
    export = b'{"format": "threadmem", "version": 1, "type": "thread", "thread": {"channel": "x"}}\n'
    response = send(owner_api, f"{CLIENT_DIR}/short.jsonl", 0, export)
    assert response.status_code == 400 and "restored whole" in response.json()["detail"], response.json()
    assert row_counts() == before
    captures = settings.THREADMEM_IMPORT_DIR / "captures"
    assert not [p for p in captures.rglob("*") if p.is_file()] if captures.exists() else True


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["/a/../../etc/passwd", "/a/b/session.txt", "/a/b/c d.jsonl", "/a/b/../.jsonl"])
def test_a_capture_names_a_session_file(owner_api, name):
    response = send(owner_api, name, 0, b"{}\n")
    assert response.status_code == 400 and response.json()["field"] == "name"


@pytest.mark.django_db
@pytest.mark.parametrize("offset", ["-1", "x", "1e3"])
def test_an_offset_is_a_whole_number_of_bytes(owner_api, offset):
    response = owner_api.post(
        f"/api/v1/imports/?offset={offset}&name=/a/s.jsonl",
        b"{}\n",
        content_type="application/octet-stream",
        HTTP_CONTENT_DISPOSITION='attachment; filename="s.jsonl"',
    )
    assert response.status_code == 400 and response.json()["field"] == "offset"


def run_hook(stdin: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(HOOK)],
        input=stdin,
        capture_output=True,
        text=True,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("THREADMEM_")}, **env},
        timeout=60,
    )


@pytest.mark.django_db(transaction=True)
def test_the_hook_script_sends_only_new_bytes_and_recovers_from_a_lost_state(live_server, owner, tmp_path):
    token = Token.objects.create(user=owner).key
    lines = (data_dir() / "tool_heavy.jsonl").read_bytes().splitlines(keepends=True)
    session = json.loads(lines[1])["sessionId"]
    live = tmp_path / f"{session}.jsonl"
    state = tmp_path / "state.json"
    env = {"THREADMEM_URL": live_server.url, "THREADMEM_TOKEN": token, "THREADMEM_CAPTURE_STATE": str(state)}
    stop = hook_json("Stop", transcript=live, session_id=session)
    live.write_bytes(b"".join(lines[:10]) + lines[10][:30])  # a half-written record
    done = run_hook(stop, **env)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert json.loads(state.read_text())[str(live)]["offset"] == live.stat().st_size
    stale = state.read_text()
    live.write_bytes(b"".join(lines[:-3]))
    assert run_hook(stop, **env).stderr == ""
    state.write_text(stale)  # an older state: the server's 409 says where its copy ends, and the hook goes on there
    live.write_bytes(b"".join(lines))
    assert run_hook(stop, **env).stderr == ""
    assert json.loads(state.read_text())[str(live)]["offset"] == live.stat().st_size
    call_command("import_sessions", "--format", "claude-code", "--owner", "owner", "--channel", "whole", str(live))
    captured = Thread.objects.get(channel=f"claude-code:{session}")
    assert thread_rows(captured) == thread_rows(Thread.objects.get(channel="whole"))


def test_a_hook_that_cannot_reach_the_server_exits_0_with_one_line(tmp_path):
    live = tmp_path / "s.jsonl"
    shutil.copy(data_dir() / "short.jsonl", live)
    env = {
        "THREADMEM_URL": "http://127.0.0.1:9",
        "THREADMEM_TOKEN": "t",
        "THREADMEM_CAPTURE_STATE": str(tmp_path / "s"),
    }
    done = run_hook(hook_json("Stop", transcript=live, session_id="s"), **env)
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("threadmem capture: cannot reach http://127.0.0.1:9")
    unset = run_hook(hook_json("PreCompact", transcript=live, session_id="s"))
    assert unset.returncode == 0 and unset.stderr == "threadmem capture: set THREADMEM_URL and THREADMEM_TOKEN\n"
    start = run_hook(hook_json("SessionStart", transcript=live, session_id="s"), **env)
    assert start.returncode == 0 and start.stdout == "" and start.stderr.startswith("threadmem capture: cannot reach")
    other_event = run_hook(hook_json("UserPromptSubmit", transcript=live, session_id="s"), **env)
    assert other_event.returncode == 0 and other_event.stderr == "" and other_event.stdout == ""
