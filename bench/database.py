"""The benchmarks' own PostgreSQL database: created on first use."""

from __future__ import annotations

import psycopg
from psycopg import sql


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
