"""The isolated threads by id, for the global search of an operator.

An operator's global search leaves out the isolated threads, which it looks
up first (threadmem/domain/scope.py). Without an index that lookup reads every thread:
0.35 ms on 10,000 threads (bench/search.py), growing with the store; with
this partial index, 0.05 ms. It holds the isolated threads only, so the
lookup costs what their number costs; the thread rows that appends update
(their counters) get an entry only while isolated.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("threadmem", "0005_semantic_chunks")]

    operations = [
        migrations.RunSQL(
            "CREATE INDEX IF NOT EXISTS thread_isolated_ids ON threadmem_thread (id) WHERE isolated",
            "DROP INDEX IF EXISTS thread_isolated_ids",
        )
    ]
