"""A vector column on both databases.

PostgreSQL: pgvector's ``vector`` type, without a fixed dimension, so one
column holds what any embedding model returns; the HNSW index is built per
dimension on ``embedding::vector(N)`` (``service.ensure_hnsw_index``).
SQLite: the vector as little-endian float32 bytes, ranked in NumPy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db import models
from pgvector import Vector

FLOAT32 = np.dtype("<f4")


class EmbeddingField(models.Field):
    description = "Embedding vector (pgvector on PostgreSQL, float32 bytes on SQLite)"
    empty_strings_allowed = False

    def db_type(self, connection: Any) -> str:
        return "vector" if connection.vendor == "postgresql" else "blob"

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if value is None:
            return None
        array = np.asarray(value, dtype=FLOAT32)
        if connection.vendor == "postgresql":
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
