"""PostgreSQL, where the server offers it: threadmem's own search extension.

``threadmem_search`` (pg/, installed by scripts/install-pg-extension.sh)
matches an ASCII term case-insensitively at the speed of reading the field,
where ``~*`` and ``lower()`` pay several nanoseconds a byte. Its operator
class ``threadmem_trgm_ops`` is pg_trgm's trigram index with its operators
``~~~`` and ``~~~~`` in the places of LIKE and ILIKE, so the index that
narrows a search to a few rows also serves the fast test that re-checks
them. The trigram indexes of 0002 are rebuilt with it; they keep serving
``~*`` (terms that are not ASCII).

A server without the extension keeps 0002's indexes and search keeps its
``~*`` statements (threadmem.features.search.literal.dialects checks which index it has).
"""

from __future__ import annotations

from django.db import migrations

INDEXES = (
    ("message_content_trgm", "threadmem_message", "content"),
    ("toolarg_value_trgm", "threadmem_toolargument", "value"),
)


def _rebuild(schema_editor, opclass: str) -> None:
    for name, table, column in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")
        schema_editor.execute(f"CREATE INDEX {name} ON {table} USING gin ({column} {opclass})")


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'threadmem_search'")
        if cursor.fetchone() is None:
            return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS threadmem_search")
    _rebuild(schema_editor, "threadmem_trgm_ops")


def backward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    _rebuild(schema_editor, "gin_trgm_ops")
    schema_editor.execute("DROP EXTENSION IF EXISTS threadmem_search")


class Migration(migrations.Migration):
    dependencies = [("threadmem", "0006_search_speed")]

    operations = [migrations.RunPython(forward, backward)]
