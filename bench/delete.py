"""Deleting a large thread, and what appends to other threads wait meanwhile.

    .venv/bin/python bench/delete.py [--messages 100000] [--runs 1]

DATABASE_URL (default postgres://postgres@127.0.0.1:5432/threadmem_bench_delete;
a sqlite:/// URL measures the embedded default) is created and migrated if
missing. Each run builds a thread of ``--messages`` realistic messages
(bench/ingest.py's batches: a quarter of them tool calls, whose arguments
become leaves), then deletes it through ``erase.thread_delete`` while another
thread takes one-message appends back to back on a connection of its own.
It prints the delete's time and the appends' latencies during it (median,
p99, max; target: max at most 1 s), and removes what it added.
"""

from __future__ import annotations

import argparse
import random
import statistics
import threading
import time

from database import django_environment

django_environment("postgres://postgres@127.0.0.1:5432/threadmem_bench_delete", compaction=False, embedding=False)

from ingest import make_batch  # noqa: E402

APPEND_MAX_SECONDS = 1.0
BATCH = 1_000


def build(owner, channel: str, messages: int):
    from threadmem import services

    thread = services.thread_create(owner=owner, channel=channel)
    rng = random.Random(7)
    for index in range(0, messages, BATCH):
        batch = make_batch(rng, min(BATCH, messages - index), index // BATCH)
        services.messages_store(thread=thread, messages=services.messages_parse(batch), run_hooks=False)
    return thread


def appends_until(stop: threading.Event, thread, latencies: list[float]) -> None:
    from django.db import connection

    from threadmem import services

    parsed = services.messages_parse({"role": "user", "content": "an append beside the delete"})
    try:
        while not stop.is_set():
            started = time.perf_counter()
            services.messages_store(thread=thread, messages=parsed, run_hooks=False)
            latencies.append(time.perf_counter() - started)
    finally:
        connection.close()


def run_once(owner, messages: int, run: int) -> tuple[float, list[float], dict]:
    from threadmem.erase.threads import thread_delete
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=1)
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
