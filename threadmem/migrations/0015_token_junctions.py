"""threadmem_search 1.2: ``threadmem_tokens`` adds junctions; a token index built before gets them.

A junction (``^tion|refu``: the last four characters of a run and the first
four of the next) is what a term of two runs open at both ends asks of a field
(threadmem/lib/tokens.py). The function's code changed with the server's copy
of the extension (``make pg-extension``): a token index built before lacks the
junctions of its older rows, so where one exists it is rebuilt here,
concurrently (appends go on; it takes about as long as ``manage.py
token_index create`` did), before the extension's version moves: search asks
for junctions only once the version is 1.2 (search/literal/dialects.py).
"""

from __future__ import annotations

from django.db import migrations

TOKEN_INDEXES = ("message_content_tokens", "toolarg_value_tokens")

# One row, which token indexes exist, when the database has the extension before 1.2 and the server offers 1.2.
UPGRADABLE_SQL = (
    "SELECT "
    + ", ".join(f"to_regclass('{name}') IS NOT NULL" for name in TOKEN_INDEXES)
    + " FROM pg_extension e WHERE e.extname = 'threadmem_search' AND e.extversion IN ('1.0', '1.1') AND EXISTS "
    "(SELECT 1 FROM pg_available_extension_versions v WHERE v.name = e.extname AND v.version = '1.2')"
)


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(UPGRADABLE_SQL)
        found = cursor.fetchone()
    if found is None:
        return
    # Rebuilt first, without blocking appends; search asks for junctions only once the version says 1.2.
    for name, present in zip(TOKEN_INDEXES, found, strict=True):
        if present:
            schema_editor.execute(f"REINDEX INDEX CONCURRENTLY {name}")
    schema_editor.execute("ALTER EXTENSION threadmem_search UPDATE TO '1.2'")


class Migration(migrations.Migration):
    atomic = False  # REINDEX CONCURRENTLY runs outside a transaction

    dependencies = [("threadmem", "0014_token_indexes")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
