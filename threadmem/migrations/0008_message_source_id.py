"""Message.source_id: a client's or an importer's own id for a message, unique in its thread."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("threadmem", "0007_search_extension")]

    operations = [
        migrations.AddField(
            model_name="message",
            name="source_id",
            field=models.CharField(blank=True, default="", max_length=255),
        ),
        migrations.AddConstraint(
            model_name="message",
            constraint=models.UniqueConstraint(
                condition=~models.Q(source_id=""), fields=("thread", "source_id"), name="message_unique_source_id"
            ),
        ),
    ]
