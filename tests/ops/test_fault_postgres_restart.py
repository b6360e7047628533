"""PostgreSQL restarted under appends: every acknowledged batch is there whole, none is partial, and the
service recovers by itself.

A throwaway cluster (initdb in a temporary folder, its own port; never the
machine's shared server) serves a real HTTP server (``manage.py runserver``)
while four clients append batches of ten messages. Midway the cluster
restarts. Batches carry ``source_id``s, so a client retries every batch that
was not acknowledged, as a real client would; at the end every batch is
stored exactly once.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from tests.support.mcp_client import free_port
from tests.support.postgres_server import as_postgres, scratch_folder

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]
BINARIES = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
CLIENTS, BATCHES, BATCH = 4, 12, 10
CHANNEL = "fault:restart"


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[list[str], int]]:
    if connection.vendor != "postgresql" or not BINARIES:
        pytest.skip("needs PostgreSQL's server binaries (initdb, pg_ctl)")
    bin_dir = Path(BINARIES[-1]).parent
    root = scratch_folder("threadmem-pg-")
    data, port = root / "data", free_port()
    subprocess.run(
        as_postgres([str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "--no-sync"]),
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    ctl = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-o", options, "-w"]
    subprocess.run(as_postgres([*ctl, "start"]), check=True, capture_output=True)
    try:
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", autocommit=True) as admin:
            admin.execute("CREATE DATABASE threadmem")
        yield ctl, port
    finally:
        subprocess.run(as_postgres([*ctl, "-m", "immediate", "stop"]), capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def server(cluster) -> Iterator[tuple[str, str]]:
    _, db_port = cluster
    env = {
        **{k: v for k, v in os.environ.items() if k != "CELERY_BROKER_URL"},
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{db_port}/threadmem",
        "DJANGO_SUPERUSER_PASSWORD": "fault-test",
    }
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True, timeout=300)
    subprocess.run(
        [*manage, "createsuperuser", "--noinput", "--username", "fault", "--email", "fault@example.com"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    made = subprocess.run(
        [*manage, "drf_create_token", "fault"], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    token = made.stdout.split()[2]
    port = free_port()
    process = subprocess.Popen(
        [*manage, "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/api/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                call(base, token, "/threads/", {"channel": CHANNEL})
                break
            except OSError:
                assert time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.2)
        yield base, token
    finally:
        process.terminate()
        process.wait(timeout=30)


def call(base: str, token: str, path: str, body: object) -> int:
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_appends_across_a_database_restart_are_stored_whole_and_once(cluster, server):
    ctl, db_port = cluster
    base, token = server
    acknowledged: set[str] = set()
    failures: list[int] = []
    lock = threading.Lock()

    def client(number: int) -> None:
        for b in range(BATCHES):
            batch = f"c{number}-b{b}"
            body = [{"role": "user", "content": f"{batch} m{m}", "source_id": f"{batch}-m{m}"} for m in range(BATCH)]
            while True:  # a real client retries what was not acknowledged
                try:
                    status = call(base, token, f"/threads/{CHANNEL}/messages/", body)
                except OSError:
                    status = 0
                if status == 201:
                    with lock:
                        acknowledged.add(batch)
                    break
                with lock:
                    failures.append(status)
                time.sleep(0.1)
            time.sleep(0.05)

    clients = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for c in clients:
        c.start()
    while len(acknowledged) < CLIENTS * BATCHES // 3:
        time.sleep(0.05)
    subprocess.run(as_postgres([*ctl, "-m", "fast", "restart"]), check=True, capture_output=True)
    with lock:
        at_restart = len(acknowledged)
    for c in clients:
        c.join(timeout=120)

    with psycopg.connect(f"postgresql://postgres@127.0.0.1:{db_port}/threadmem") as db:
        rows = db.execute(
            "SELECT m.source_id, m.seq FROM threadmem_message m JOIN threadmem_thread t ON t.id = m.thread_id"
            " WHERE t.channel = %s ORDER BY m.seq",
            [CHANNEL],
        ).fetchall()
    source_ids = [source_id for source_id, _ in rows]
    assert at_restart < CLIENTS * BATCHES  # the restart came while clients were appending
    assert len(acknowledged) == CLIENTS * BATCHES  # the service recovered: every client finished
    assert len(source_ids) == len(set(source_ids)) == CLIENTS * BATCHES * BATCH  # whole and once
    assert [seq for _, seq in rows] == list(range(1, len(rows) + 1))
    assert all(status != 201 for status in failures)
    print(f"restart after {at_restart} acknowledged batches; {len(failures)} refused attempts: {sorted(set(failures))}")
