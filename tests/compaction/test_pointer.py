"""The pointer after an agent's own compaction (compaction/pointer.py), as the SessionStart(compact) hook prints it:
``manage.py capture`` locally, ``GET /api/v1/imports/catalogue/?source=compact`` and the hook script remotely."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlencode

import pytest
from rest_framework.authtoken.models import Token

from tests.imports.test_remote_capture import run_hook
from tests.support.capture import hook_json, run_capture
from threadmem.features.compaction.pointer import POINTER_MAX_CHARS
from threadmem.models import Thread

SESSION = "5f0c0a52-7d1e-4c0b-9a51-3e2f6d8b9c10"
CHANNEL = f"claude-code:{SESSION}"
CWD = "/home/dev/ledger"
CONTENT = "ROTATION_ID=ev-3b7c91d2"  # what a result held: never in the pointer
SUMMARY = "1. The user asked to fix the ledger export. 3. Files: lib/ledger/export.ex was changed."
CALLS = [
    ("Read", {"file_path": f"{CWD}/lib/ledger/export.ex"}, "defmodule Ledger.Export do"),
    ("Read", {"file_path": f"{CWD}/config/prod.env"}, CONTENT),
    ("Bash", {"command": "grep -rn rotate lib/ledger/keys.ex 2>/dev/null"}, "12: def rotate"),
    (
        "Edit",
        {"file_path": f"{CWD}/lib/ledger/export.ex", "old_string": "see /other/path/x.ex", "new_string": "y"},
        "ok",
    ),
    ("WebFetch", {"url": "https://hexdocs.pm/ecto/Ecto.Query.html", "prompt": "joins"}, "Ecto.Query docs"),
    ("Bash", {"command": "ssh deploy@ledger-04.eu-west.internal systemctl status ledger"}, "active (running)"),
]
CALL_RE = re.compile(r'search_memory\(channel="([^"]+)", query="([^"]+)"\)')


def session_lines(calls=CALLS, *, session_id: str = SESSION, compacted: bool = True) -> list[str]:
    """A Claude Code session: a prompt, one call a message with its result, then (``compacted``) the boundary and
    Claude Code's summary."""

    def record(kind: str, uuid: str, message: dict, **extra) -> str:
        base = {"type": kind, "uuid": uuid, "sessionId": session_id, "cwd": CWD, "message": message}
        return json.dumps({**base, **extra})

    lines = [record("user", "u0", {"role": "user", "content": "Fix the ledger export."})]
    for n, (name, arguments, result) in enumerate(calls):
        call = {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": arguments}
        lines.append(record("assistant", f"a{n}", {"id": f"msg_{n}", "role": "assistant", "content": [call]}))
        block = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": result}
        lines.append(record("user", f"r{n}", {"role": "user", "content": [block]}))
    if compacted:
        boundary = {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "sessionId": session_id}
        lines.append(json.dumps({**boundary, "content": "Conversation compacted"}))
        summary = f"This session is being continued from a previous conversation.\n\nSummary:\n{SUMMARY}"
        lines.append(record("user", "s1", {"role": "user", "content": summary}, isCompactSummary=True))
    return lines


def write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    return path


def pointer_after(monkeypatch, transcript: Path, *, session_id: str = SESSION, error: str = "") -> str:
    """What ``manage.py capture`` prints on SessionStart(compact) (``error``: the one line it writes to stderr)."""
    start = hook_json("SessionStart", transcript=transcript, session_id=session_id, cwd=CWD)
    out, err = run_capture(monkeypatch, start.replace('"source": "startup"', '"source": "compact"'), "--owner", "owner")
    assert err.startswith(error) and bool(err) == bool(error), err
    if not out:
        return ""
    output = json.loads(out)["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    return output["additionalContext"]


def sections(text: str) -> dict[str, str]:
    found, title = {}, None
    for line in text.splitlines()[1:]:
        if line.endswith(":") and not line.startswith("- "):
            title = line
            found[title] = ""
        elif title:
            found[title] += line + "\n"
    return found


@pytest.mark.django_db
def test_it_names_what_the_summary_dropped_first_each_group_with_the_call_that_brings_it_back(
    owner, tmp_path, monkeypatch
):
    transcript = write(tmp_path / "project" / f"{SESSION}.jsonl", session_lines())

    text = pointer_after(monkeypatch, transcript)

    assert len(text) <= POINTER_MAX_CHARS and f'channel "{CHANNEL}"' in text.splitlines()[0]
    parts = sections(text)
    dropped, named = parts["Not in your compaction summary:"], parts["Also touched (your summary names them):"]
    for name in ("config/prod.env", "lib/ledger/keys.ex", "deploy@ledger-04.eu-west.internal"):
        assert f"`{name}`" in dropped  # relative to the session's cwd, or as the call wrote it
    assert "`https://hexdocs.pm/ecto/Ecto.Query.html`" in dropped and "`ssh deploy@ledger-04" in dropped
    assert "`lib/ledger/export.ex`" in named and "export.ex" not in dropped
    # Only what a call named: not a path an edit carried, not the device a command wrote to, not a result's text.
    assert "/other/path" not in text and "`/dev/null`" not in text and CONTENT not in text
    for line in text.splitlines():
        if line.startswith("- "):
            ((channel, query),) = CALL_RE.findall(line)
            assert channel == CHANNEL and f"`{query}`" in line.split(" → ")[0]


@pytest.mark.django_db
def test_before_the_summary_is_written_it_names_what_was_touched_without_judging(owner, tmp_path, monkeypatch):
    # Claude Code 2.1.332 writes its boundary and summary after the hook: the transcript ends where PreCompact left it.
    transcript = write(tmp_path / "project" / f"{SESSION}.jsonl", session_lines(compacted=False))

    text = pointer_after(monkeypatch, transcript)

    assert list(sections(text)) == ["Touched by tool calls before the compaction:"]
    assert "`config/prod.env`" in text and "`lib/ledger/export.ex`" in text


@pytest.mark.django_db
def test_the_compaction_runs_own_transcript_gives_the_summary_it_is_compared_with(owner, tmp_path, monkeypatch):
    # Claude Code 2.1.39 ran its compaction as a forked agent whose file holds the summary before the hook runs.
    transcript = write(tmp_path / "project" / f"{SESSION}.jsonl", session_lines(compacted=False))
    run_capture(
        monkeypatch, hook_json("PreCompact", transcript=transcript, session_id=SESSION, cwd=CWD), "--owner", "owner"
    )
    answer = f"<analysis>I read config/prod.env and lib/ledger/keys.ex.</analysis>\n<summary>{SUMMARY}</summary>"
    run = [
        json.dumps({"type": "user", "uuid": "c0", "sessionId": SESSION, "message": {"role": "user", "content": "Sum"}}),
        json.dumps(
            {
                "type": "assistant",
                "uuid": "c1",
                "sessionId": SESSION,
                "message": {"id": "msg_c", "role": "assistant", "content": [{"type": "text", "text": answer}]},
            }
        ),
    ]
    write(tmp_path / "project" / SESSION / "subagents" / "agent-acompact-1f2e3d.jsonl", run)

    parts = sections(pointer_after(monkeypatch, transcript))

    # Compared with what the model reads of the answer, its <summary>: the analysis before it does not count.
    assert "`config/prod.env`" in parts["Not in your compaction summary:"]
    assert "`lib/ledger/export.ex`" in parts["Also touched (your summary names them):"]


@pytest.mark.django_db
def test_it_stays_within_the_cap_and_no_kind_is_crowded_out(owner, tmp_path, monkeypatch):
    calls = [("Read", {"file_path": f"{CWD}/lib/ledger/module_{n:03d}_with_a_long_name.ex"}, "x") for n in range(150)]
    calls += [("Bash", {"command": f"mix test test/ledger/case_{n}_test.exs"}, "ok") for n in range(20)]
    calls.append(("WebFetch", {"url": "https://hexdocs.pm/ecto/Ecto.html"}, "docs"))
    transcript = write(tmp_path / "project" / f"{SESSION}.jsonl", session_lines(calls))

    text = pointer_after(monkeypatch, transcript)

    assert len(text) <= POINTER_MAX_CHARS
    dropped = sections(text)["Not in your compaction summary:"]
    assert "- files: " in dropped and "- commands: " in dropped and "- URLs: " in dropped
    (left,) = re.findall(r"^(\d+) more touched; search_memory finds each by its name\.$", text, flags=re.MULTILINE)
    # 150 files read, 20 commands and the 20 test files they name, 1 URL: each named or counted.
    assert int(left) + len(re.findall(r"`[^`]+`", dropped)) == 191


@pytest.mark.django_db
def test_an_isolated_thread_and_a_session_threadmem_does_not_hold_get_no_pointer(owner, tmp_path, monkeypatch):
    transcript = write(tmp_path / "project" / f"{SESSION}.jsonl", session_lines())
    assert pointer_after(monkeypatch, transcript)
    Thread.objects.filter(channel=CHANNEL).update(isolated=True)
    assert pointer_after(monkeypatch, transcript) == ""
    # No transcript to capture: one line on stderr, and still no pointer to a session threadmem does not hold.
    nowhere = pointer_after(monkeypatch, tmp_path / "x.jsonl", session_id="never", error="threadmem capture failed")
    assert nowhere == ""


@pytest.fixture
def import_dir(settings, tmp_path):
    settings.THREADMEM_IMPORT_DIR = tmp_path / "imports"


@pytest.mark.django_db(transaction=True)
def test_the_hook_script_sends_what_the_compaction_wrote_then_prints_what_the_local_command_prints(
    live_server, owner, other, import_dir, tmp_path, monkeypatch
):
    client_file = write(tmp_path / "client" / f"{SESSION}.jsonl", session_lines(compacted=False))
    token = Token.objects.get_or_create(user=owner)[0].key
    env = {"THREADMEM_URL": live_server.url, "THREADMEM_TOKEN": token, "THREADMEM_CAPTURE_STATE": str(tmp_path / "s")}
    run_hook(hook_json("PreCompact", transcript=client_file, session_id=SESSION, cwd=CWD), **env)
    write(client_file, session_lines())  # the boundary and summary, written by the time the hook runs
    start = hook_json("SessionStart", transcript=client_file, session_id=SESSION, cwd=CWD)
    start = start.replace('"source": "startup"', '"source": "compact"')

    done = run_hook(start, **env)

    assert done.returncode == 0 and done.stderr == "", done.stderr
    remote = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Not in your compaction summary:" in remote and "`config/prod.env`" in remote
    local = pointer_after(monkeypatch, write(tmp_path / "local" / f"{SESSION}.jsonl", session_lines()))
    assert remote == local  # the same text for the same session
    mine = Thread.objects.get(owner=owner, channel=f"claude-code:{SESSION}")
    held = mine.messages.count()
    others = Token.objects.get_or_create(user=other)[0].key
    theirs = run_hook(start, **{**env, "THREADMEM_TOKEN": others, "THREADMEM_CAPTURE_STATE": str(tmp_path / "o")})
    # Channels are per owner: another owner capturing the same file gets a thread of their own and its pointer.
    assert theirs.returncode == 0 and theirs.stderr == "", theirs.stderr
    assert Thread.objects.get(owner=other, channel=mine.channel).messages.count() == held
    assert mine.messages.count() == held


@pytest.mark.django_db
def test_the_api_answers_the_pointer_for_source_compact_and_only_for_the_callers_session(
    owner_api, other_api, tmp_path, monkeypatch
):
    transcript = write(tmp_path / "project" / f"{SESSION}.jsonl", session_lines())
    local = pointer_after(monkeypatch, transcript)
    params = {"session_id": SESSION, "source": "compact", "cwd": CWD, "transcript_path": str(transcript)}

    assert owner_api.get(f"/api/v1/imports/catalogue/?{urlencode(params)}").json() == {"context": local}
    assert other_api.get(f"/api/v1/imports/catalogue/?{urlencode(params)}").json() == {"context": ""}
    bad = owner_api.get("/api/v1/imports/catalogue/", {"source": "compact", "session_id": "s\x00"})
    assert bad.status_code == 400 and bad.json()["field"] == "session_id"


SCRATCH = "/tmp/claude-1000/-home-dev-ledger/tasks/b7636e2.output"
DEPENDENCY = f"{CWD}/assets/node_modules/phoenix/priv/static/phoenix.js"
WORKED = [
    ("Read", {"file_path": SCRATCH}, "building"),
    ("Read", {"file_path": SCRATCH}, "build finished"),
    ("Read", {"file_path": DEPENDENCY}, "export class Socket"),
    ("Read", {"file_path": f"{CWD}/config/prod.env"}, "x"),
    ("Read", {"file_path": f"{CWD}/lib/ledger/export.ex"}, "defmodule Ledger.Export do"),
    ("Edit", {"file_path": f"{CWD}/lib/ledger/export.ex", "old_string": "a", "new_string": "b"}, "ok"),
    ("Edit", {"file_path": f"{CWD}/lib/ledger/export.ex", "old_string": "b", "new_string": "c"}, "ok"),
]


def files_line(text: str) -> str:
    (line,) = [line for line in text.splitlines() if line.startswith("- files: ")]
    return line.split(" → ")[0]


@pytest.mark.parametrize("compacted", [False, True], ids=["summary unknown", "summary known"])
@pytest.mark.django_db
def test_it_lists_the_edited_project_file_first_and_scratch_and_dependency_sources_last(
    owner, tmp_path, monkeypatch, compacted
):
    # The scratch output read twice, the dependency and a project file once, the edited file three times.
    transcript = write(tmp_path / "project" / f"{SESSION}.jsonl", session_lines(WORKED, compacted=compacted))

    text = pointer_after(monkeypatch, transcript)

    assert len(text) <= POINTER_MAX_CHARS
    if compacted:  # the summary names export.ex: it goes below, what the summary dropped keeps the same order
        assert "`lib/ledger/export.ex`" in files_line(sections(text)["Also touched (your summary names them):"])
        names = ["config/prod.env", "assets/node_modules/phoenix/priv/static/phoenix.js", SCRATCH]
        line = files_line(sections(text)["Not in your compaction summary:"])
    else:
        names = ["lib/ledger/export.ex", "config/prod.env", "assets/node_modules/phoenix/priv/static/phoenix.js"]
        names.append(SCRATCH)
        line = files_line(text)
    positions = [line.index(f"`{name}`") for name in names]
    assert positions == sorted(positions), line


@pytest.mark.django_db
def test_when_room_runs_out_scratch_files_and_dependency_sources_are_left_out_first(owner, tmp_path, monkeypatch):
    calls = [("Read", {"file_path": f"{CWD}/lib/ledger/module_{n:03d}_with_a_long_name.ex"}, "x") for n in range(60)]
    calls += [("Read", {"file_path": SCRATCH}, "x"), ("Read", {"file_path": DEPENDENCY}, "x")]  # the latest
    transcript = write(tmp_path / "project" / f"{SESSION}.jsonl", session_lines(calls, compacted=False))

    text = pointer_after(monkeypatch, transcript)

    assert len(text) <= POINTER_MAX_CHARS
    assert "tasks/b7636e2.output" not in text and "node_modules" not in text
    assert "`lib/ledger/module_059_with_a_long_name.ex`" in text  # the latest read first among equals
    (left,) = re.findall(r"^(\d+) more touched", text, flags=re.MULTILINE)
    assert int(left) + len(re.findall(r"`[^`]+`", files_line(text))) == 62  # counted, not lost
