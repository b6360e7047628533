"""A vector column on both databases, with or without pgvector.

PostgreSQL with pgvector: its ``vector`` type, without a fixed dimension, so
one column holds what any embedding model returns; the HNSW index is built
per dimension on ``embedding::vector(N)`` (``service.ensure_hnsw_index``).
SQLite, and PostgreSQL without pgvector (a stock server): the vector as
little-endian float32 bytes, ranked exactly in NumPy. Which one a database has is decided when migration 0005
creates the column, and read back from the column itself afterwards.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db import models
from pgvector import Vector

FLOAT32 = np.dtype("<f4")


_COLUMN_TYPE = (
    "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a"
    " WHERE a.attrelid = to_regclass('threadmem_chunk') AND a.attname = 'embedding'"
)


def server_offers_pgvector(cursor: Any) -> bool:
    """Whether the server has pgvector installed (a function of its own, so a test can stand for a stock server)."""
    cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
    return cursor.fetchone() is not None


def pgvector_in_use(connection: Any) -> bool:
    """Whether this database keeps embeddings in pgvector's ``vector`` column (cached per connection).

    Before the column exists (migrating): when the server offers the extension.
    """
    if connection.vendor != "postgresql":
        return False
    cached = getattr(connection, "threadmem_pgvector", None)
    if cached is not None:
        return cached
    with connection.cursor() as cursor:
        cursor.execute(_COLUMN_TYPE)
        row = cursor.fetchone()
        in_use = row[0] == "vector" if row is not None else server_offers_pgvector(cursor)
    if row is not None:  # a decision made by the column itself holds for the connection's life
        connection.threadmem_pgvector = in_use
    return in_use


class EmbeddingField(models.Field):
    description = "Embedding vector (pgvector on PostgreSQL, float32 bytes on SQLite)"
    empty_strings_allowed = False

    def db_type(self, connection: Any) -> str:
        if connection.vendor != "postgresql":
            return "blob"
        return "vector" if pgvector_in_use(connection) else "bytea"

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if value is None:
            return None
        array = np.asarray(value, dtype=FLOAT32)
        if pgvector_in_use(connection):
            return Vector(array).to_text()
        return array.tobytes()

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> np.ndarray | None:
        if value is None:
            return None
        if isinstance(value, (bytes, memoryview)):
            return np.frombuffer(bytes(value), dtype=FLOAT32)
        return Vector.from_text(value).to_numpy()

    def to_python(self, value: Any) -> np.ndarray | None:
        if value is None or isinstance(value, np.ndarray):
            return value
        return np.asarray(value, dtype=FLOAT32)
