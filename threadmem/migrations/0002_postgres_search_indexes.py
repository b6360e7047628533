"""PostgreSQL only: trigram indexes for literal search, lz4 for large text.

Search matches with ``ILIKE '%term%'`` (never Django's ``__icontains``, which
compiles to ``UPPER(col) LIKE UPPER(...)`` and is not served by these
indexes). On SQLite this migration does nothing: search scans there.
"""

from __future__ import annotations

from django.db import migrations

POSTGRES_FORWARD = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    # lz4 decompresses several times faster than pglz: search reads TOAST.
    "ALTER TABLE threadmem_message ALTER COLUMN content SET COMPRESSION lz4",
    "ALTER TABLE threadmem_message ALTER COLUMN tool_calls SET COMPRESSION lz4",
    "ALTER TABLE threadmem_toolargument ALTER COLUMN value SET COMPRESSION lz4",
    "CREATE INDEX IF NOT EXISTS message_content_trgm ON threadmem_message USING gin (content gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS toolarg_value_trgm ON threadmem_toolargument USING gin (value gin_trgm_ops)",
]

POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS toolarg_value_trgm",
    "DROP INDEX IF EXISTS message_content_trgm",
]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in POSTGRES_FORWARD:
        schema_editor.execute(statement)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in POSTGRES_BACKWARD:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("threadmem", "0001_initial")]

    operations = [migrations.RunPython(forward, backward)]
