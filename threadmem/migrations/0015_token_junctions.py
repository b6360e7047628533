"""threadmem_search 1.2: ``threadmem_tokens`` adds junctions; a token index built before gets them.

A junction (``^tion|refu`` in 1.2: the last four characters of a run and the
first four of the next) is what a term of two runs open at both ends asks of
a field (threadmem/lib/tokens.py). ``_token_versions`` rebuilds an existing
token index, then moves the version.
"""

from __future__ import annotations

from django.db import migrations

from threadmem.migrations._token_versions import rebuild_token_indexes_then_update


def forward(apps, schema_editor):
    rebuild_token_indexes_then_update(schema_editor, before=("1.0", "1.1"), version="1.2")


class Migration(migrations.Migration):
    atomic = False  # REINDEX CONCURRENTLY runs outside a transaction

    dependencies = [("threadmem", "0014_token_indexes")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
