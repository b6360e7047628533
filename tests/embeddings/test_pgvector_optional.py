"""A PostgreSQL without pgvector migrates and serves: embeddings are stored as bytes and ranked in NumPy.

A fresh database migrated by a process told the server has no pgvector
(``threadmem.infrastructure.fields.server_offers_pgvector`` answering no) stands for a stock
server: the column's type decides everything after. Real processes: the
migration, ``manage.py check`` (which warns), and a script that appends, embeds
through the loopback fake model server and searches.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from tests.support.semantic import EVIDENCE, PARAPHRASE

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = f"""
from django.contrib.auth import get_user_model
from threadmem.domain import services
from threadmem.features.embeddings import thread_embedding as embeddings
from threadmem.features.search import search_memory
owner = get_user_model().objects.create_user("owner")
thread = services.thread_create(owner=owner, channel="ops")
(evidence,) = services.messages_append(thread=thread, messages=services.messages_parse(
    [{{"role": "tool", "tool_call_id": "c1", "content": {EVIDENCE!r}}}]))
embeddings.embed_thread(thread_id=thread.pk)
result = search_memory(user=owner, query={PARAPHRASE!r}, channel="ops")
print("EVIDENCE-ID", evidence.id)
print(result.text)
"""
# Migrate as on a server without the extension: the one question the code asks before the column exists.
MIGRATE_WITHOUT_PGVECTOR = """
import threadmem.infrastructure.fields
from django.core.management import call_command
threadmem.infrastructure.fields.server_offers_pgvector = lambda cursor: False
call_command("migrate", interactive=False, verbosity=0)
"""


@pytest.fixture
def stock_database(django_db_blocker) -> Iterator[str]:
    """A database of its own on the test server, dropped afterwards."""
    if connection.vendor != "postgresql":
        pytest.skip("pgvector is PostgreSQL's")
    db = connection.settings_dict
    server = f"postgresql://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    name = f"threadmem_stock_{os.getpid()}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield f"{server.replace('postgresql://', 'postgres://')}/{name}"
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_a_database_without_pgvector_migrates_warns_and_ranks_in_numpy(stock_database, fake_openai_server):
    env = {
        **{k: v for k, v in os.environ.items() if k != "CELERY_BROKER_URL"},
        "DATABASE_URL": stock_database,
        "OPENAI_BASE_URL": fake_openai_server.base_url,
        "OPENAI_API_KEY": fake_openai_server.api_key,
        "THREADMEM_EMBEDDING_MODEL": fake_openai_server.embedding_model,
    }
    migrated = manage("shell", "-c", MIGRATE_WITHOUT_PGVECTOR, env=env)
    assert migrated.returncode == 0, migrated.stderr[-2000:]
    with psycopg.connect(stock_database.replace("postgres://", "postgresql://")) as db:
        (column,) = db.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = 'threadmem_chunk'::regclass AND attname = 'embedding'"
        ).fetchone()
        assert column == "bytea"
        assert db.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None

    checked = manage("check", env=env)
    assert "threadmem.W001" in checked.stderr + checked.stdout

    searched = manage("shell", "-c", SCRIPT, env=env)
    assert searched.returncode == 0, searched.stderr[-2000:]
    evidence_id = searched.stdout.split("EVIDENCE-ID ", 1)[1].split()[0]
    semantic = searched.stdout.split("## Other memory results", 1)[1]
    assert f"messageId={evidence_id}" in semantic
    assert EVIDENCE in semantic
