"""Ingest throughput on PostgreSQL: batch appends through the API beside the database's own rate.

    .venv/bin/python bench/ingest.py [--runs 5] [--batches 4] [--batch-size 500]

DATABASE_URL (default postgres://postgres@127.0.0.1:5432/threadmem_bench) must
point at PostgreSQL; the database is created if missing and migrated. The
bench adds its own threads (channels ``bench:ingest:…``) and deletes them at
the end, so it never touches other rows.

Each run appends the same batches of realistic messages (500-2,000
characters, a quarter of them assistant tool calls whose arguments become
ToolArgument rows) twice, one after the other in the same table with the
same indexes (trigram GIN on content, lz4):

* api: POST /api/v1/threads/{channel}/messages/ through DRF's in-process
  client with token auth: JSON parsing, validation, seq reservation, the
  inserts (messages and tool-argument leaves), and the JSON answer with every
  stored message. Request bodies are encoded before the clock starts.
* db executemany: psycopg ``executemany`` of the same message rows into
  threadmem_message, one transaction per batch: the database's own rate, the
  reference of the target.
* db COPY: the same rows with COPY, one transaction per batch: the floor. The
  service itself stores batches with COPY on PostgreSQL (store._pg_cursor).

The api side also writes what search needs beyond those rows: the
tool-argument leaves (about 0.75 rows per message here, trigram-indexed too),
the seq reservation and the automatic-compaction check. Automatic compaction
itself is switched off (THREADMEM_COMPACT_AT_CHARS): it is a worker's job.

Each run goes twice: in the default configuration (the token index,
migration 0022) and with the token index dropped (built again after). It
prints the rates per run and configuration, the medians, api/executemany
(target: at least 0.70) beside api/COPY, and the default's API rate over the
rate without the token index (target: at least 0.60). A fifth side,
"api, redaction off", appends the same batches through the API with
``THREADMEM_REDACT_SECRETS`` off: api over it is secret redaction's cost
(target: at least 0.85), measured batch by batch beside it.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from datetime import UTC, datetime
from typing import Any

from database import django_environment, migrated_database, require_postgres
from filler import filler

# Automatic compaction is its own work (a worker's, with a broker): keep it out of the ingest figure.
django_environment("postgres://postgres@127.0.0.1:5432/threadmem_bench", compaction=False)

import psycopg  # noqa: E402

from threadmem.lib.jsonleaves import string_leaves  # noqa: E402

TARGET_RATIO = 0.70
# Appends with the token index (the default) against the same store without it.
DEFAULT_RATIO = 0.60
# Appends with secrets redacted (the default) against the same appends stored as they came.
REDACTION_RATIO = 0.85
CHANNEL_PREFIX = "bench:ingest:"

# One string split into words reads better than a list of a hundred literals.
WORDS = (  # noqa: SIM905
    "the api deploy staging release rollback service restart config database index migration query "
    "latency timeout error warning retry worker queue cache token session user request response header "
    "body status check health metric log journal kernel memory disk volume mount network socket port "
    "host cluster node pod container image registry build pipeline artifact commit branch merge review "
    "test failure success because after before while when then found fixed changed updated created "
    "removed missing expected connection refused permission denied not found unavailable degraded "
    "healthy running stopped pending"
).split()
HOSTS = ["staging-7.example.net", "db-primary.internal", "web-3.prod.example.net", "cache-1.internal", "10.4.2.17"]
PATHS = [
    "/srv/api/shared/.env.staging",
    "/etc/nginx/sites-enabled/api.conf",
    "orders/migrations/0042_orders_customer_id_idx.py",
    "C:\\Users\\ops\\deploy.ps1",
    "/var/log/api/error.log",
    "src/billing/invoice.py",
]


def text(rng: random.Random, chars: int) -> str:
    """Log- and chat-like text: words, hosts, paths, numbers and ids."""
    return filler(chars, lambda: _part(rng))


def _part(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.04:
        return rng.choice(HOSTS)
    if roll < 0.08:
        return rng.choice(PATHS)
    if roll < 0.14:
        return str(rng.randrange(10**6))
    if roll < 0.17:
        return f"{rng.getrandbits(48):012x}"
    if roll < 0.19:
        return ".\n"
    return rng.choice(WORDS)


def make_batch(rng: random.Random, size: int, batch_index: int) -> list[dict]:
    session = f"bench-session-{batch_index}"
    messages: list[dict] = []
    for index in range(size):
        kind = index % 4
        if kind == 0:
            messages.append({"role": "user", "content": text(rng, rng.randint(500, 1200)), "session_id": session})
        elif kind == 1:
            call_id = f"call_{batch_index}_{index}"
            arguments = {
                "command": f"ssh deploy@{rng.choice(HOSTS)} '{text(rng, rng.randint(40, 160))}'",
                "files": [{"path": rng.choice(PATHS), "content": text(rng, rng.randint(200, 600))}],
            }
            messages.append(
                {
                    "role": "assistant",
                    "content": text(rng, rng.randint(500, 900)),
                    "tool_calls": [{"id": call_id, "name": "shell", "arguments": arguments}],
                    "session_id": session,
                }
            )
        elif kind == 2:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": f"call_{batch_index}_{index - 1}",
                    "content": text(rng, rng.randint(1200, 2000)),
                    "session_id": session,
                }
            )
        else:
            messages.append({"role": "assistant", "content": text(rng, rng.randint(500, 1500)), "session_id": session})
    return messages


PLAIN = "api, redaction off"
SIDES = ["api", "executemany", "executemany+leaves", "copy", PLAIN]
SIDE_DESCRIPTIONS = {
    "api": "POST the batch through the API",
    PLAIN: "the same with THREADMEM_REDACT_SECRETS off (the cost of redaction)",
    "executemany": "psycopg executemany of the message rows (the target's reference)",
    "executemany+leaves": "the same, plus the tool-argument leaf rows the API also stores",
    "copy": "COPY of the message rows",
}

MESSAGE_COLUMNS = (
    "thread_id, generation, seq, role, kind, content, tool_calls, tool_call_id, session_id,"
    " model_visible, isolated, created_at"
)
INSERT_MESSAGE = f"INSERT INTO threadmem_message ({MESSAGE_COLUMNS}) VALUES ({', '.join(['%s'] * 12)})"
COPY_MESSAGES = f"COPY threadmem_message ({MESSAGE_COLUMNS}) FROM STDIN"
INSERT_TOOL_ARGUMENT = (
    "INSERT INTO threadmem_toolargument (message_id, thread_id, call_index, tool_call_id, tool_name, path, value)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s)"
)


def message_rows(batch: list[dict], *, thread_id: int, first_seq: int) -> list[tuple]:
    now = datetime.now(UTC)
    return [
        (
            thread_id,
            1,
            first_seq + offset,
            m["role"],
            "message",
            m["content"],
            json.dumps(m.get("tool_calls", [])),
            m.get("tool_call_id", ""),
            m.get("session_id", ""),
            True,
            False,
            now,
        )
        for offset, m in enumerate(batch)
    ]


def tool_argument_leaves(message: dict) -> list[tuple]:
    """(call_index, tool_call_id, tool_name, path, value) per string leaf, as the service stores them."""
    return [
        (index, call["id"], call["name"], path, value)
        for index, call in enumerate(message.get("tool_calls", []))
        for path, value in string_leaves(call["arguments"])
    ]


def db_executemany(conn: psycopg.Connection, rows: list[tuple]) -> None:
    with conn.transaction(), conn.cursor() as cursor:
        cursor.executemany(INSERT_MESSAGE, rows)


def db_executemany_with_leaves(conn: psycopg.Connection, rows: list[tuple], batch: list[dict]) -> None:
    with conn.transaction(), conn.cursor() as cursor:
        cursor.executemany(INSERT_MESSAGE + " RETURNING id", rows, returning=True)
        ids = []
        while True:
            ids.append(cursor.fetchone()[0])
            if not cursor.nextset():
                break
        thread_id = rows[0][0]
        leaves = [
            (message_id, thread_id, *leaf)
            for message_id, message in zip(ids, batch, strict=True)
            for leaf in tool_argument_leaves(message)
        ]
        cursor.executemany(INSERT_TOOL_ARGUMENT, leaves)


def db_copy(conn: psycopg.Connection, rows: list[tuple]) -> None:
    with conn.transaction(), conn.cursor() as cursor, cursor.copy(COPY_MESSAGES) as copy:
        for row in rows:
            copy.write_row(row)


def vacuum_analyze(connection: Any) -> None:
    """Start from a clean table with fresh statistics, as autovacuum keeps a service's.

    Earlier runs leave their rows deleted but not vacuumed; with stale
    statistics the planner may pick the superseded_by index for "IS NULL"
    and walk every dead entry (the automatic-compaction check after each
    append went from 4 ms to 20 ms that way).
    """
    with connection.cursor() as cursor:
        for table in ("threadmem_message", "threadmem_toolargument", "threadmem_thread"):
            cursor.execute(f"VACUUM ANALYZE {table}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--batches", type=int, default=4, help="batches per run")
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    url = require_postgres("bench/ingest.py")
    dbname = migrated_database(url)

    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    from threadmem.models import Message, Thread

    vacuum_analyze(connection)
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    user, _ = get_user_model().objects.get_or_create(username="bench-ingest")
    token, _ = Token.objects.get_or_create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")

    rng = random.Random(args.seed)
    batches = [make_batch(rng, args.batch_size, index) for index in range(args.batches)]
    bodies = [json.dumps(batch).encode() for batch in batches]
    chars = [len(m["content"]) for batch in batches for m in batch]
    calls = sum(1 for batch in batches for m in batch if m.get("tool_calls"))
    leaves = sum(len(tool_argument_leaves(m)) for batch in batches for m in batch)
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        server = cursor.fetchone()[0]
    print(f"threadmem ingest · PostgreSQL {server} · database {dbname}")
    print(
        f"{args.runs} runs × {args.batches} batches × {args.batch_size} messages: content {min(chars)}-{max(chars)}"
        f" chars (mean {statistics.mean(chars):.0f}), {calls / len(chars):.0%} with tool calls"
        f" ({leaves / len(chars):.2f} tool-argument leaves a message)"
    )
    for side in SIDES:
        print(f"  {side}: {SIDE_DESCRIPTIONS[side]}")
    print("sides take turns batch by batch in the same tables (the order rotating); rates in messages/s")

    from threadmem.features.search.database.capabilities import capabilities
    from threadmem.features.search.database.token_index import token_indexes_create, token_indexes_drop

    # The default configuration (the token index, migration 0022) beside the same store without it, run by run.
    both = capabilities().tokens_function
    configurations = ["default", "without token index"] if both else ["default"]
    if not both:
        print("(no threadmem_search 2.0 here: the default has no token index, one configuration)")
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    db_conn = psycopg.connect(psycopg.conninfo.make_conninfo(url))
    rates = {name: {side: [] for side in SIDES} for name in configurations}
    made: list[int] = []
    try:
        for run in range(args.runs):
            for name in configurations:
                if both and name == "default":
                    token_indexes_create()
                elif both:
                    token_indexes_drop()
                made += run_sides(client, user, db_conn, batches, bodies, f"{stamp}:{run}:{name}", rates[name])
                per_side = " · ".join(f"{side} {rates[name][side][-1]:,.0f}" for side in SIDES)
                print(f"  run {run + 1}, {name}: {per_side}", flush=True)
    finally:
        db_conn.close()
        if both:
            token_indexes_create()  # the default configuration, whatever run stopped
        from threadmem.features.embeddings import tasks

        tasks.wait_for_background()  # the appends' embedding runs (the static model) end before their rows go
        Message.objects.filter(thread_id__in=made).delete()
        Thread.objects.filter(pk__in=made).delete()
        vacuum_analyze(connection)

    medians = {}
    for name in configurations:
        median = medians[name] = {side: statistics.median(values) for side, values in rates[name].items()}
        print(f"{name}: median " + " · ".join(f"{side} {median[side]:,.0f}" for side in SIDES))
        print(
            " " * len(name)
            + "  ratios "
            + " · ".join(f"api/{side} {median['api'] / median[side]:.2f}" for side in SIDES[1:])
        )
        ratio = median["api"] / median[PLAIN]
        verdict = "meets" if ratio >= REDACTION_RATIO else "BELOW"
        print(f"{' ' * len(name)}  {verdict} the target api redaction on / off >= {REDACTION_RATIO:.2f} ({ratio:.2f})")
        ratio = median["api"] / median["executemany"]
        verdict = "meets" if ratio >= TARGET_RATIO else "BELOW"
        print(f"{' ' * len(name)}  {verdict} the target api/executemany >= {TARGET_RATIO:.2f} ({ratio:.2f})")
    if len(configurations) == 2:
        ratio = medians["default"]["api"] / medians["without token index"]["api"]
        verdict = "meets" if ratio >= DEFAULT_RATIO else "BELOW"
        print(f"{verdict} the target api default / api without the token index >= {DEFAULT_RATIO:.2f} ({ratio:.2f})")


def run_sides(client, user, db_conn, batches, bodies, label: str, rates: dict[str, list[float]]) -> list[int]:
    """One run: every batch through each side, the sides' order rotating; the threads it made."""
    from threadmem.domain import services

    batch_size = len(batches[0])
    per_run = len(batches) * batch_size
    threads = {
        side: services.thread_create(owner=user, channel=f"{CHANNEL_PREFIX}{label}:{n}") for n, side in enumerate(SIDES)
    }
    from django.conf import settings

    paths = {side: f"/api/v1/threads/{threads[side].channel}/messages/" for side in ("api", PLAIN)}
    seconds = dict.fromkeys(SIDES, 0.0)
    for index, (batch, body) in enumerate(zip(batches, bodies, strict=True)):
        rows = {
            side: message_rows(batch, thread_id=threads[side].pk, first_seq=index * batch_size + 1) for side in SIDES
        }
        for side in SIDES[index % len(SIDES) :] + SIDES[: index % len(SIDES)]:
            started = time.perf_counter()
            if side in paths:
                settings.THREADMEM_REDACT_SECRETS = side == "api"
                response = client.post(paths[side], body, content_type="application/json")
                if response.status_code != 201:
                    raise SystemExit(f"append failed: {response.status_code} {response.content[:300]!r}")
            elif side == "executemany":
                db_executemany(db_conn, rows[side])
            elif side == "executemany+leaves":
                db_executemany_with_leaves(db_conn, rows[side], batch)
            else:
                db_copy(db_conn, rows[side])
            seconds[side] += time.perf_counter() - started
    for side in SIDES:
        rates[side].append(per_run / seconds[side])
    return [thread.pk for thread in threads.values()]


if __name__ == "__main__":
    main()
