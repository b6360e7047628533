"""Capture cursors (how far each session file was captured) and a thread's working directory (its project)."""

from __future__ import annotations

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("threadmem", "0018_chunk_keyword_index"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="thread",
            name="source_cwd",
            field=models.CharField(blank=True, db_default="", default="", max_length=1000),
        ),
        migrations.CreateModel(
            name="CaptureCursor",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("path", models.CharField(max_length=1000)),
                ("format", models.CharField(max_length=32)),
                ("offset", models.BigIntegerField(default=0)),
                ("line_number", models.BigIntegerField(default=0)),
                ("tail_sha1", models.CharField(blank=True, default="", max_length=40)),
                ("last_source_id", models.CharField(blank=True, default="", max_length=255)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "owner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="capture_cursors",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("owner", "path"), name="capture_cursor_unique_path")],
            },
        ),
    ]
