"""PostgreSQL with threadmem_search 1.1: token indexes, which narrow a global search to the fields holding a term.

``threadmem_tokens(text)`` (pg/threadmem_tokens.c) is the set of a field's
tokens (threadmem.lib.tokens: runs of ASCII letters and digits, lowered, cut
to 32 characters) as a tsvector without positions; a field whose distinct
tokens reach 500,000 bytes is the one token ``!all`` instead, which every
token query also asks for. A GIN index over it, on message content and on
tool-argument leaves, reads a term such as ``prebak-170.internal`` or
``/srv/presamar/ru35.log`` from exact posting lists, where the trigram
indexes intersect long lists of common trigrams. Search still re-checks
every row literally.

Where the database has no threadmem_search, or the server's build is older
than 1.1 (``make pg-extension`` installs it), nothing changes: search keeps
the trigram indexes. To add the token indexes later, migrate back to 0013
and forward again. ANALYZE afterwards gives the planner the expression's
statistics (how common each token is), which it reads to choose between
this index and reading the newest messages.
"""

from __future__ import annotations

from django.db import migrations

INDEXES = (
    ("message_content_tokens", "threadmem_message", "content"),
    ("toolarg_value_tokens", "threadmem_toolargument", "value"),
)


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_extension e JOIN pg_available_extension_versions v "
            "ON v.name = e.extname AND v.version = '1.1' WHERE e.extname = 'threadmem_search'"
        )
        if cursor.fetchone() is None:
            return
    schema_editor.execute("ALTER EXTENSION threadmem_search UPDATE TO '1.1'")
    for name, table, column in INDEXES:
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {table} USING gin (threadmem_tokens({column}))")
    for _name, table, _column in INDEXES:
        schema_editor.execute(f"ANALYZE {table}")


def backward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, _table, _column in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("threadmem", "0013_thread_source_db_default")]

    operations = [migrations.RunPython(forward, backward)]
