"""The ORM's half (DATABASE_ROUTERS, set only with replicas): reads where the current read goes, writes on the
primary. Raw SQL asks the same router (``threadmem.domain.db.reading``)."""

from __future__ import annotations

from typing import Any

from django.db import DEFAULT_DB_ALIAS

from threadmem.infrastructure.replicas.rule import alias


class ReplicaRouter:
    def db_for_read(self, model: Any, **hints: Any) -> str:
        return alias()

    def db_for_write(self, model: Any, **hints: Any) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # the same rows on every database

    def allow_migrate(self, db: str, app_label: str, model_name: str | None = None, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS
