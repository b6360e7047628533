"""The token index on by default: built concurrently, so a store of any size keeps taking appends meanwhile.

On PostgreSQL whose server offers threadmem_search 2.0 (``make
pg-extension``): a database at 1.3 has its token index, if it built one,
rebuilt with 2.0's lexemes before the version moves; then each token index
missing (or left invalid by a stopped build) is built with ``CREATE INDEX
CONCURRENTLY``. Search answers without the index until it is valid
(``manage.py token_index status`` shows the phase and percent). A server
without the extension, and SQLite, have nothing to build: search stays
complete there by other means (docs/scaling.md).

The code is this migration's own, as it was when written (a migration runs
the same on every database, whatever the search code becomes); the search
code's copy is ``threadmem.features.search.database.token_index.move_token_indexes``.
"""

from __future__ import annotations

from django.db import migrations

TOKENS_VERSION = "2.0"
OLDER_VERSIONS = ("1.0", "1.1", "1.2", "1.3")
# (index, table, column): the token indexes, one a searched column.
TOKEN_INDEXES = (
    ("message_content_tokens", "threadmem_message", "content"),
    ("toolarg_value_tokens", "threadmem_toolargument", "value"),
)
# The database's extension version, when the server offers TOKENS_VERSION.
UPDATABLE_SQL = (
    "SELECT e.extversion FROM pg_extension e WHERE e.extname = 'threadmem_search' AND EXISTS "
    "(SELECT 1 FROM pg_available_extension_versions v WHERE v.name = e.extname AND v.version = %s)"
)
INVALID_SQL = "SELECT 1 FROM pg_index WHERE indexrelid = to_regclass(%s) AND NOT indisvalid"


def forward(apps, schema_editor):
    """Rebuild a token index of an older version's lexemes before the version moves; build each one missing (or
    left invalid by a stopped build) concurrently; then ANALYZE."""
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(UPDATABLE_SQL, [TOKENS_VERSION])
        found = cursor.fetchone()
        if found is None:  # no threadmem_search TOKENS_VERSION on this server
            return
        if found[0] in OLDER_VERSIONS:
            for name, _table, _column in TOKEN_INDEXES:
                cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
                if cursor.fetchone()[0]:
                    cursor.execute(f"REINDEX INDEX CONCURRENTLY {name}")
            cursor.execute(f"ALTER EXTENSION threadmem_search UPDATE TO '{TOKENS_VERSION}'")
        for name, table, column in TOKEN_INDEXES:
            cursor.execute(INVALID_SQL, [name])
            if cursor.fetchone() is not None:
                cursor.execute(f"DROP INDEX CONCURRENTLY {name}")
            cursor.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} USING gin (threadmem_tokens({column}))"
            )
        for _name, table, _column in TOKEN_INDEXES:
            cursor.execute(f"ANALYZE {table}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY runs outside a transaction

    dependencies = [("threadmem", "0021_plan_tool_call")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
