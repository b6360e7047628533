"""Tailing session files as a live agent writes them (``import_sessions --follow``).

Each pass looks for files again (a new session in a watched folder is
picked up), then imports from each file's byte offset the lines completed
since the last pass; a half-written last line waits for its newline.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser

from threadmem.features.imports.file_import import FileImport
from threadmem.features.imports.import_once import statistics_refresh
from threadmem.features.imports.records import detect_format, session_files
from threadmem.features.imports.report import ImportReport

POLL_SECONDS = 0.5


def follow_paths(
    *,
    paths: list[Path],
    fmt: str | None,
    owner: AbstractBaseUser,
    report: ImportReport,
    stop: threading.Event,
    channel: str | None = None,
    poll_seconds: float = POLL_SECONDS,
    seconds: float | None = None,
    on_problem: Callable[[str], None] | None = None,
    on_pass: Callable[[ImportReport], None] | None = None,
) -> ImportReport:
    """Import what the files gain until ``stop`` is set (or ``seconds`` have passed).

    The planner's statistics are refreshed once, after the first pass that
    imported anything (the catch-up on what the files already held): the
    lines a live session appends later are few.
    """
    analyzed = False
    deadline = None if seconds is None else time.monotonic() + seconds
    files: dict[Path, FileImport] = {}
    while True:
        for path in [f for p in paths if p.exists() for f in session_files(p, fmt=fmt)]:
            current = files.get(path)
            if current is None:
                chosen = fmt or detect_format(path)
                if not chosen:
                    continue  # its first record names its format: wait for it
                current = files[path] = FileImport(
                    path=path,
                    fmt=chosen,
                    owner=owner,
                    report=report,
                    channel=channel,
                    on_problem=on_problem,
                )
            elif path.stat().st_size <= current.offset:
                continue
            current.step(final=False)
        if not analyzed and report.messages_new:
            statistics_refresh()
            analyzed = True
        if on_pass is not None:
            on_pass(report)
        remaining = poll_seconds if deadline is None else min(poll_seconds, deadline - time.monotonic())
        if remaining <= 0 or stop.wait(remaining):
            return report
