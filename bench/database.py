"""The benchmarks' own PostgreSQL database, created on first use, and the environment they run Django in."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent


def django_environment(database_url: str, *, compaction: bool = True, embedding: bool = True) -> None:
    """Make the repository importable and point Django at ``database_url`` unless DATABASE_URL names a database.

    ``compaction=False``: no automatic compaction (a worker's job, with a broker), only its threshold check on
    every append. ``embedding=False``: no embedding model either, not even the static one. Call it before
    importing Django.
    """
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DATABASE_URL", database_url)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if not compaction:
        os.environ["THREADMEM_COMPACT_AT_CHARS"] = str(10**12)
    if not embedding:
        os.environ.pop("THREADMEM_EMBEDDING_MODEL", None)
        os.environ["THREADMEM_STATIC_EMBEDDINGS"] = "false"


def require_postgres(script: str, *, verb: str = "measures") -> str:
    """DATABASE_URL, refused unless it names a PostgreSQL database (``script verb PostgreSQL``)."""
    url = os.environ["DATABASE_URL"]
    if not url.startswith(("postgres://", "postgresql://")):
        raise SystemExit(f"{script} {verb} PostgreSQL; DATABASE_URL is {url!r}")
    return url


def ensure_database(url: str) -> str:
    """Create the database DATABASE_URL names if it is missing; return its name."""
    info = psycopg.conninfo.conninfo_to_dict(url)
    name = info.get("dbname")
    if not name:
        raise SystemExit(f"DATABASE_URL names no database: {url}")
    maintenance = psycopg.conninfo.make_conninfo(url, dbname="postgres")
    with psycopg.connect(maintenance, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            print(f"created database {name}")
    return name


def migrated_database(url: str) -> str:
    """``ensure_database``, then Django set up on it and its migrations applied; return its name."""
    name = ensure_database(url)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return name


def lane_memory() -> str:
    """What the process keeps for the lane now, and its peak resident size."""
    import resource

    from threadmem.features.search.ranked import lexicon, spread, vectors

    held = sum(vectors.held_bytes(h) + h.ids.nbytes + h.messages.nbytes for h in vectors._held.values())
    indexed = sum(kept.bytes() for kept in lexicon._kept.values())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return (
        f"kept: vectors {held / 2**20:.0f} MB, sentences' included ({len(vectors._held)} scopes), "
        f"keyword index ~{indexed / 2**20:.0f} MB "
        f"({len(lexicon._kept)} scopes), thread pieces {spread._kept_pieces:,}; peak resident size {peak:.0f} MB"
    )
