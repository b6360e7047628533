from __future__ import annotations

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("threadmem", "0008_message_source_id"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="thread",
            name="source_format",
            field=models.CharField(blank=True, default="", max_length=32),
        ),
        migrations.AddField(
            model_name="thread",
            name="source_path",
            field=models.CharField(blank=True, default="", max_length=1000),
        ),
        migrations.AddField(
            model_name="thread",
            name="source_session_id",
            field=models.CharField(blank=True, default="", max_length=255),
        ),
        migrations.AddField(
            model_name="message",
            name="summary_origin",
            field=models.CharField(blank=True, db_default="", default="", max_length=32),
        ),
        migrations.CreateModel(
            name="Import",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("format", models.CharField(max_length=32)),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "Pending"),
                            ("running", "Running"),
                            ("succeeded", "Succeeded"),
                            ("failed", "Failed"),
                        ],
                        default="pending",
                        max_length=16,
                    ),
                ),
                ("name", models.CharField(blank=True, default="", max_length=1000)),
                ("path", models.CharField(blank=True, default="", max_length=1000)),
                ("size", models.BigIntegerField(default=0)),
                ("channel", models.CharField(blank=True, default="", max_length=255)),
                ("task_id", models.CharField(blank=True, default="", max_length=255)),
                ("channels", models.JSONField(blank=True, default=list)),
                ("lines_read", models.PositiveIntegerField(default=0)),
                ("lines_skipped", models.PositiveIntegerField(default=0)),
                ("messages_imported", models.PositiveIntegerField(default=0)),
                ("messages_known", models.PositiveIntegerField(default=0)),
                ("errors", models.JSONField(blank=True, default=list)),
                ("error", models.TextField(blank=True, default="")),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                (
                    "owner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="imports",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={"ordering": ["-created_at", "-id"]},
        ),
    ]
