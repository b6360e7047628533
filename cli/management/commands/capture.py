"""``manage.py capture [--owner USER] [--format F] [--path FILE]``: what Claude Code's hooks call (contract §11).

Reads the hook's JSON on standard input (``session_id``, ``transcript_path``,
``cwd``, ``hook_event_name``). ``Stop``, ``SubagentStop``, ``PreCompact`` and
``SessionEnd`` import what the session file (and its subagents' files)
gained since the last capture (``threadmem.features.imports.capture``);
``SessionStart`` prints the project's earlier sessions as the hook's
additional context (``threadmem.features.imports.catalogue``), and with source
``compact`` first captures what the compaction wrote, then prints where the
compacted part went (``threadmem.features.compaction.pointer``). ``--path`` captures a
file without a hook (a Codex rollout, a script). The owner is ``--owner``,
else the owner of the API token in ``THREADMEM_TOKEN``.

It never blocks the agent: whatever fails, it exits 0 with one line on
standard error; the details go to ``var/capture.log`` in the checkout (or an installed copy's data directory),
or to ``~/.cache/threadmem/capture.log`` where that is not writable
(docs/imports.md).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from threadmem.features.compaction.pointer import compaction_pointer
from threadmem.features.imports.capture import CAPTURE_EVENTS, capture_files, session_capture_files
from threadmem.features.imports.catalogue import COMPACT_SOURCE, session_start_catalogue, session_thread
from threadmem.features.imports.records import FORMATS

TOKEN_VARIABLE = "THREADMEM_TOKEN"


class CaptureRefused(Exception):
    """A capture that cannot run (no owner, no transcript): reported in one line, never raised to the agent."""


class Command(BaseCommand):
    help = "Import what a Claude Code session gained since the last capture (a hook reads its JSON on stdin)."
    # It runs on every hook event: the system checks (which import every URL's view) are the server's job.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", default=None, help=f"the user (default: the owner of ${TOKEN_VARIABLE})")
        parser.add_argument("--format", default=None, choices=FORMATS, dest="fmt", help="default: from the file")
        parser.add_argument("--path", type=Path, default=None, help="capture this file (no hook JSON read)")

    def run_from_argv(self, argv: list[str]) -> None:
        # A hook's exit status 2 blocks Claude Code (argparse exits 2 on a bad option): every exit is 0.
        try:
            super().run_from_argv(argv)
        except SystemExit as exc:
            if exc.code not in (0, None):
                sys.stderr.write(f"threadmem capture: could not run (exit status {exc.code})\n")
        except BaseException as exc:  # the agent must never see a failure of ours
            _log_failure(exc)
            sys.stderr.write(f"threadmem capture failed: {_one_line(exc)}\n")
        sys.exit(0)

    def handle(self, *args: Any, owner: str | None, fmt: str | None, path: Path | None, **options: Any) -> None:
        try:
            self._run(owner=owner, fmt=fmt, path=path)
        except Exception as exc:  # see run_from_argv
            _log_failure(exc)
            self.stderr.write(f"threadmem capture failed: {_one_line(exc)}")

    def _run(self, *, owner: str | None, fmt: str | None, path: Path | None) -> None:
        hook: dict[str, Any] = {} if path is not None else _hook_input(sys.stdin.read())
        user = _owner(owner)
        event = str(hook.get("hook_event_name") or "")
        if event == "SessionStart":
            if hook.get("source") == COMPACT_SOURCE:
                self._capture_before_pointing(user, hook, fmt=fmt)
            self._session_start(user, hook)
            return
        if path is None:
            if event not in CAPTURE_EVENTS:
                self.stderr.write(f"threadmem capture: nothing to do on {event or 'an unnamed event'}")
                return
            path = Path(str(hook.get("transcript_path") or ""))
        self._capture(user, hook, path=path, fmt=fmt)

    def _capture(self, user: Any, hook: dict[str, Any], *, path: Path, fmt: str | None) -> None:
        if not str(path) or str(path) == "." or not path.is_file():
            raise CaptureRefused(f"no transcript at {str(path)!r}")
        files = session_capture_files(path)
        agent_file = str(hook.get("agent_transcript_path") or "")
        if agent_file and Path(agent_file).is_file() and Path(agent_file) not in files:
            files.append(Path(agent_file))
        result = capture_files(owner=user, files=files, fmt=fmt)
        report = result.report
        if report.skipped:
            _log(f"capture of {path} skipped {report.skipped} bad line(s): {report.problems}")
            self.stderr.write(f"threadmem capture: skipped {report.skipped} bad line(s) in {path}")

    def _capture_before_pointing(self, user: Any, hook: dict[str, Any], *, fmt: str | None) -> None:
        """What the compaction wrote (the boundary and summary, or the compaction run's file), captured first; a
        failure is reported and the pointer still names what was stored before."""
        try:
            self._capture(user, hook, path=Path(str(hook.get("transcript_path") or "")), fmt=fmt)
        except Exception as exc:  # see run_from_argv
            _log_failure(exc)
            self.stderr.write(f"threadmem capture failed: {_one_line(exc)}")

    def _session_start(self, user: Any, hook: dict[str, Any]) -> None:
        session_id = str(hook.get("session_id") or "")
        if hook.get("source") == COMPACT_SOURCE:
            thread = session_thread(owner=user, session_id=session_id)
            text = compaction_pointer(thread=thread).text if thread is not None else ""
        else:
            text = session_start_catalogue(
                owner=user,
                cwd=str(hook.get("cwd") or ""),
                transcript_path=str(hook.get("transcript_path") or ""),
                session_id=session_id,
            )
        if text:
            output = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
            self.stdout.write(json.dumps(output, ensure_ascii=False))


def _hook_input(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise CaptureRefused(f"standard input is not the hook's JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CaptureRefused("standard input is not the hook's JSON object")
    return data


def _owner(username: str | None) -> Any:
    if username:
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CaptureRefused(f"no active user {username!r}")
        return user
    key = os.environ.get(TOKEN_VARIABLE, "").strip()
    if not key:
        raise CaptureRefused(f"give --owner or set {TOKEN_VARIABLE}")
    from rest_framework.authtoken.models import Token

    token = Token.objects.select_related("user").filter(key=key, user__is_active=True).first()
    if token is None:
        raise CaptureRefused(f"{TOKEN_VARIABLE} is not a valid token")
    return token.user


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]


def _log_failure(exc: BaseException) -> None:
    _log("capture failed", exc=None if isinstance(exc, CaptureRefused) else exc)


def capture_log_paths() -> tuple[Path, Path]:
    """Where the capture log goes: var/ in the checkout or the data directory, else (a hook whose user cannot write
    there) the user's cache."""
    return Path(settings.DATA_DIR) / "var" / "capture.log", Path(os.path.expanduser("~/.cache/threadmem/capture.log"))


def _log(message: str, *, exc: BaseException | None = None) -> None:
    """Details go to the capture log, a file: standard error gets one line, which the agent may show."""
    for path in capture_log_paths():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handler = logging.FileHandler(path, encoding="utf-8")
            break
        except OSError:
            continue
    else:
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    file_logger = logging.getLogger("threadmem.capture")
    file_logger.propagate = False
    file_logger.addHandler(handler)
    try:
        file_logger.warning(message, exc_info=exc)
    finally:
        file_logger.removeHandler(handler)
        handler.close()
