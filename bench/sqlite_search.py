"""Global search on SQLite, the embedded default database: a scan of every message, always complete.

    BENCH_MESSAGES=100000 .venv/bin/python bench/sqlite_search.py [--rebuild] [--runs 5]

DATABASE_URL is ignored: the bench uses its own SQLite file, BENCH_SQLITE_PATH
(default <tmp>/threadmem-bench-sqlite-<BENCH_MESSAGES>.sqlite3, BENCH_MESSAGES
default 1,000,000), builds it once and reuses it on later runs (--rebuild
starts over).

The store is bench/store.py's, row for row: the same seeded text generator
drawn in the same order, so the messages, the planted rare term, the stress
thread, the tool-call argument leaves and the users (bench-owner-0..99,
bench-operator) are those of the PostgreSQL bench store of the same size. It
is migrated by Django and loaded with the stdlib sqlite3 module in one
transaction with the journal off.

What it prints: p50/p95 of ``search_memory`` (the whole tool call) for the
global queries bench/search.py measures, as the operator and as an owner of
1 % of the threads, with the hit line and the coverage of every measured call
("all": the scan read every message, so the answer is complete). On SQLite no
index serves the match (a Python function per row), so a global search reads
the whole store. The load average and a Python loop's speed are printed too:
two shared cores move every figure.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import django  # noqa: E402

from bench.store import (  # noqa: E402  (sets DATABASE_URL to PostgreSQL: replaced below)
    ABSENT_TERM,
    POOL_CHARS,
    RARE_STORE_COUNT,
    RARE_TERM,
    SEED,
    STORE_MESSAGES,
    STORE_THREADS,
    STORE_USERS,
    STRESS_CHANNEL,
    TextSource,
    bench_users,
    log,
    make_pool,
    percentile,
    store_messages,
    tail_words,
    timed,
)

DEFAULT_PATH = Path(tempfile.gettempdir()) / f"threadmem-bench-sqlite-{STORE_MESSAGES}.sqlite3"
SQLITE_PATH = Path(os.environ.get("BENCH_SQLITE_PATH") or DEFAULT_PATH)
os.environ["DATABASE_URL"] = f"sqlite:///{SQLITE_PATH}"
# Tasks run in-process, as on a laptop with the default settings.
os.environ.pop("CELERY_BROKER_URL", None)

NOW = "2024-06-01 00:00:00"
INSERT_BATCH = 20_000


# --- the store ------------------------------------------------------------------


def store_is_built() -> bool:
    if not SQLITE_PATH.exists():
        return False
    with sqlite3.connect(SQLITE_PATH) as conn:
        # Written by build_store's last step: a build stopped halfway is built again.
        return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'bench_store_built'").fetchone() is not None


def remove_store() -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{SQLITE_PATH}{suffix}").unlink(missing_ok=True)


def build_store() -> None:
    """bench/store.py's build_store on SQLite; every rng draw is made in its order, so the rows are the same."""
    from django.core.management import call_command
    from django.db import connection

    remove_store()
    SQLITE_PATH.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    rng = random.Random(SEED)
    log(f"generating a {POOL_CHARS / 1e6:.0f}M-character text pool")
    source = TextSource(rng, make_pool(rng, POOL_CHARS))
    owner_ids = [owner.id for owner in bench_users()]
    # Django's connection keeps WAL mode; the load's own connection turns the journal off, which needs it closed.
    connection.close()

    conn = sqlite3.connect(SQLITE_PATH, isolation_level=None)
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-1000000")  # 1 GB: the message indexes' pages stay in memory during the load
    conn.execute("BEGIN")
    stress_thread_id = STORE_THREADS + 1
    next_seq = [1] * (stress_thread_id + 1)
    visible_bytes = [0] * (stress_thread_id + 1)
    rare_at = set(rng.sample(range(1, STORE_MESSAGES + 1), RARE_STORE_COUNT))
    arguments: list[tuple] = []
    message_sql = (
        "INSERT INTO threadmem_message (id, thread_id, generation, seq, role, kind, content, tool_calls, "
        "tool_call_id, session_id, model_visible, isolated, superseded_by_id, created_at) "
        "VALUES (?, ?, 1, ?, ?, ?, ?, ?, '', ?, ?, ?, NULL, ?)"
    )
    batch: list[tuple] = []

    def add(row: tuple) -> None:
        batch.append(row)
        thread_id, content, tool_calls, visible = row[1], row[5], row[6], row[8]
        if visible:
            visible_bytes[thread_id] += len(content.encode()) + len(tool_calls.encode())
        if len(batch) >= INSERT_BATCH:
            conn.executemany(message_sql, batch)
            batch.clear()

    log(f"inserting {STORE_MESSAGES:,} messages")
    for message in store_messages(rng, source, rare_at=rare_at, next_seq=next_seq, arguments=arguments):
        add((*message, NOW))
    conn.executemany(message_sql, batch)

    log(f"inserting {len(arguments):,} tool-call argument leaves, threads and generations")
    conn.executemany(
        "INSERT INTO threadmem_toolargument (message_id, thread_id, call_index, tool_call_id, tool_name, path, value) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        arguments,
    )
    threads = [
        (thread_id, f"bench:{thread_id}", "", owner_ids[thread_id % STORE_USERS], thread_id % 100 == 0)
        for thread_id in range(1, STORE_THREADS + 1)
    ] + [(stress_thread_id, STRESS_CHANNEL, "stress", owner_ids[0], False)]
    conn.executemany(
        "INSERT INTO threadmem_thread (id, channel, title, owner_id, isolated, current_generation, next_seq, "
        "created_at, last_activity_at) VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?)",
        [(*thread, next_seq[thread[0]], NOW, NOW) for thread in threads],
    )
    # The running totals appends keep (models.Generation.visible_chars), in UTF-8 bytes as bench/store.py sums them.
    conn.executemany(
        "INSERT INTO threadmem_generation (thread_id, number, state, started_at, visible_chars) "
        "VALUES (?, 1, 'open', ?, ?)",
        [(thread_id, NOW, visible_bytes[thread_id]) for thread_id in range(1, stress_thread_id + 1)],
    )
    conn.execute("COMMIT")
    log("ANALYZE")
    conn.execute("ANALYZE")
    seconds = time.perf_counter() - started
    conn.execute("CREATE TABLE bench_store_built (seconds REAL)")  # the marker store_is_built looks for
    conn.execute("INSERT INTO bench_store_built VALUES (?)", [seconds])
    conn.close()
    log(f"store built in {seconds:.0f} s")


# --- measurement ------------------------------------------------------------------


def machine_speed() -> str:
    """bench/search.py's machine_speed, its Python half (its other half is a PostgreSQL loop)."""

    def python_loop():
        total = 0
        for number in range(1_000_000):
            total += number

    python_ms = statistics.median(timed(python_loop, 5))
    return f"machine speed: a 1M-step loop takes {python_ms:.0f} ms in Python"


def load_average() -> str:
    return "load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def measure(runs: int) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from threadmem.features.search import search_memory

    User = get_user_model()
    operator = User.objects.get(username="bench-operator")
    owner = User.objects.get(username="bench-owner-1")  # 100 threads, none isolated
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), sum(length(content)) FROM threadmem_message")
        messages, chars = cursor.fetchone()
        cursor.execute("SELECT count(*) FROM threadmem_toolargument")
        (leaves,) = cursor.fetchone()
        cursor.execute("SELECT seconds FROM bench_store_built")
        (built,) = cursor.fetchone()
    size = sum(
        Path(f"{SQLITE_PATH}{suffix}").stat().st_size
        for suffix in ("", "-wal")
        if Path(f"{SQLITE_PATH}{suffix}").exists()
    )
    print(
        f"store: {SQLITE_PATH}, {messages:,} messages, {chars / 1e9:.2f} G characters, {leaves:,} tool-argument leaves"
    )
    print(f"file {size / 1e9:.2f} GB, built in {built:.0f} s; runs per figure: {runs}")
    print(load_average())
    print(machine_speed())
    print("search_memory = the whole tool call (scope, literal part, semantic part, merge, tool-call log row)\n")

    print("global scope (every thread that is not isolated; as the operator unless noted)")
    words = tail_words()
    medium, uncommon = words["medium"], words["uncommon"]
    queries = [
        ("rare", RARE_TERM, operator),
        ("common word", "error", operator),
        ("common phrase (3 terms)", "connection refused", operator),
        (f"medium word {medium!r}", medium, operator),
        (f"uncommon word {uncommon!r}", uncommon, operator),
        ("absent", ABSENT_TERM, operator),
        ("rare, as an owner (1% of threads)", RARE_TERM, owner),
        ("common word, as an owner (1% of threads)", "error", owner),
        (f"uncommon word, as an owner {uncommon!r}", uncommon, owner),
    ]
    for label, query, user in queries:
        results = []

        def search(query=query, user=user, results=results):
            results.append(search_memory(user=user, query=query))

        samples = timed(search, runs)
        measured = results[1:]  # the first call only warmed up
        hits = measured[-1].text.split("\n")[1].rsplit("literal hits: ", 1)[1]
        coverage = ", ".join(sorted({str(result.coverage) for result in measured}))
        print(
            f"  {label:<48} p50 {statistics.median(samples):9.1f}  p95 {percentile(samples, 0.95):9.1f}  ms"
            f"  ({hits}; coverage: {coverage})",
            flush=True,
        )
    print(f"\n{load_average()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rebuild", action="store_true", help="delete the SQLite file and build it again")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if args.rebuild:
        remove_store()
    django.setup()
    if store_is_built():
        from django.core.management import call_command

        log(f"reusing the built store {SQLITE_PATH}")
        # Migrations added since the store was built are part of what is measured.
        call_command("migrate", verbosity=0)
    else:
        build_store()
    if not args.build_only:
        measure(args.runs)


if __name__ == "__main__":
    main()
