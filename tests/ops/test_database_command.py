"""``manage.py database`` (run by ``make run`` before ``migrate``): a missing PostgreSQL database is created,
an unreachable server is one line naming the problem, not a traceback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def manage_database(url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": url}
    return subprocess.run(
        [sys.executable, "manage.py", "database"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def server() -> str:
    if connection.vendor != "postgresql":
        pytest.skip("creating a missing database is PostgreSQL's case")
    db = connection.settings_dict
    return f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"


def test_it_creates_a_missing_postgresql_database_once(server):
    name = f"threadmem_missing_{os.getpid()}"
    admin_url = server.replace("postgres://", "postgresql://") + "/postgres"
    try:
        first, again = manage_database(f"{server}/{name}"), manage_database(f"{server}/{name}")
        assert (first.returncode, first.stdout.strip()) == (0, f"created database '{name}'")
        assert (again.returncode, again.stdout.strip()) == (0, "")
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name}")


def test_it_names_an_unreachable_server_in_one_line(server):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    done = manage_database(f"postgres://postgres@127.0.0.1:{closed_port}/threadmem")
    assert done.returncode == 1
    assert "cannot reach the database of DATABASE_URL" in done.stderr
    assert "Traceback" not in done.stderr
