"""A thread's source fields default to "" in the database too, as Message.source_id does (0012).

Writers that do not name them (raw SQL, COPY: the bench-search store) store
none instead of failing on NOT NULL.
"""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("threadmem", "0012_message_source_id_db_default")]

    operations = [
        migrations.AlterField(
            model_name="thread",
            name=name,
            field=models.CharField(blank=True, db_default="", default="", max_length=max_length),
        )
        for name, max_length in (("source_format", 32), ("source_path", 1000), ("source_session_id", 255))
    ]
