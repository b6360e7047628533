"""Importing Claude Code sessions on PostgreSQL: throughput beside the API's append path, and peak memory.

    .venv/bin/python bench/import.py [--runs 3] [--sizes 50,150,500] [--skip-memory] [--skip-codex]

DATABASE_URL (default postgres://postgres@127.0.0.1:5432/threadmem_bench_import)
must point at PostgreSQL; the database is created if missing and migrated.
The bench adds its own threads (channels ``bench:import:…``) and deletes them.

Throughput: the shared sessions (``<repo>/../shared/data/claude-code``, the
four main session files; subagent files are forks and left out) are
imported, run after run, beside the same messages appended through the API:

* import: ``threadmem.features.imports.import_paths`` on each file, as
  ``manage.py import_sessions`` runs it: reading the file, parsing the
  records, merging streamed messages, batches of 500 through
  ``services.messages_store`` (COPY), the generation boundary and Claude
  Code's summary through their services, the hooks once per file.
* api: what a client does with the messages the parser makes of the same
  files: ``POST /api/v1/threads/`` for each session's thread, then the
  messages POSTed to ``/api/v1/threads/{channel}/messages/`` in the same
  batches, through DRF's in-process client with token auth (request bodies
  encoded before the clock starts; the summary and the boundary are posted
  as ordinary messages).

Both write the same rows into the same tables, taking turns; the target is
import ≥ 80 % of the api rate (messages/s).

Codex: the same sessions written as Codex CLI rollouts (``bench/codex_sessions.py``)
are imported beside the originals, the sides taking turns; the target is
codex >= 80 % of the Claude Code importer's messages/s.

Peak memory: synthetic sessions made by repeating the two long shared
sessions with fresh uuids, message ids and tool ids, up to each size in MB
(written to /tmp, deleted afterwards), each imported in a fresh subprocess
that reports its RSS high-water mark (VmHWM). The target is memory
flat in the file size.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from database import django_environment, migrated_database, require_postgres

# Automatic compaction and embedding are workers' jobs: keep them out of both sides.
django_environment("postgres://postgres@127.0.0.1:5432/threadmem_bench_import", compaction=False, embedding=False)
import django  # noqa: E402

from tests.support.session_files import DATA, LONG_SESSIONS, repeated, templates  # noqa: E402

TARGET_RATIO = 0.80
CHANNEL_PREFIX = "bench:import:"
MB = 1024 * 1024


def session_files() -> list[Path]:
    files = sorted(DATA.glob("*.jsonl"))
    if not files:
        raise SystemExit(f"no shared sessions at {DATA}")
    return files


# --- the threads the bench makes ----------------------------------------------


def drop_threads(thread_ids: list[int]) -> None:
    """Delete the bench's threads with plain SQL: the ORM's cascade would load every message first."""
    from django.db import connection, transaction

    if not thread_ids:
        return
    messages = "SELECT id FROM threadmem_message WHERE thread_id = ANY(%(ids)s)"
    with transaction.atomic(), connection.cursor() as cursor:
        for statement in (
            "DELETE FROM threadmem_toolargument WHERE thread_id = ANY(%(ids)s)",
            f"DELETE FROM threadmem_chunk WHERE message_id IN ({messages})",
            "DELETE FROM threadmem_embeddingprogress WHERE thread_id = ANY(%(ids)s)",
            "DELETE FROM threadmem_compaction WHERE thread_id = ANY(%(ids)s)",
            "UPDATE threadmem_generation SET summary_message_id = NULL WHERE thread_id = ANY(%(ids)s)",
            "UPDATE threadmem_message SET superseded_by_id = NULL WHERE thread_id = ANY(%(ids)s)",
            "DELETE FROM threadmem_generation WHERE thread_id = ANY(%(ids)s)",
            "DELETE FROM threadmem_message WHERE thread_id = ANY(%(ids)s)",
            "DELETE FROM threadmem_thread WHERE id = ANY(%(ids)s)",
        ):
            cursor.execute(statement, {"ids": thread_ids})


def drop_bench_threads() -> None:
    from threadmem.models import Thread

    drop_threads(list(Thread.objects.filter(channel__startswith=CHANNEL_PREFIX).values_list("pk", flat=True)))


def vacuum_analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for table in ("threadmem_message", "threadmem_toolargument", "threadmem_thread", "threadmem_generation"):
            cursor.execute(f"VACUUM ANALYZE {table}")


def bench_user() -> Any:
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(username="bench-import")
    return user


# --- throughput ---------------------------------------------------------------


def api_bodies(path: Path) -> list[bytes]:
    """The messages the importer makes of the file, as API batch bodies (the importer's batch size)."""
    from threadmem.features.imports.claude_code import ClaudeCodeParser
    from threadmem.features.imports.file_import import BATCH_SIZE
    from threadmem.features.imports.records import Boundary, Msg, Summary, read_complete_lines

    parser = ClaudeCodeParser()
    items = []
    with path.open("rb") as handle:
        for line in read_complete_lines(handle, offset=0, line_number=0, final=True):
            items += parser.feed(line)
    items += parser.flush()
    bodies: list[bytes] = []
    batch: list[dict[str, Any]] = []
    seen: set[str] = set()
    for item in items:
        if not isinstance(item, Msg | Boundary | Summary):
            continue
        m = item.event if isinstance(item, Boundary) else item.message
        if len(batch) >= BATCH_SIZE or m.source_id in seen:
            bodies.append(json.dumps(batch).encode())
            batch, seen = [], set()
        message: dict[str, Any] = {"role": m.role, "content": m.content, "source_id": m.source_id}
        if m.tool_calls:
            message["tool_calls"] = m.tool_calls
        if m.tool_call_id:
            message["tool_call_id"] = m.tool_call_id
        if m.session_id:
            message["session_id"] = m.session_id
        if not m.model_visible:
            message["model_visible"] = False
        if m.kind == "machine_event":
            message["kind"] = "machine_event"
        batch.append(message)
        seen.add(m.source_id)
    if batch:
        bodies.append(json.dumps(batch).encode())
    return bodies


def import_files(files: list[Path], *, user: Any, channel_of: dict[Path, str]) -> int:
    """What ``import_paths`` does over a folder (each file, then ANALYZE once), each file on its own channel."""
    from threadmem.features.imports.file_import import FileImport
    from threadmem.features.imports.import_once import statistics_refresh
    from threadmem.features.imports.report import ImportReport

    report = ImportReport()
    for path in files:
        FileImport(path=path, fmt="claude-code", owner=user, report=report, channel=channel_of[path]).step(final=True)
    statistics_refresh()
    return report.messages_new


def throughput(runs: int, repeat: int) -> dict[str, float]:
    from django.conf import settings
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    user = bench_user()
    token, _ = Token.objects.get_or_create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    files = session_files()
    bodies = {path: api_bodies(path) for path in files}
    file_bytes = sum(path.stat().st_size for path in files)
    api_messages = sum(len(json.loads(body)) for path in files for body in bodies[path])
    print(
        f"throughput: the {len(files)} shared session files ({file_bytes / MB:.1f} MB, {api_messages} messages)"
        f" {repeat} times a run, each time into new threads; {runs} runs, the sides taking turns"
    )
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    rates: dict[str, list[float]] = {"import": [], "api": []}
    mb_rates: list[float] = []
    try:
        for run in range(runs):
            seconds, imported = {"import": 0.0, "api": 0.0}, 0
            for time_around in range(repeat):
                sides = ("import", "api") if (run + time_around) % 2 == 0 else ("api", "import")
                for side in sides:
                    channel_of = {p: f"{CHANNEL_PREFIX}{stamp}:{run}:{time_around}:{side}:{p.stem}" for p in files}
                    if side == "import":
                        started = time.perf_counter()
                        imported += import_files(files, user=user, channel_of=channel_of)
                        seconds[side] += time.perf_counter() - started
                        continue
                    started = time.perf_counter()
                    for path in files:
                        response = client.post("/api/v1/threads/", {"channel": channel_of[path]}, format="json")
                        if response.status_code != 201:
                            raise SystemExit(f"thread create failed: {response.status_code} {response.content[:300]!r}")
                        url = f"/api/v1/threads/{channel_of[path]}/messages/"
                        for body in bodies[path]:
                            response = client.post(url, body, content_type="application/json")
                            if response.status_code != 201:
                                raise SystemExit(f"append failed: {response.status_code} {response.content[:300]!r}")
                    seconds[side] += time.perf_counter() - started
            rates["import"].append(imported / seconds["import"])
            rates["api"].append(repeat * api_messages / seconds["api"])
            mb_rates.append(repeat * file_bytes / MB / seconds["import"])
            print(
                f"  run {run + 1}: import {rates['import'][-1]:,.0f} messages/s ({mb_rates[-1]:.1f} MB/s)"
                f" · api {rates['api'][-1]:,.0f} messages/s · import/api {rates['import'][-1] / rates['api'][-1]:.2f}"
            )
            drop_bench_threads()
            vacuum_analyze()
    finally:
        drop_bench_threads()
    median = {side: statistics.median(values) for side, values in rates.items()}
    # The sides take turns within a run, so a run's ratio sees the same load on the machine.
    ratio = statistics.median(i / a for i, a in zip(rates["import"], rates["api"], strict=True))
    print(
        f"median: import {median['import']:,.0f} messages/s ({statistics.median(mb_rates):.1f} MB/s)"
        f" · api {median['api']:,.0f} messages/s · import/api {median['import'] / median['api']:.2f}"
        f" (median of the runs' ratios {ratio:.2f})"
    )
    verdict = "meets" if ratio >= TARGET_RATIO else "BELOW"
    print(f"{verdict} the target import/api >= {TARGET_RATIO:.2f} ({ratio:.2f})")
    return median


# --- peak memory ----------------------------------------------------------------


def synthetic_session(path: Path, megabytes: int) -> int:
    """Write the long sessions again and again, with fresh ids each time, up to ``megabytes``; answer lines."""
    lines = templates(DATA / f"{name}.jsonl" for name in LONG_SESSIONS)
    written = count = repetition = 0
    with path.open("w", encoding="utf-8") as handle:
        while written < megabytes * MB:
            repetition += 1
            for raw in repeated(lines, repetition):
                handle.write(raw + "\n")
                written += len(raw.encode("utf-8")) + 1
                count += 1
    return count


def _status_kb(field: str) -> int:
    """A memory figure of this process from /proc/self/status (VmRSS: now, VmHWM: its high-water mark), in kB.

    VmHWM rather than ``ru_maxrss``: after fork and exec Linux carries the
    forked copy's RSS (the size of the bench's own process) into the child's
    ``ru_maxrss``, which then reads the parent's size, not the import's.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def measure_memory(path: Path) -> None:
    """In a fresh process: import one file, print what it took and the RSS high-water mark as JSON."""
    from threadmem.features.imports.import_once import import_paths

    user = bench_user()
    before = _status_kb("VmRSS")
    started = time.perf_counter()
    report = import_paths(paths=[path], fmt="claude-code", owner=user, channel=f"{CHANNEL_PREFIX}memory:{path.name}")
    seconds = time.perf_counter() - started
    peak = _status_kb("VmHWM")
    drop_bench_threads()
    print(
        json.dumps({"rss_before_kb": before, "rss_peak_kb": peak, "messages": report.messages_new, "seconds": seconds})
    )


def memory(sizes: list[int]) -> None:
    print("peak memory: one fresh process per file (VmHWM, its RSS high-water mark; before: VmRSS after setup)")
    files = [(f"{LONG_SESSIONS[0][:8]} (shared)", DATA / f"{LONG_SESSIONS[0]}.jsonl", False)]
    folder = Path(tempfile.mkdtemp(prefix="threadmem-bench-import-"))
    try:
        for size in sizes:
            path = folder / f"synthetic-{size}mb.jsonl"
            lines = synthetic_session(path, size)
            files.append((f"synthetic {size} MB ({lines} lines)", path, True))
            result = _measure_in_subprocess(path)
            _print_memory(files[-1][0], path, result)
            path.unlink()
            vacuum_analyze()  # the next file starts from a clean table, not the dead rows of this one
        if sizes:
            print("(the shared session for reference:)")
        _print_memory(files[0][0], files[0][1], _measure_in_subprocess(files[0][1]))
    finally:
        for child in folder.iterdir():
            child.unlink()
        folder.rmdir()


def _measure_in_subprocess(path: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--measure-memory", str(path)], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _print_memory(label: str, path: Path, result: dict[str, Any]) -> None:
    size = path.stat().st_size / MB
    print(
        f"  {label}: {size:.0f} MB, {result['messages']} messages in {result['seconds']:.0f} s"
        f" ({result['messages'] / result['seconds']:,.0f} messages/s, {size / result['seconds']:.1f} MB/s)"
        f" · peak RSS {result['rss_peak_kb'] / 1024:.0f} MB (before the import {result['rss_before_kb'] / 1024:.0f} MB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=4, help="times the shared files are written per run and side")
    parser.add_argument("--sizes", default="50,150,500", help="synthetic session sizes in MB, comma-separated")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-codex", action="store_true", help="leave out Codex rollouts beside Claude Code")
    parser.add_argument("--measure-memory", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    url = require_postgres("bench/import.py")
    if args.measure_memory:
        django.setup()
        measure_memory(args.measure_memory)
        return
    dbname = migrated_database(url)
    from django.db import connection

    drop_bench_threads()
    vacuum_analyze()
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        server = cursor.fetchone()[0]
    print(f"threadmem import · PostgreSQL {server} · database {dbname}")
    if not args.skip_throughput:
        throughput(args.runs, args.repeat)
    if not args.skip_codex:
        from codex_sessions import codex_throughput

        with tempfile.TemporaryDirectory(prefix="threadmem-bench-codex-") as folder:
            codex_throughput(
                claude_files=session_files(),
                folder=Path(folder),
                runs=args.runs,
                repeat=args.repeat,
                user=bench_user(),
                cleanup=lambda: (drop_bench_threads(), vacuum_analyze()),
            )
    if not args.skip_memory:
        memory([int(size) for size in args.sizes.split(",") if size])


if __name__ == "__main__":
    main()
