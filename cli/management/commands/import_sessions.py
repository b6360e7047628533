"""``manage.py import_sessions [--format FORMAT] PATH... [--owner USER] [--channel C] [--follow]``.

FORMAT: claude-code, openai, codex or threadmem (an export); by default each file's, from its first record.

Imports agent sessions (contract §11) through ``threadmem.features.imports``: a PATH is a
session file or a folder of them (a Claude Code project folder, or
``~/.claude/projects`` itself, or ``manage.py export``'s folder). A bad line is reported with its file and
line number and skipped, except in a threadmem export, which is refused whole (every bad line listed,
nothing of it restored); the command then exits non-zero saying how many. It runs with an operator's
authority: a threadmem export restores its ``isolated`` flags whoever the owner is.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from threadmem.domain.services import CHANNEL_MAX_CHARS
from threadmem.errors import DomainError
from threadmem.features.imports.follow import POLL_SECONDS, follow_paths
from threadmem.features.imports.import_once import import_paths
from threadmem.features.imports.records import FORMATS, session_files
from threadmem.features.imports.report import ImportReport
from threadmem.lib.validate import check_text

PLAIN_PROGRESS_STEP = 0.1  # a plain progress line every tenth of the bytes
# The summary names this many threads, then counts the rest (a whole ~/.claude/projects is hundreds).
SUMMARY_THREADS = 10


class Command(BaseCommand):
    help = (
        "Import Claude Code sessions, Codex CLI rollouts, OpenAI chat JSONL or threadmem exports into threads "
        "(contract §11)."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stop_event = threading.Event()  # set it to end --follow (tests, embedding callers)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="a session file or a folder of them")
        parser.add_argument(
            "--format", default=None, choices=FORMATS, dest="fmt", help="default: each file's, from its first record"
        )
        parser.add_argument("--owner", required=True, help="the user the threads belong to (must exist)")
        parser.add_argument("--channel", default=None, help="the thread's channel (one session only)")
        parser.add_argument("--follow", action="store_true", help="keep importing what is appended to the files")
        parser.add_argument("--follow-seconds", type=float, default=None, help="stop following after this long")
        parser.add_argument("--poll-seconds", type=float, default=POLL_SECONDS, help=argparse_hidden())

    def handle(
        self, *args: Any, paths: list[Path], fmt: str | None, owner: str, channel: str | None, **options: Any
    ) -> None:
        user = get_user_model().objects.filter(username=owner).first()
        if user is None:
            raise CommandError(f"no user {owner!r}: create it first (manage.py createsuperuser)")
        missing = [str(p) for p in paths if not p.exists() and not options["follow"]]
        if missing:
            raise CommandError(f"no such file or folder: {', '.join(missing)}")
        try:
            if channel is not None:
                # A NUL or a lone surrogate would reach a query before the thread's own checks.
                channel = check_text(channel, name="channel", max_chars=CHANNEL_MAX_CHARS)
            if options["follow"]:
                report = follow_paths(
                    paths=paths,
                    fmt=fmt,
                    owner=user,
                    channel=channel,
                    report=ImportReport(),
                    stop=self.stop_event,
                    poll_seconds=options["poll_seconds"],
                    seconds=options["follow_seconds"],
                    on_problem=self._problem,
                )
            else:
                total = sum(f.stat().st_size for p in paths for f in session_files(p, fmt=fmt))
                with Progress(total, self.stderr) as progress:
                    report = import_paths(
                        paths=paths,
                        fmt=fmt,
                        owner=user,
                        channel=channel,
                        on_problem=self._problem,
                        progress=progress,
                        restore_isolation=True,
                    )
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"imported {report.files} file(s), {report.lines} lines, {report.bytes} bytes: "
            f"{report.messages_new} new messages, {report.messages_known} already imported"
            + (f", {report.messages_grown} grown" if report.messages_grown else "")
            + f"; threads: {_threads(report.channels)}"
        )
        for note in report.notes:
            self.stdout.write(f"note: {note}")
        for refusal in report.refusals:
            self.stderr.write(f"refused {refusal.message}")
        skipped = report.skipped - report.refused_lines
        failures = [f"skipped {skipped} bad line(s); the rest was imported"] if skipped else []
        if report.refusals:
            failures.append(f"refused {len(report.refusals)} export(s) whole: nothing of them was restored")
        if failures:
            raise CommandError("; ".join(failures))

    def _problem(self, text: str) -> None:
        self.stderr.write(f"skipped {text}")


def _threads(channels: list[str]) -> str:
    named = ", ".join(channels[:SUMMARY_THREADS]) or "none"
    return named if len(channels) <= SUMMARY_THREADS else f"{named} and {len(channels) - SUMMARY_THREADS} more"


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


class Progress:
    """A tqdm bar on a terminal, plain progress lines otherwise; called with the bytes consumed since last time."""

    def __init__(self, total: int, stream: Any) -> None:
        self.total, self.stream, self.done, self.next_line = total, stream, 0, PLAIN_PROGRESS_STEP
        self.bar = None
        if sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc="import")

    def __call__(self, consumed: int) -> None:
        self.done += consumed
        if self.bar is not None:
            self.bar.update(consumed)
        elif self.total and self.done / self.total >= self.next_line:
            self.stream.write(f"progress: {self.done}/{self.total} bytes ({100 * self.done // self.total}%)")
            self.next_line = self.done / self.total + PLAIN_PROGRESS_STEP

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()
