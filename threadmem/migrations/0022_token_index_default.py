"""The token index on by default: built concurrently, so a store of any size keeps taking appends meanwhile.

On PostgreSQL whose server offers threadmem_search 2.0 (``make
pg-extension``): a database at 1.3 has its token index, if it built one,
rebuilt with 2.0's lexemes before the version moves; then each token index
missing (or left invalid by a stopped build) is built with ``CREATE INDEX
CONCURRENTLY``. Search answers without the index until it is valid
(``manage.py token_index status`` shows the phase and percent). A server
without the extension, and SQLite, have nothing to build: search stays
complete there by other means (docs/scaling.md).
"""

from __future__ import annotations

from django.db import migrations

from threadmem.search.database.token_index import move_token_indexes


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        move_token_indexes(cursor, concurrently=True)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY runs outside a transaction

    dependencies = [("threadmem", "0021_plan_tool_call")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
