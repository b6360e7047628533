"""Peak memory of ``manage.py import_sessions --format codex`` on rollouts of 50, 200 and 500 MB: flat, or not.

    .venv/bin/python bench/codex_memory.py [--sizes 50,200,500]

DATABASE_URL (default postgres://postgres@127.0.0.1:5432/threadmem_bench_import)
must point at PostgreSQL. Each rollout is written to /tmp (deleted after)
from a real one, ``tests/fixtures/codex/rollout-2025-09-24T20-12-23-….jsonl``
(Codex CLI 0.40): its ``session_meta`` once, then its other records again
and again as they are, with each repetition's ``call_id`` made its own,
and a ``compacted`` record (Codex's summary shape) after every third, so
that the file holds a generation per ~1 MB, as a long Codex session does.
Each file is imported by ``manage.py import_sessions --format codex`` in a
process of its own run under ``/usr/bin/time -v``: its maximum resident
set size is the peak. The smallest real rollout imported the same way
gives the process's floor (Python, Django, the first batch). The thread is
deleted after each import.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from database import ROOT, django_environment, migrated_database, require_postgres

django_environment("postgres://postgres@127.0.0.1:5432/threadmem_bench_import", compaction=False, embedding=False)

MB = 1024 * 1024
OWNER = "bench-codex-memory"
SOURCE = next((ROOT / "tests/fixtures/codex").glob("rollout-2025-09-24T20-12-23-*.jsonl"))
COMPACT_EVERY = 3
SUMMARY = (
    "Another language model started to solve this problem and produced a summary of its thinking process. "
    "Summary: the team dashboard fires useTeamDashboardMetrics on mount; /api/teams/leads feeds the Team Lead field."
)


def write_rollout(path: Path, megabytes: int) -> int:
    """The real rollout's records repeated up to ``megabytes``; answer the lines written."""
    lines = SOURCE.read_text(encoding="utf-8").splitlines()
    meta, body = lines[0], [json.loads(line) for line in lines[1:] if line.strip()]
    written, count, repetition = len(meta) + 1, 1, 0
    with path.open("w", encoding="utf-8") as handle:
        handle.write(meta + "\n")
        while written < megabytes * MB:
            repetition += 1
            for record in body:
                payload = record["payload"]
                if "call_id" in payload:
                    record = {**record, "payload": {**payload, "call_id": f"{payload['call_id']}-{repetition}"}}
                raw = json.dumps(record, ensure_ascii=False)
                handle.write(raw + "\n")
                written += len(raw.encode("utf-8")) + 1
                count += 1
            if repetition % COMPACT_EVERY == 0:
                raw = json.dumps(
                    {"timestamp": "2025-09-25T03:00:00.000Z", "type": "compacted", "payload": {"message": SUMMARY}}
                )
                handle.write(raw + "\n")
                written += len(raw) + 1
                count += 1
    return count


def import_under_time(path: Path) -> dict:
    """``manage.py import_sessions --format codex`` on the file, in its own process under /usr/bin/time -v."""
    started = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, str(ROOT / "manage.py"), "import_sessions", "--format", "codex",
         "--owner", OWNER, str(path)],
        capture_output=True, text=True, env=os.environ, cwd=ROOT, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"import_sessions failed ({done.returncode}):\n{done.stderr[-2000:]}")
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    new = re.search(r"(\d+) new messages", done.stdout)
    return {
        "peak_mb": int(peak.group(1)) / 1024 if peak else float("nan"),
        "messages": int(new.group(1)) if new else 0,
        "seconds": seconds,
    }


def drop_threads() -> None:
    from django.db import connection

    from threadmem.models import Thread

    for thread in Thread.objects.filter(owner__username=OWNER):
        thread.delete()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE threadmem_message")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="50,200,500", help="rollout sizes in MB, comma-separated")
    args = parser.parse_args()
    dbname = migrated_database(require_postgres("bench/codex_memory.py"))
    from django.contrib.auth import get_user_model

    get_user_model().objects.get_or_create(username=OWNER)
    drop_threads()
    print(f"manage.py import_sessions --format codex · database {dbname} · peak RSS by /usr/bin/time -v")
    files = [(f"real rollout {SOURCE.name[8:27]} (the floor)", SOURCE, 0)]
    folder = Path(tempfile.mkdtemp(prefix="threadmem-bench-codex-memory-"))
    peaks = []
    try:
        for size in [int(s) for s in args.sizes.split(",") if s]:
            path = folder / f"rollout-{size}mb.jsonl"
            files.append((f"{size} MB rollout", path, size))
        for label, path, size in files:
            lines = write_rollout(path, size) if size else sum(1 for _ in path.open("rb"))
            result = import_under_time(path)
            megabytes = path.stat().st_size / MB
            print(
                f"  {label}: {megabytes:.1f} MB, {lines:,} lines, {result['messages']:,} messages"
                f" in {result['seconds']:.0f} s ({result['messages'] / result['seconds']:,.0f} messages/s)"
                f" · peak RSS {result['peak_mb']:.0f} MB",
                flush=True,
            )
            if size:
                path.unlink()
                peaks.append((megabytes, result["peak_mb"]))
            drop_threads()
    finally:
        for child in folder.iterdir():
            child.unlink()
        folder.rmdir()
    if len(peaks) >= 2:
        (small_mb, small_peak), (large_mb, large_peak) = peaks[0], peaks[-1]
        growth = (large_peak - small_peak) / (large_mb - small_mb)
        print(
            f"peak RSS from {small_mb:.0f} to {large_mb:.0f} MB of rollout: {small_peak:.0f} -> {large_peak:.0f} MB"
            f" ({growth * 100:+.1f} MB of RSS per 100 MB of file)"
        )


if __name__ == "__main__":
    main()
