"""Django system checks for what a deployment must know (``manage.py check``)."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Warning, register
from django.db import DatabaseError, connection

from threadmem.fields import pgvector_in_use


@register()
def pgvector_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """PostgreSQL without pgvector works, with the semantic part ranking every chunk exactly: say so."""
    if connection.vendor != "postgresql":
        return []
    try:
        in_use = pgvector_in_use(connection)
    except DatabaseError:  # no database yet: other commands report that themselves
        return []
    if in_use:
        return []
    return [
        Warning(
            "PostgreSQL without pgvector: the semantic part ranks every chunk of a scope exactly, in NumPy, "
            "which slows down as a store grows past a few hundred thousand chunks.",
            hint=(
                "Install pgvector on the server ('make pgvector', or the distribution's postgresql-NN-pgvector), "
                "then on a new database migrate with THREADMEM_PGVECTOR unset."
            ),
            id="threadmem.W001",
        )
    ]
