"""Load: 50 clients for 60 s of mixed appends and searches against the served app on loopback (make bench-load).

A database of its own (BENCH_LOAD_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/threadmem_bench_load) is pre-filled with
BENCH_LOAD_MESSAGES (50,000) messages in 100 threads of 20 owners through the
service's own write path; then the server is started as production runs it
(the Procfile's web command when there is one, else `manage.py runserver`) and
BENCH_LOAD_CLIENTS clients (50), each with its own keep-alive connection and
an owner's token, run BENCH_LOAD_SECONDS (60) of: 50 % appends of 5 messages
(with source ids), 30 % thread searches, 20 % global searches. Half the global
searches are an owner's (a host name in their 5 threads: small enough to be
read whole), half an operator's (a word, or a host name the trigram index can
narrow, in every thread: the index path within its budget, plan
index-then-recent), so both global plans run under load.

Prints throughput, p50/p95/p99 per operation, errors, the share of global
searches that said they covered less than the whole store (each kind, and
together), and whether every acknowledged message is stored exactly once.
Targets: 0 errors, <= 1 % incomplete global searches, every acknowledged
message present once.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATABASE_URL = os.environ.get("BENCH_LOAD_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/threadmem_bench_load")
MESSAGES = int(os.environ.get("BENCH_LOAD_MESSAGES", "50000"))
CLIENTS = int(os.environ.get("BENCH_LOAD_CLIENTS", "50"))
SECONDS = float(os.environ.get("BENCH_LOAD_SECONDS", "60"))
THREADS, OWNERS, BATCH = 100, 20, 5
WORDS = [
    "deploy",
    "staging",
    "nginx",
    "postgres",
    "replica",
    "timeout",
    "retry",
    "rollback",
    "migration",
    "index",
    "cache",
    "worker",
]
INCOMPLETE = "The global search c"  # bounded.COVERAGE_LINES: "covered only the newest…" / "could not finish…"

GLOBAL_KINDS = ("global (owner)", "global (operator)")  # indexed by "is the caller an operator"

os.environ["DATABASE_URL"] = DATABASE_URL
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.pop("CELERY_BROKER_URL", None)
os.environ["THREADMEM_COMPACT_AT_CHARS"] = str(10**12)  # measure appends and searches, not compaction
os.environ["THREADMEM_TURNS_RATE"] = ""


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def recreate_database() -> None:
    server, name = DATABASE_URL.rsplit("/", 1)
    with psycopg.connect(server.replace("postgres://", "postgresql://") + "/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name}")


def prefill() -> tuple[dict[str, list[str]], str]:
    """Owners, tokens and threads, MESSAGES messages through services.messages_store; channels by token, and
    an operator's token."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from rest_framework.authtoken.models import Token

    from threadmem.domain import services

    call_command("migrate", "--noinput", verbosity=0)
    rng = random.Random(7)
    by_token: dict[str, list[str]] = defaultdict(list)
    owners = [get_user_model().objects.create_user(f"owner{n}") for n in range(OWNERS)]
    tokens = [Token.objects.create(user=owner).key for owner in owners]
    operator = Token.objects.create(user=get_user_model().objects.create_user("operator", is_staff=True)).key
    per_thread = MESSAGES // THREADS
    for n in range(THREADS):
        owner = n % OWNERS
        thread = services.thread_create(owner=owners[owner], channel=f"load:{n}")
        by_token[tokens[owner]].append(thread.channel)
        for start in range(0, per_thread, 500):
            batch = [
                {"role": "user", "content": " ".join(rng.choices(WORDS, k=30)) + f" host-{n}-{start + i}.internal"}
                for i in range(min(500, per_thread - start))
            ]
            services.messages_store(thread=thread, messages=services.messages_parse(batch), run_hooks=False)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return dict(by_token), operator


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(port: int) -> list[str]:
    """The Procfile's web command, run by a shell as a Procfile runner would (PORT set); else runserver."""
    procfile = ROOT / "Procfile"
    if procfile.exists():
        for line in procfile.read_text().splitlines():
            if line.startswith("web:"):
                return ["bash", "-c", "exec " + line.split(":", 1)[1].strip()]
    return [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]


class Client(threading.Thread):
    def __init__(self, number: int, port: int, tokens: tuple[str, str], channels: list[str], deadline: float) -> None:
        super().__init__(daemon=True)
        self.number, self.port, self.channels, self.deadline = number, port, channels, deadline
        self.token, self.operator_token = tokens
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.incomplete: dict[str, int] = defaultdict(int)
        self.acknowledged: list[str] = []
        self.rng = random.Random(number)

    def request(
        self, connection: http.client.HTTPConnection, path: str, body: object, token: str
    ) -> tuple[int, dict | list]:
        payload = json.dumps(body)
        headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        connection.request("POST", path, body=payload, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")

    def global_query(self, operator: bool) -> str:
        """An owner: a host of their threads. An operator: a word or a host with a three-digit number.

        Every host shares the trigrams of "host-" and ".internal"; a two-digit
        number adds none, so the index cannot narrow it over every thread (the
        token index can, docs/search.md) and it is left to an owner's scan.
        """
        host = self.rng.randrange(THREADS)
        if not operator:
            return f"host-{host}-{self.rng.randrange(50)}.internal"
        if self.rng.random() < 0.5:
            return self.rng.choice(WORDS)
        return f"host-{host}-{self.rng.randrange(100, MESSAGES // THREADS)}.internal"

    def run(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        sequence = 0
        while time.monotonic() < self.deadline:
            roll = self.rng.random()
            channel = self.rng.choice(self.channels)
            token = self.token
            if roll < 0.5:
                operation, sequence = "append", sequence + 1
                ids = [f"c{self.number}-{sequence}-{m}" for m in range(BATCH)]
                body: object = [{"role": "user", "content": f"load {i} {channel}", "source_id": i} for i in ids]
                path = f"/api/v1/threads/{channel}/messages/"
            elif roll < 0.8:
                operation, path = "thread search", "/api/v1/search/"
                body = {"query": self.rng.choice(WORDS), "channel": channel}
            else:
                operator = roll >= 0.9
                operation, path = GLOBAL_KINDS[operator], "/api/v1/search/"
                token = self.operator_token if operator else self.token
                body = {"query": self.global_query(operator)}
            started = time.perf_counter()
            try:
                status, answer = self.request(connection, path, body, token)
            except (OSError, http.client.HTTPException, ValueError) as exc:
                self.errors.append(f"{operation}: {type(exc).__name__}: {exc}")
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                continue
            self.latencies[operation].append((time.perf_counter() - started) * 1000)
            if status >= 300:
                self.errors.append(f"{operation}: HTTP {status}")
            elif operation == "append":
                self.acknowledged.extend(ids)
            elif operation in GLOBAL_KINDS and INCOMPLETE in answer["text"]:
                self.incomplete[operation] += 1
        connection.close()


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def main() -> None:
    log(f"database {DATABASE_URL}: {MESSAGES:,} messages in {THREADS} threads of {OWNERS} owners")
    recreate_database()
    by_token, operator = prefill()
    port = free_port()
    command = server_command(port)
    log(f"server: {' '.join(command)}")
    env = {**os.environ, "PORT": str(port), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.2)
        tokens = list(by_token)
        deadline = time.monotonic() + SECONDS
        clients = [
            Client(n, port, (tokens[n % len(tokens)], operator), by_token[tokens[n % len(tokens)]], deadline)
            for n in range(CLIENTS)
        ]
        started = time.monotonic()
        for client in clients:
            client.start()
        for client in clients:
            client.join()
        elapsed = time.monotonic() - started
    finally:
        server.terminate()
        server.wait(timeout=30)

    latencies: dict[str, list[float]] = defaultdict(list)
    for client in clients:
        for operation, values in client.latencies.items():
            latencies[operation].extend(values)
    total = sum(len(v) for v in latencies.values())
    errors = [e for c in clients for e in c.errors]
    latencies["global search"] = [value for kind in GLOBAL_KINDS for value in latencies[kind]]
    globals_run = len(latencies["global search"])
    incomplete_by_kind = {kind: sum(c.incomplete[kind] for c in clients) for kind in GLOBAL_KINDS}
    incomplete = sum(incomplete_by_kind.values())
    acknowledged = [i for c in clients for i in c.acknowledged]
    with psycopg.connect(DATABASE_URL.replace("postgres://", "postgresql://")) as db:
        stored = db.execute(
            "SELECT source_id, count(*) FROM threadmem_message WHERE source_id <> '' GROUP BY source_id"
        ).fetchall()
    counts = dict(stored)
    missing = sum(1 for i in acknowledged if counts.get(i, 0) == 0)
    duplicated = sum(1 for n in counts.values() if n > 1)

    print(f"\n{CLIENTS} clients, {elapsed:.1f} s: {total:,} requests, {total / elapsed:,.0f} requests/s")
    print(f"{'operation':<18} {'count':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for operation in ("append", "thread search", *GLOBAL_KINDS, "global search"):
        values = latencies[operation]
        print(
            f"{operation:<18} {len(values):>8,} {percentile(values, 0.5):>8.1f} "
            f"{percentile(values, 0.95):>8.1f} {percentile(values, 0.99):>8.1f}"
        )
    share = incomplete / globals_run if globals_run else 0.0
    print(f"errors: {len(errors)}{' (first: ' + errors[0] + ')' if errors else ''}")
    for kind, count in incomplete_by_kind.items():
        run = len(latencies[kind])
        print(f"incomplete {kind}: {count} of {run} ({count / run if run else 0.0:.2%})")
    print(f"incomplete global searches: {incomplete} of {globals_run} ({share:.2%}; target <= 1%)")
    print(f"acknowledged messages: {len(acknowledged):,}; missing {missing}, duplicated {duplicated} (target 0, 0)")


if __name__ == "__main__":
    main()
