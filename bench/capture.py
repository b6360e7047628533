"""Capturing a live Claude Code session: the cost of one hook call on a 10 MB session file, on PostgreSQL.

    .venv/bin/python bench/capture.py [--runs 40] [--megabytes 10] [--processes 5]

DATABASE_URL (default postgres://postgres@127.0.0.1:5432/threadmem_bench_capture)
must point at PostgreSQL; the database is created if missing and migrated.

A session file of ``--megabytes`` is made from the two long shared sessions
(``tests/support/session_files.py``: repeated with fresh ids, one session) and captured
once (the catch-up, not timed). Then, run after run, 1 to 10 more of its
records are appended and a hook's JSON is fed to:

* command: ``manage.py capture`` run in this process (``call_command``), as
  the hook calls it minus the interpreter's start: the cursor, the tail
  check, reading and importing the new records;
* api: ``POST /api/v1/imports/`` with the new bytes and their ``offset``
  (DRF's in-process client, token auth), the remote hook's request: the
  server's time;
* process: a few runs of ``manage.py capture`` as its own process, the
  whole wall time a hook costs on this machine (Python and Django's start
  included).

The targets: command p50 <= 200 ms, api p50 <= 50 ms.
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from database import ROOT, django_environment, migrated_database, require_postgres

django_environment("postgres://postgres@127.0.0.1:5432/threadmem_bench_capture", compaction=False, embedding=False)
from tests.support.session_files import DATA, LONG_SESSIONS, repeated, templates  # noqa: E402

MB = 1024 * 1024
COMMAND_TARGET_MS, API_TARGET_MS = 200, 50
USER = "bench-capture"


def session_lines(megabytes: int, extra: int) -> list[bytes]:
    """Records of one long session, ``megabytes`` of them plus ``extra`` more."""
    lines = templates(DATA / f"{name}.jsonl" for name in LONG_SESSIONS)
    out: list[bytes] = []
    size = repetition = 0
    while size < megabytes * MB or len(out) < extra:
        repetition += 1
        for raw in repeated(lines, repetition):
            out.append(raw.encode() + b"\n")
            size += len(out[-1])
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(name: str, ms: list[float], target: float | None) -> str:
    text = f"{name}: p50 {statistics.median(ms):.1f} ms · p90 {percentile(ms, 0.9):.1f} ms · max {max(ms):.1f} ms"
    if target is not None:
        text += f" ({'meets' if statistics.median(ms) <= target else 'ABOVE'} the target p50 <= {target} ms)"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--megabytes", type=int, default=10)
    parser.add_argument("--processes", type=int, default=5, help="runs of the command as its own process")
    args = parser.parse_args()
    url = require_postgres("bench/capture.py")
    dbname = migrated_database(url)

    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    from threadmem.models import CaptureCursor, Message, Thread

    drop_threads = importlib.import_module("import").drop_threads  # bench/import.py
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    user, _ = get_user_model().objects.get_or_create(username=USER)
    token, _ = Token.objects.get_or_create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")

    def clean() -> None:
        drop_threads(list(Thread.objects.filter(owner=user).values_list("pk", flat=True)))
        CaptureCursor.objects.filter(owner=user).delete()

    clean()
    per_run = [1 + run % 10 for run in range(args.runs + args.processes)]
    folder = Path(tempfile.mkdtemp(prefix="threadmem-bench-capture-"))
    try:
        for side in ("command", "api"):
            # Each side its own sessions (threads): the api side must not find the command side's messages.
            lines = [raw.replace(b'"sessionId":"', f'"sessionId":"{side}-'.encode()) for raw in
                     session_lines(args.megabytes, sum(per_run))]  # fmt: skip
            head = len(lines) - sum(per_run)
            live = folder / f"{side}.jsonl"
            live.write_bytes(b"".join(lines[:head]))
            hook = json.dumps({"session_id": side, "transcript_path": str(live), "cwd": "/bench",
                               "hook_event_name": "Stop"})  # fmt: skip
            started = time.perf_counter()
            offset = catch_up(side, live, hook, client, call_command)
            print(
                f"{side}: {live.stat().st_size / MB:.1f} MB session ({head} records) caught up in"
                f" {time.perf_counter() - started:.1f} s; then {args.runs} captures of 1 to 10 new records each"
            )
            ms: list[float] = []
            cursor = head
            stored = Message.objects.filter(thread__owner=user).count()
            for count in per_run[: args.runs]:
                new = b"".join(lines[cursor : cursor + count])
                cursor += count
                with live.open("ab") as handle:
                    handle.write(new)
                started = time.perf_counter()
                if side == "command":
                    sys.stdin = io.StringIO(hook)
                    call_command("capture", "--owner", USER, stdout=io.StringIO(), stderr=io.StringIO())
                else:
                    response = post(client, live, offset, new)
                    if response.status_code != 200:
                        raise SystemExit(f"capture failed: {response.status_code} {response.content[:300]!r}")
                    offset = response.json()["offset"]
                ms.append((time.perf_counter() - started) * 1000)
            new = Message.objects.filter(thread__owner=user).count() - stored
            print("  " + summary(side, ms, COMMAND_TARGET_MS if side == "command" else API_TARGET_MS))
            print(f"  ({new} new messages stored by the {args.runs} captures)")
            if side == "command" and args.processes:
                walls = []
                env = {**os.environ, "DATABASE_URL": url}
                for count in per_run[args.runs :]:
                    with live.open("ab") as handle:
                        handle.write(b"".join(lines[cursor : cursor + count]))
                    cursor += count
                    started = time.perf_counter()
                    subprocess.run([sys.executable, "manage.py", "capture", "--owner", USER], input=hook, text=True,
                                   cwd=ROOT, env=env, check=True, capture_output=True)  # fmt: skip
                    walls.append((time.perf_counter() - started) * 1000)
                print(
                    "  " + summary(f"process ({args.processes} runs, Python and Django's start included)", walls, None)
                )
    finally:
        clean()
        for child in folder.iterdir():
            child.unlink()
        folder.rmdir()
    print(f"database {dbname}")


def catch_up(side: str, live: Path, hook: str, client, call_command) -> int:
    if side == "command":
        sys.stdin = io.StringIO(hook)
        call_command("capture", "--owner", USER, stdout=io.StringIO(), stderr=io.StringIO())
        return live.stat().st_size
    response = post(client, live, 0, live.read_bytes())
    if response.status_code != 200:
        raise SystemExit(f"catch-up failed: {response.status_code} {response.content[:300]!r}")
    return response.json()["offset"]


def post(client, live: Path, offset: int, body: bytes):
    return client.post(
        f"/api/v1/imports/?offset={offset}&name={live}",
        body,
        content_type="application/octet-stream",
        HTTP_CONTENT_DISPOSITION=f'attachment; filename="{live.name}"',
    )


if __name__ == "__main__":
    main()
