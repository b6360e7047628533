"""Deleting a large thread, and what appends to other threads wait meanwhile; a delete right after an append.

    .venv/bin/python bench/delete.py [--messages 100000] [--runs 1]
    .venv/bin/python bench/delete.py --append-then-delete [--runs 20] [--worker]

DATABASE_URL (default postgres://postgres@127.0.0.1:5432/threadmem_bench_delete;
a sqlite:/// URL measures the embedded default) is created and migrated if
missing. Each run builds a thread of ``--messages`` realistic messages
(bench/ingest.py's batches: a quarter of them tool calls, whose arguments
become leaves), then deletes it through ``erase.thread_delete`` while another
thread takes one-message appends back to back on a connection of its own.
It prints the delete's time and the appends' latencies during it (median,
p99, max; target: max at most 1 s), and removes what it added.

``--append-then-delete``: each run appends ``APPENDED`` messages of ~250
characters to a new thread through the REST API (three batches, each
queueing the thread's embedding run with the static model), then DELETEs it
at once, while that run works. Without ``--worker`` the runs are in this
process (no broker); with it, CELERY_BROKER_URL names the broker and a
Celery worker started here embeds. Once the background work is over it
counts the thread's rows left in every table and its Deletion records
(target: every answer 2xx, no row left, one record each).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time

from database import django_environment

# The append-then-delete runs embed (the static model), as a fresh install does; the large delete does not.
django_environment(
    "postgres://postgres@127.0.0.1:5432/threadmem_bench_delete",
    compaction=False,
    embedding="--append-then-delete" in sys.argv,
)

from ingest import make_batch  # noqa: E402

APPEND_MAX_SECONDS = 1.0
BATCH = 1_000
APPENDED = 300
APPEND_BATCHES = 3
TEXT = "the staging rollout of the billing service stalled on migration 0042 while the cache warmed; " * 3


def build(owner, channel: str, messages: int):
    from threadmem.domain import services

    thread = services.thread_create(owner=owner, channel=channel)
    rng = random.Random(7)
    for index in range(0, messages, BATCH):
        batch = make_batch(rng, min(BATCH, messages - index), index // BATCH)
        services.messages_store(thread=thread, messages=services.messages_parse(batch), run_hooks=False)
    return thread


def appends_until(stop: threading.Event, thread, latencies: list[float]) -> None:
    from django.db import connection

    from threadmem.domain import services

    parsed = services.messages_parse({"role": "user", "content": "an append beside the delete"})
    try:
        while not stop.is_set():
            started = time.perf_counter()
            services.messages_store(thread=thread, messages=parsed, run_hooks=False)
            latencies.append(time.perf_counter() - started)
    finally:
        connection.close()


def run_once(owner, messages: int, run: int) -> tuple[float, list[float], dict]:
    from threadmem.features.erase.thread_delete import thread_delete
    from threadmem.models import Thread

    big = build(owner, f"bench:delete:big:{run}", messages)
    other = Thread.objects.create(owner=owner, channel=f"bench:delete:other:{run}")
    other.generations.create(number=1)
    latencies: list[float] = []
    stop = threading.Event()
    worker = threading.Thread(target=appends_until, args=(stop, other, latencies))
    worker.start()
    time.sleep(0.5)  # appends running before the delete starts
    before = len(latencies)
    started = time.perf_counter()
    record = thread_delete(thread=big, actor=owner, surface="bench")
    seconds = time.perf_counter() - started
    during = len(latencies)
    stop.set()
    worker.join()
    thread_delete(thread=other, actor=owner, surface="bench")
    return seconds, latencies[before : during + 1], record.counts


def rows_left(thread_id: int, message_ids: list[int]) -> dict[str, int]:
    from tests.support.erase import rows_left as rows_of

    return rows_of([thread_id], message_ids)


def start_worker(log: str):
    """A Celery worker on every queue, on this database and broker; the static model embeds."""
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    command = [str(root / ".venv" / "bin" / "celery"), "-A", "config", "worker", "-P", "prefork", "-c", "2"]
    command += ["-Q", "threadmem,embeddings,compaction,imports", "-l", "info", "--without-gossip", "--without-mingle"]
    process = subprocess.Popen(
        command,
        cwd=root,
        env=dict(os.environ),
        stdout=open(log, "w"),  # noqa: SIM115  (the worker's log, open as long as it runs)
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while " ready." not in Path(log).read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the worker did not start: see {log}")
        time.sleep(0.2)
    return process


def background_done(worker: bool) -> None:
    """Until the embedding runs the appends queued have ended (in this process, or on the worker)."""
    if not worker:
        from threadmem.features.embeddings.tasks import wait_for_background

        wait_for_background(timeout=300)
        return
    from config.celery import app

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        with app.connection_for_write() as conn:
            waiting = sum(
                conn.default_channel.client.llen(queue) for queue in ("threadmem", "embeddings", "compaction")
            )
        active = app.control.inspect(timeout=1.0).active() or {}
        if not waiting and not any(active.values()):
            return
        time.sleep(0.2)
    raise SystemExit("the worker's runs did not end in 300 s")


def append_then_delete(owner, runs: int, worker: bool) -> None:
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    from threadmem.models import Deletion, Message

    token, _ = Token.objects.get_or_create(user=owner)
    client = APIClient(HTTP_HOST="localhost")
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    statuses, clean, recorded, seconds, pieces = [], 0, 0, [], []
    size = APPENDED // APPEND_BATCHES
    for run in range(runs):
        channel = f"bench:append-then-delete:{time.time_ns()}:{run}"
        assert client.post("/api/v1/threads/", {"channel": channel}, format="json").status_code == 201
        for start in range(0, APPENDED, size):
            batch = [{"role": "user", "content": f"{n}: {TEXT[:240]}"} for n in range(start, start + size)]
            response = client.post(f"/api/v1/threads/{channel}/messages/", batch, format="json")
            assert response.status_code == 201, response.content
        from threadmem.models import Thread

        thread_id = Thread.objects.get(owner=owner, channel=channel).pk
        message_ids = list(Message.objects.filter(thread_id=thread_id).values_list("pk", flat=True))
        started = time.perf_counter()
        response = client.delete(f"/api/v1/threads/{channel}/")
        seconds.append(time.perf_counter() - started)
        statuses.append(response.status_code)
        if response.status_code == 200:
            pieces.append(response.json()["counts"].get("chunks", 0))
        background_done(worker)
        left = rows_left(thread_id, message_ids)
        records = Deletion.objects.filter(channel=channel).count()
        clean += not left
        recorded += records == 1
        if response.status_code >= 300 or left or records != 1:
            print(
                f"run {run + 1}: DELETE {response.status_code} {response.content[:200]!r}; "
                f"left {left}; records {records}"
            )
    ordered = sorted(seconds)
    print(
        f"{len(statuses)} runs: {sum(200 <= s < 300 for s in statuses)} x 2xx ({sorted(set(statuses))}), "
        f"{clean} with no row of the thread left, {recorded} with one Deletion record; "
        f"DELETE median {statistics.median(ordered) * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms; "
        f"pieces the embedding had stored when deleted: {min(pieces, default=0)} to {max(pieces, default=0)} "
        f"of ~{APPENDED} (runs with some but not all: {sum(0 < p < APPENDED for p in pieces)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument(
        "--append-then-delete", action="store_true", help="a delete right after an append, --runs times"
    )
    parser.add_argument("--worker", action="store_true", help="with --append-then-delete: a Celery worker embeds")
    args = parser.parse_args()

    import os

    url = os.environ["DATABASE_URL"]
    if url.startswith("postgres"):
        from database import migrated_database

        migrated_database(url)
    else:
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model
    from django.db import connection

    owner, _ = get_user_model().objects.get_or_create(username="bench-delete")
    if args.append_then_delete:
        from config.celery import app

        if args.worker and app.conf.task_always_eager:
            raise SystemExit("--worker needs CELERY_BROKER_URL")
        if not args.worker:
            app.conf.task_always_eager = True
        where = "a Celery worker" if args.worker else "this process"
        print(f"{connection.vendor}: {APPENDED} messages appended, then the thread deleted at once; {where} embeds")
        worker = start_worker(f"/tmp/bench-delete-worker-{os.getpid()}.log") if args.worker else None
        try:
            append_then_delete(owner, args.runs or 20, args.worker)
        finally:
            if worker is not None:
                os.killpg(worker.pid, 15)
                worker.wait(timeout=30)
        return
    args.runs = args.runs or 1
    print(f"{connection.vendor}: a thread of {args.messages:,} messages deleted while another thread takes appends")
    for run in range(args.runs):
        seconds, latencies, counts = run_once(owner, args.messages, run)
        rows = ", ".join(f"{name} {count:,}" for name, count in counts.items() if isinstance(count, int) and count)
        if latencies:
            ordered = sorted(latencies)
            p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
            waits = (
                f"{len(latencies)} appends meanwhile: median {statistics.median(latencies) * 1000:.1f} ms, "
                f"p99 {p99 * 1000:.1f} ms, max {ordered[-1] * 1000:.1f} ms"
            )
            verdict = "met" if ordered[-1] <= APPEND_MAX_SECONDS else "NOT met"
        else:
            waits, verdict = "no append finished during the delete", "NOT met"
        print(f"run {run + 1}: delete {seconds:.2f} s ({rows}); {waits}; appends <= 1 s {verdict}")


if __name__ == "__main__":
    main()
