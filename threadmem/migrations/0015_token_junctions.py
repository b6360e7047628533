"""threadmem_search 1.2: ``threadmem_tokens`` adds junctions; a token index built before gets them.

A junction (``^tion|refu``: the last four characters of a run and the first
four of the next) is what a term of two runs open at both ends asks of a field
(threadmem/lib/tokens.py). The function's code changed with the server's copy
of the extension (``make pg-extension``): a token index built before lacks the
junctions of its older rows, so where one exists it is rebuilt here, which
takes as long as ``manage.py token_index create`` did. Search asks for
junctions only once the extension is 1.2 (search/literal/dialects.py).
"""

from __future__ import annotations

from django.db import migrations

TOKEN_INDEXES = ("message_content_tokens", "toolarg_value_tokens")


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_extension e JOIN pg_available_extension_versions v "
            "ON v.name = e.extname AND v.version = '1.2' "
            "WHERE e.extname = 'threadmem_search' AND e.extversion IN ('1.0', '1.1')"
        )
        if cursor.fetchone() is None:
            return
        cursor.execute("SELECT " + ", ".join(f"to_regclass('{name}') IS NOT NULL" for name in TOKEN_INDEXES))
        present = [name for name, found in zip(TOKEN_INDEXES, cursor.fetchone(), strict=True) if found]
    schema_editor.execute("ALTER EXTENSION threadmem_search UPDATE TO '1.2'")
    for name in present:
        schema_editor.execute(f"REINDEX INDEX {name}")


class Migration(migrations.Migration):
    dependencies = [("threadmem", "0014_token_indexes")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
