"""Messages indexed by (thread, id), in place of the foreign key's index on thread alone.

A thread's messages newest first, from the index: an owner's global search
reads its newest messages across its threads this way before the search
indexes (search/literal/filters.py, window_sql). Every lookup by thread alone uses it as it
used the old index, so appends keep one index on thread, not two. The new one
is built before the old one goes.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("threadmem", "0015_token_junctions"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="message",
            index=models.Index(fields=["thread", "id"], name="message_thread_id"),
        ),
        migrations.AlterField(
            model_name="message",
            name="thread",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="messages",
                to="threadmem.thread",
            ),
        ),
    ]
