"""Searches with 0 and 1 streaming replica under a load mix of appends and searches (make bench-replicas).

A database of its own (BENCH_REPLICAS_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/threadmem_bench_replicas) is filled with
BENCH_REPLICAS_MESSAGES (20,000) messages in 40 threads of 8 owners. A replica
of the cluster is copied with ``pg_basebackup -R`` into a temporary folder and
started on a free port (the cluster needs a replication line in pg_hba.conf:
scripts/allow-replication.sh). Then the same mix runs twice, in a process of
its own each: without replicas, and with DATABASE_REPLICA_URLS naming the
copy, both with CACHE_URL a Redis (BENCH_REPLICAS_CACHE_URL, default
redis://127.0.0.1:6379/3), as production sets it. BENCH_REPLICAS_CLIENTS (8) threads for BENCH_REPLICAS_SECONDS (30):
30 % appends of 5 messages (the caller's last write remembered, as the API
does), 35 % thread searches, 35 % global searches, each by the thread's owner
through the tools' dispatcher (what MCP calls).

Prints searches/s, p50/p99 of searches and appends, errors, where the reads
went (threadmem_reads by database) and the fallbacks to the primary, and the
load average.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from glob import glob
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATABASE_URL = os.environ.get(
    "BENCH_REPLICAS_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/threadmem_bench_replicas"
)
# Where the runs keep a caller's last write and the fence, as CACHE_URL does in production (a Redis).
CACHE_URL = os.environ.get("BENCH_REPLICAS_CACHE_URL", "redis://127.0.0.1:6379/3")
MESSAGES = int(os.environ.get("BENCH_REPLICAS_MESSAGES", "20000"))
CLIENTS = int(os.environ.get("BENCH_REPLICAS_CLIENTS", "8"))
SECONDS = float(os.environ.get("BENCH_REPLICAS_SECONDS", "30"))
THREADS, OWNERS, BATCH = 40, 8, 5
WORDS = ["deploy", "staging", "nginx", "postgres", "replica", "timeout", "retry", "rollback", "migration", "cache"]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def setup_django() -> None:
    os.environ["DATABASE_URL"] = DATABASE_URL
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ["THREADMEM_COMPACT_AT_CHARS"] = str(10**12)  # appends and searches, not compaction
    import django

    django.setup()


def fill() -> None:
    setup_django()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from threadmem.domain import services

    call_command("migrate", "--noinput", verbosity=0)
    rng = random.Random(7)
    owners = [get_user_model().objects.create_user(f"owner{n}") for n in range(OWNERS)]
    per_thread = MESSAGES // THREADS
    for n in range(THREADS):
        thread = services.thread_create(owner=owners[n % OWNERS], channel=f"replicas:{n}")
        for start in range(0, per_thread, 500):
            batch = [
                {"role": "user", "content": " ".join(rng.choices(WORDS, k=30)) + f" host-{n}-{start + i}.internal"}
                for i in range(min(500, per_thread - start))
            ]
            services.messages_store(thread=thread, messages=services.messages_parse(batch), run_hooks=False)
    call_command("embeddings", verbosity=0)  # the ranked lane's pieces, before the clock starts
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def phase() -> None:
    """One run of the mix in this process; prints its figures as one JSON line."""
    setup_django()
    from django.contrib.auth import get_user_model
    from django.db import connections

    from threadmem.domain import services
    from threadmem.features.tools import tool_answer
    from threadmem.infrastructure import metrics, replicas
    from threadmem.models import Thread

    users = {user.pk: user for user in get_user_model().objects.all()}
    threads = list(Thread.objects.filter(channel__startswith="replicas:").values_list("owner_id", "channel"))
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    deadline = time.monotonic() + SECONDS

    def client(number: int) -> None:
        rng = random.Random(number)
        try:
            while time.monotonic() < deadline:
                owner_id, channel = rng.choice(threads)
                user, roll = users[owner_id], rng.random()
                started = time.perf_counter()
                if roll < 0.3:
                    operation = "append"
                    thread = Thread.objects.get(owner_id=owner_id, channel=channel)
                    batch = [{"role": "user", "content": f"load {number} {rng.choice(WORDS)}"} for _ in range(BATCH)]
                    services.messages_store(thread=thread, messages=services.messages_parse(batch))
                    replicas.wrote(owner_id)
                else:
                    scope = "thread" if roll < 0.65 else "global"
                    operation = f"{scope} search"
                    query = (
                        rng.choice(WORDS) if scope == "thread" else f"host-{channel.split(':')[1]}-{rng.randrange(50)}"
                    )
                    arguments = {"query": query, **({"channel": channel} if scope == "thread" else {})}
                    answer = tool_answer(name="search_memory", arguments=arguments, user=user, surface="mcp")
                    if answer.is_error:
                        errors.append(f"{operation}: {answer.text[:120]}")
                latencies[operation].append((time.perf_counter() - started) * 1000)
        except Exception as error:
            errors.append(repr(error))
        finally:
            connections.close_all()

    workers = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    searches = latencies["thread search"] + latencies["global search"]
    reads = {
        s.labels["database"]: s.value for m in metrics.READS.collect() for s in m.samples if s.name.endswith("_total")
    }
    fallbacks = {
        s.labels["reason"]: s.value
        for m in metrics.READ_FALLBACKS.collect()
        for s in m.samples
        if s.name.endswith("_total")
    }
    print(
        json.dumps(
            {
                "searches_per_second": len(searches) / SECONDS,
                "search_p50": percentile(searches, 0.5),
                "search_p99": percentile(searches, 0.99),
                "appends_per_second": len(latencies["append"]) / SECONDS,
                "append_p50": percentile(latencies["append"], 0.5),
                "append_p99": percentile(latencies["append"], 0.99),
                "errors": errors[:5],
                "error_count": len(errors),
                "reads": reads,
                "fallbacks": fallbacks,
            }
        ),
        flush=True,
    )


def as_postgres(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_replica(root: Path) -> tuple[int, list[str]]:
    """A hot standby of the cluster DATABASE_URL names: its port and its pg_ctl command."""
    bin_dir = Path(sorted(glob("/usr/lib/postgresql/*/bin/pg_basebackup"))[-1]).parent
    server = psycopg.conninfo.conninfo_to_dict(DATABASE_URL.replace("postgres://", "postgresql://"))
    host, port = server.get("host", "127.0.0.1"), str(server.get("port", 5432))
    data, replica_port = root / "data", free_port()
    copy = ["-h", host, "-p", port, "-U", server.get("user", "postgres"), "-D", str(data), "-R", "-X", "stream"]
    subprocess.run(as_postgres([str(bin_dir / "pg_basebackup"), *copy, "-c", "fast", "--no-sync"]), check=True)
    with psycopg.connect(DATABASE_URL.replace("postgres://", "postgresql://"), autocommit=True) as primary:
        names = ["max_connections", "max_worker_processes", "max_wal_senders", "max_locks_per_transaction"]
        inherited = primary.execute("SELECT name, setting FROM pg_settings WHERE name = ANY(%s)", [names]).fetchall()
    conf = [f"port = {replica_port}", "listen_addresses = '127.0.0.1'", f"unix_socket_directories = '{root}'"]
    conf += ["hot_standby = on", "fsync = off", *(f"{name} = {value}" for name, value in inherited)]
    (data / "postgresql.conf").write_text("\n".join(conf) + "\n")
    (data / "pg_hba.conf").write_text("local all all trust\nhost all all 127.0.0.1/32 trust\n")
    if os.geteuid() == 0:
        for name in ("postgresql.conf", "pg_hba.conf"):
            shutil.chown(data / name, "postgres")
    ctl = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w"]
    subprocess.run(as_postgres([*ctl, "start"]), check=True, capture_output=True)
    return replica_port, ctl


def run_phase(replica_url: str | None) -> dict:
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_REPLICA_URLS"}
    # Both runs on the shared cache production has: with replicas, manage.py check refuses a process-local one.
    env["CACHE_URL"] = CACHE_URL
    if replica_url:
        env["DATABASE_REPLICA_URLS"] = replica_url
    done = subprocess.run(
        [sys.executable, __file__, "--phase"], env=env, check=True, capture_output=True, text=True, cwd=ROOT
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    server, name = DATABASE_URL.rsplit("/", 1)
    with psycopg.connect(server.replace("postgres://", "postgresql://") + "/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name}")
    log(f"filling {name}: {MESSAGES:,} messages in {THREADS} threads of {OWNERS} owners")
    subprocess.run([sys.executable, __file__, "--fill"], check=True, cwd=ROOT)
    root = Path(tempfile.mkdtemp(prefix="threadmem-bench-replica-"))
    root.chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    log("copying the cluster into a replica (pg_basebackup -R)")
    port, ctl = start_replica(root)
    try:
        results = {}
        for replicas, url in ((0, None), (1, f"postgresql://postgres@127.0.0.1:{port}/{name}")):
            log(f"{replicas} replica(s): {CLIENTS} clients for {SECONDS:g} s")
            results[replicas] = run_phase(url)
        load = os.getloadavg()
    finally:
        subprocess.run(as_postgres([*ctl, "-m", "immediate", "stop"]), capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
    print("\nreplicas  searches/s  p50 ms  p99 ms  appends/s  append p50/p99 ms  errors  reads by database  fallbacks")
    for replicas, figures in results.items():
        print(
            f"{replicas:>8}  {figures['searches_per_second']:>10.1f}  {figures['search_p50']:>6.1f}  "
            f"{figures['search_p99']:>6.1f}  {figures['appends_per_second']:>9.1f}  "
            f"{figures['append_p50']:>7.1f} / {figures['append_p99']:<7.1f}  {figures['error_count']:>6}  "
            f"{figures['reads'] or '-'}  {figures['fallbacks'] or '-'}"
        )
        for error in figures["errors"]:
            print(f"          error: {error}")
    print(f"load average (1, 5, 15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    if "--fill" in sys.argv:
        fill()
    elif "--phase" in sys.argv:
        phase()
    else:
        main()
