"""threadmem_search 1.3: a junction starts with the second run; a token index built before gets the new ones.

1.2's junction (``^tion|refu``) held four characters of each run, and
``function refused`` shared it with ``connection refused``: at a million
messages the phrase's branch re-checked 228 fields for its 101 hits. 1.3's
(``^refu|noitce``, threadmem/lib/tokens.py) holds up to six characters of the
first run's end, reversed, after the second's start, so that a first run
shorter than six asks for it as a prefix. ``_token_versions`` rebuilds an
existing token index, then moves the version.
"""

from __future__ import annotations

from django.db import migrations

from threadmem.migrations._token_versions import rebuild_token_indexes_then_update


def forward(apps, schema_editor):
    rebuild_token_indexes_then_update(schema_editor, before=("1.0", "1.1", "1.2"), version="1.3")


class Migration(migrations.Migration):
    atomic = False  # REINDEX CONCURRENTLY runs outside a transaction

    dependencies = [("threadmem", "0016_message_thread_id_index")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
