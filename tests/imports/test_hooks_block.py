"""The ``hooks`` blocks of docs/imports.md are what is tested: their events, their commands run as written."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token

from tests.support.capture import hook_json
from tests.support.sessions import data_dir
from threadmem.features.imports.capture import CAPTURE_EVENTS
from threadmem.models import Thread

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "imports.md"
LOCAL = "THREADMEM_TOKEN=<your token> /path/to/threadmem/.venv/bin/python /path/to/threadmem/manage.py capture"
REMOTE = "THREADMEM_URL=<server> THREADMEM_TOKEN=<your token> /path/to/threadmem-capture-hook"


def hooks_blocks() -> list[dict]:
    blocks = re.findall(r"```json\n(\{\n  \"hooks\".*?)\n```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    return [json.loads(block)["hooks"] for block in blocks]


def commands(hooks: dict) -> dict[str, str]:
    found = {}
    for event, matchers in hooks.items():
        ((only,),) = [m["hooks"] for m in matchers]
        assert only["type"] == "command"
        found[event] = only["command"]
    return found


def codex_hooks_block() -> dict:
    """The Codex CLI block (``~/.codex/config.toml``)."""
    (block,) = re.findall(r"```toml\n(\[\[hooks\.SessionStart\]\].*?)\n```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    return tomllib.loads(block)["hooks"]


def test_the_doc_has_a_local_and_a_remote_block_for_every_event_capture_handles():
    local, remote = (commands(hooks) for hooks in hooks_blocks())
    assert set(local) == set(remote) == {*CAPTURE_EVENTS, "SessionStart"}
    assert set(local.values()) == {LOCAL} and set(remote.values()) == {REMOTE}
    # Startup and resume get the catalogue of earlier sessions; compact the pointer to the compacted part.
    assert all(hooks["SessionStart"][0]["matcher"] == "startup|resume|compact" for hooks in hooks_blocks())


def test_the_codex_block_names_only_events_capture_handles_with_the_local_command():
    hooks = codex_hooks_block()
    assert {"SessionStart", "Stop", "PreCompact"} <= set(hooks) <= {*CAPTURE_EVENTS, "SessionStart"}
    assert hooks["SessionStart"][0]["matcher"] == "startup|resume|compact"
    assert {h["command"] for groups in hooks.values() for group in groups for h in group["hooks"]} == {LOCAL}


@pytest.mark.django_db(transaction=True)
def test_the_remote_blocks_commands_capture_and_point_as_written(live_server, owner, tmp_path):
    token = Token.objects.create(user=owner).key
    script = tmp_path / "threadmem-capture-hook"
    shutil.copy(ROOT / "plugin" / "scripts" / "threadmem-capture-hook", script)
    session = tmp_path / "project" / "short.jsonl"
    session.parent.mkdir()
    shutil.copy(data_dir() / "short.jsonl", session)
    session_id = json.loads(session.read_text().splitlines()[-1])["sessionId"]
    (_, remote) = (commands(hooks) for hooks in hooks_blocks())

    def run(event: str, session_id: str, cwd: str = "/nowhere") -> subprocess.CompletedProcess:
        command = remote[event].replace("<server>", live_server.url).replace("<your token>", token)
        command = command.replace("/path/to/threadmem-capture-hook", str(script))
        return subprocess.run(
            ["bash", "-c", command],
            input=hook_json(event, transcript=session, session_id=session_id, cwd=cwd),
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        )

    for event in CAPTURE_EVENTS:
        done = run(event, session_id)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), event
    thread = Thread.objects.get(channel=f"claude-code:{session_id}", owner=owner)
    start = run("SessionStart", "a-new-session", cwd=thread.source_cwd)
    assert start.returncode == 0 and start.stderr == ""
    context = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    assert thread.channel in context and "search_memory" in context
