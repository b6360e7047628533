"""``manage.py export --owner USER [--out DIR]``: every thread of an owner, one threadmem JSONL file each.

The files are what ``GET /api/v1/threads/{channel}/export/`` streams, isolated content included (the
command runs with an operator's authority); ``manage.py import_sessions --owner USER DIR`` restores them,
parents before forks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from threadmem.features.imports.export import export_filename, thread_export_lines
from threadmem.models import Thread


class Command(BaseCommand):
    help = "Export every thread of an owner as threadmem JSONL, one <channel>.jsonl file per thread."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", required=True, help="the user whose threads are exported")
        parser.add_argument(
            "--out", type=Path, default=None, help="the folder to write into (default: threadmem-export-<owner>)"
        )

    def handle(self, *args: Any, owner: str, out: Path | None, **options: Any) -> None:
        user = get_user_model().objects.filter(username=owner).first()
        if user is None:
            raise CommandError(f"no user {owner!r}")
        folder = out if out is not None else Path(f"threadmem-export-{owner}")
        folder.mkdir(parents=True, exist_ok=True)
        taken: set[str] = set()
        threads = Thread.objects.filter(owner=user).order_by("id")
        for thread in threads.iterator():
            path = folder / _unique(export_filename(thread.channel), taken)
            end = _write(path, thread)
            self.stdout.write(
                f"{path}: {thread.channel} ({end['generations']} generations, {end['messages']} messages)"
            )
        self.stdout.write(f"exported {len(taken)} thread(s) of {owner} to {folder}")


def _unique(name: str, taken: set[str]) -> str:
    """``name``, or ``name`` numbered: unique in the folder, case-insensitive file systems included."""
    stem, number, candidate = name.removesuffix(".jsonl"), 1, name
    while candidate.lower() in taken:
        number += 1
        candidate = f"{stem}-{number}.jsonl"
    taken.add(candidate.lower())
    return candidate


def _write(path: Path, thread: Thread) -> dict[str, Any]:
    """Write the export next to ``path``, then move it there: a file by that name is always whole."""
    partial = path.with_name(f".{path.name}.partial")
    last = b""
    with partial.open("wb") as handle:
        for line in thread_export_lines(thread=thread, withhold_isolated=False):
            handle.write(line)
            last = line
    os.replace(partial, path)
    return orjson.loads(last)
