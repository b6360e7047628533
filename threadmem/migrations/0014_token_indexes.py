"""PostgreSQL with threadmem's extension: threadmem_search 1.1, whose ``threadmem_tokens`` feeds the token index.

``threadmem_tokens(text)`` (pg/threadmem_tokens.c) is the set of a field's
lexemes (threadmem.lib.tokens: each run of ASCII letters and digits, each two
runs in a row forward and reversed) as a tsvector without positions. The
token index over it is opt-in, built by ``manage.py token_index create``
(threadmem/search/literal/tokens.py), because it costs appends about three
times their time and is several times the trigram index's size
(docs/scaling.md); this migration only updates the extension where the
database has it at 1.0 and the server offers 1.1 (``make pg-extension``; a
database created since gets the server's default version from 0007).
"""

from __future__ import annotations

from django.db import migrations


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_extension e JOIN pg_available_extension_versions v "
            "ON v.name = e.extname AND v.version = '1.1' WHERE e.extname = 'threadmem_search' AND e.extversion = '1.0'"
        )
        if cursor.fetchone() is None:
            return
    schema_editor.execute("ALTER EXTENSION threadmem_search UPDATE TO '1.1'")


class Migration(migrations.Migration):
    dependencies = [("threadmem", "0013_thread_source_db_default")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
