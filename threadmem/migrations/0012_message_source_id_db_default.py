"""Message.source_id defaults to "" in the database too: writers that do not name it (raw SQL) store none."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("threadmem", "0011_message_tool_call_links")]

    operations = [
        migrations.AlterField(
            model_name="message",
            name="source_id",
            field=models.CharField(blank=True, db_default="", default="", max_length=255),
        ),
    ]
