"""Console render times on PostgreSQL: a thread of 10,000 messages and a 5 MB message.

    .venv/bin/python bench/console.py [--runs 15]

DATABASE_URL (default postgres://postgres@127.0.0.1:5432/threadmem_bench) must
point at PostgreSQL; the database is created if missing and migrated. The
bench adds its own threads (channels ``bench:console:…``) and deletes them at
the end, so it never touches other rows.

Pages are rendered through Django's test client with a staff session (the
whole stack: middleware, session, queries, templates). For each page it
prints the median render time, the response size and the number of queries.
Paging is what keeps them flat: page 1 and page 100 of a 10,000-message
thread cost about what a 100-message thread does, and every page of a 5 MB
message is about 50 KB, because the 50,000-character slice is cut in SQL
(``substr``), not in Python. (PostgreSQL still decompresses and walks the
characters up to the slice, so later pages of a huge message cost a few tens
of milliseconds more than the first.) For contrast it times fetching the 5 MB
row whole and escaping it, which no page does.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from database import django_environment, migrated_database, require_postgres
from filler import filler

django_environment("postgres://postgres@127.0.0.1:5432/threadmem_bench")

CHANNEL_PREFIX = "bench:console:"
BIG_THREAD_MESSAGES = 10_000
SMALL_THREAD_MESSAGES = 100
HUGE_MESSAGE_CHARS = 5 * 1024 * 1024
SMALL_MESSAGE_CHARS = 50_000
APPEND_BATCH = 1_000
WORDS = (  # noqa: SIM905
    "deploy staging rollout restart config database index migration query latency timeout error retry "
    "worker queue cache token session request response status check health metric journal kernel memory "
    "disk volume network socket port host cluster node pod container image registry build pipeline "
    "commit branch"
).split()


def words(rng: random.Random, chars: int) -> str:
    return filler(chars, lambda: rng.choice(WORDS))


def exchange(rng: random.Random, index: int) -> list[dict]:
    """Four messages: a question, a tool call, its result, an answer."""
    call_id = f"call_{index}"
    return [
        {"role": "user", "content": words(rng, rng.randint(100, 600)), "session_id": "bench"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": call_id, "name": "bash", "arguments": {"command": f"kubectl logs web-{index} --tail 200"}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": words(rng, rng.randint(1_000, 6_000))},
        {"role": "assistant", "content": words(rng, rng.randint(200, 900))},
    ]


def build_thread(services, owner, channel: str, count: int, rng: random.Random):
    thread = services.thread_create(owner=owner, channel=channel, title=f"{count:,} messages")
    pending: list[dict] = []
    index = 0
    while index * 4 < count:
        pending.extend(exchange(rng, index))
        index += 1
        if len(pending) >= APPEND_BATCH:
            services.messages_append(thread=thread, messages=services.messages_parse(pending))
            pending = []
    if pending:
        services.messages_append(thread=thread, messages=services.messages_parse(pending))
    return thread


def measure(client, url: str, runs: int) -> tuple[float, int, int]:
    """Median milliseconds, response bytes and queries of GET url."""
    from django.db import connection

    response = client.get(url)  # warm: templates compiled, connection open
    if response.status_code != 200:
        raise SystemExit(f"GET {url} answered {response.status_code}")
    queries: list[str] = []

    def count(execute, sql, params, many, context):
        queries.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        client.get(url)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), len(response.content), len(queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    dbname = migrated_database(require_postgres("bench/console.py"))

    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.urls import reverse

    from console.selectors import CONTENT_PAGE_CHARS, MESSAGES_PER_PAGE
    from threadmem.domain import services
    from threadmem.models import Message, Thread

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    settings.THREADMEM_MAX_MESSAGE_BYTES = 8 * 1024 * 1024
    # One generation of 10,000 messages: automatic compaction would split it.
    settings.THREADMEM_COMPACT_AT_CHARS = 10**12
    staff, _ = get_user_model().objects.get_or_create(username="bench-console", defaults={"is_staff": True})
    client = Client()
    client.force_login(staff)

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        server = cursor.fetchone()[0]
    print(f"threadmem console · PostgreSQL {server} · database {dbname} · median of {args.runs} renders")

    rng = random.Random(args.seed)
    stamp = f"{time.time_ns()}"
    Thread.objects.filter(channel__startswith=CHANNEL_PREFIX).delete()
    try:
        started = time.perf_counter()
        small = build_thread(services, staff, f"{CHANNEL_PREFIX}{stamp}:small", SMALL_THREAD_MESSAGES, rng)
        big = build_thread(services, staff, f"{CHANNEL_PREFIX}{stamp}:big", BIG_THREAD_MESSAGES, rng)
        holder = services.thread_create(owner=staff, channel=f"{CHANNEL_PREFIX}{stamp}:huge")
        line = "Nov 03 14:31:07 staging-7 api[4121]: pool stats: active=4 idle=3 waiting=0 reused=1234\n"
        huge_text = (line * (HUGE_MESSAGE_CHARS // len(line) + 1))[:HUGE_MESSAGE_CHARS]
        modest, huge = services.messages_append(
            thread=holder,
            messages=services.messages_parse(
                [
                    {"role": "tool", "tool_call_id": "small", "content": huge_text[:SMALL_MESSAGE_CHARS]},
                    {"role": "tool", "tool_call_id": "huge", "content": huge_text},
                ]
            ),
        )
        print(
            f"built {Message.objects.filter(thread__channel__startswith=CHANNEL_PREFIX).count():,} messages "
            f"in {time.perf_counter() - started:.1f} s"
        )

        big_pages = -(-Message.objects.filter(thread=big).count() // MESSAGES_PER_PAGE)
        huge_pages = -(-HUGE_MESSAGE_CHARS // CONTENT_PAGE_CHARS)
        thread_url = reverse("console:thread", args=[big.id])
        huge_url = reverse("console:message", args=[huge.id])
        rows = [
            (f"thread of {SMALL_THREAD_MESSAGES} messages, page 1", reverse("console:thread", args=[small.id])),
            (f"thread of {BIG_THREAD_MESSAGES:,} messages, page 1", thread_url),
            (
                f"thread of {BIG_THREAD_MESSAGES:,} messages, page {big_pages // 2}",
                f"{thread_url}?page={big_pages // 2}",
            ),
            (f"thread of {BIG_THREAD_MESSAGES:,} messages, page {big_pages}", f"{thread_url}?page={big_pages}"),
            (f"message of {SMALL_MESSAGE_CHARS // 1000} KB, page 1", reverse("console:message", args=[modest.id])),
            (f"message of {HUGE_MESSAGE_CHARS // 2**20} MB, page 1", huge_url),
            (
                f"message of {HUGE_MESSAGE_CHARS // 2**20} MB, page {huge_pages // 2}",
                f"{huge_url}?page={huge_pages // 2}",
            ),
            (f"message of {HUGE_MESSAGE_CHARS // 2**20} MB, page {huge_pages}", f"{huge_url}?page={huge_pages}"),
            ("threads list", reverse("console:threads")),
        ]
        print(f"\n{'page':<42} {'median ms':>10} {'bytes':>10} {'queries':>8}")
        for label, page_url in rows:
            ms, size, queries = measure(client, page_url, args.runs)
            print(f"{label:<42} {ms:>10.1f} {size:>10,} {queries:>8}")

        # What paging saves: a page that showed the message whole would fetch
        # it whole and escape all of it, and the browser would get all of it.
        from django.utils.html import escape

        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            whole = escape(Message.objects.values_list("content", flat=True).get(pk=huge.id))
            times.append((time.perf_counter() - start) * 1000)
        print(
            f"\nfor contrast: fetching the {HUGE_MESSAGE_CHARS // 2**20} MB row whole and escaping it takes "
            f"{statistics.median(times):.1f} ms and makes {len(whole.encode()):,} bytes of HTML before any "
            "template or browser work; no console page does it"
        )
    finally:
        for thread in Thread.objects.filter(channel__startswith=CHANNEL_PREFIX):
            Message.objects.filter(thread=thread).update(superseded_by=None)
            thread.delete()


if __name__ == "__main__":
    main()
