"""Capture helpers: the JSON Claude Code's hooks send, the command fed with it, a session file grown by parts."""

from __future__ import annotations

import io
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

from django.core.management import call_command

from threadmem.models import Message, Thread


def hook_json(event: str, *, transcript: Path | str, session_id: str, cwd: str = "/home/marco/projects/spotter") -> str:
    """What Claude Code writes on the hook's standard input (the fields its hooks documentation lists)."""
    data: dict[str, object] = {
        "session_id": session_id,
        "transcript_path": str(transcript),
        "cwd": cwd,
        "hook_event_name": event,
        "permission_mode": "default",
    }
    if event in ("Stop", "SubagentStop"):
        data["stop_hook_active"] = False
    if event == "PreCompact":
        data.update(trigger="auto", custom_instructions="")
    if event == "SessionEnd":
        data["reason"] = "prompt_input_exit"
    if event == "SessionStart":
        data["source"] = "startup"
    return json.dumps(data)


def run_capture(monkeypatch, stdin: str, *args: str) -> tuple[str, str]:
    """``manage.py capture`` in this process, fed ``stdin``; its stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    call_command("capture", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def growth(raw: bytes, *, parts: int) -> Iterator[bytes]:
    """``raw`` in ``parts`` pieces cut at uneven places, many of them inside a record (mid-line)."""
    size = len(raw)
    cuts = sorted({(size * k * k) // (parts * parts) + (k * 7919) % 301 for k in range(1, parts)} | {size})
    start = 0
    for cut in cuts:
        cut = min(cut, size)
        if cut > start:
            yield raw[start:cut]
            start = cut


def thread_rows(thread: Thread) -> list[tuple]:
    return list(
        Message.objects.filter(thread=thread)
        .order_by("seq")
        .values_list("generation", "role", "kind", "content", "tool_calls", "tool_call_id", "model_visible")
    )


def imported_whole(folder: Path, source: Path, *, sessions: Path) -> None:
    """The session file and its folder (subagents) imported at once, into the channel ``whole`` of ``owner``."""
    folder.mkdir()
    shutil.copy(source, folder / source.name)
    shutil.copytree(sessions, folder / sessions.name)
    call_command("import_sessions", "--format", "claude-code", "--owner", "owner", "--channel", "whole", str(folder))
