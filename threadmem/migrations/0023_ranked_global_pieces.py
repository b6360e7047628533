"""What a global ranked lane keeps per thread (search/ranked/spread.py): a count of the transactions that stored
or dropped a thread's pieces, and an index of the few messages no search shows now."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("threadmem", "0022_token_index_default"),
    ]

    operations = [
        migrations.AddField(
            model_name="embeddingprogress",
            name="changes",
            field=models.PositiveBigIntegerField(db_default=0, default=0),
        ),
        migrations.AddIndex(
            model_name="message",
            index=models.Index(
                condition=models.Q(
                    ("isolated", True),
                    ("model_visible", False),
                    ("superseded_by__isnull", False),
                    models.Q(("kind", "message"), _negated=True),
                    _connector="OR",
                ),
                fields=["thread", "id"],
                name="message_hidden",
            ),
        ),
    ]
