"""Embedded chunks for the semantic part, and per-thread embedding progress.

On PostgreSQL the vectors live in pgvector's ``vector`` type where the server
offers the extension, so this migration enables it first; on a stock server
the column holds float32 bytes instead and the semantic part ranks exactly in
NumPy (``threadmem.infrastructure.fields``; ``manage.py check`` warns).
HNSW indexes are per embedding dimension and are created when the first
vectors of a dimension arrive (threadmem/features/embeddings/thread_embedding.py).
"""

import django.db.models.deletion
from django.db import migrations, models

import threadmem.infrastructure.fields


def enable_pgvector(apps, schema_editor):
    if threadmem.infrastructure.fields.pgvector_in_use(schema_editor.connection):
        schema_editor.execute("CREATE EXTENSION IF NOT EXISTS vector")


class Migration(migrations.Migration):
    dependencies = [
        ("threadmem", "0004_generation_visible_chars"),
    ]

    operations = [
        # The extension stays on the way back: other databases' objects may use it.
        migrations.RunPython(enable_pgvector, migrations.RunPython.noop),
        migrations.CreateModel(
            name="Chunk",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("model", models.CharField(max_length=255)),
                ("part", models.PositiveIntegerField()),
                ("field", models.CharField(max_length=1000)),
                ("start", models.PositiveIntegerField()),
                ("end_of_field", models.BooleanField(default=True)),
                ("text", models.TextField()),
                ("dimensions", models.PositiveIntegerField()),
                ("embedding", threadmem.infrastructure.fields.EmbeddingField()),
                (
                    "message",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="chunks", to="threadmem.message"
                    ),
                ),
            ],
            options={
                "ordering": ["message_id", "part"],
                "constraints": [models.UniqueConstraint(fields=("message", "model", "part"), name="chunk_unique_part")],
            },
        ),
        migrations.CreateModel(
            name="EmbeddingProgress",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("model", models.CharField(max_length=255)),
                ("embedded_seq", models.BigIntegerField(default=0)),
                ("chunks", models.PositiveIntegerField(default=0)),
                ("failures", models.PositiveIntegerField(default=0)),
                ("last_error", models.TextField(blank=True, default="")),
                ("failed_at", models.DateTimeField(blank=True, null=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "thread",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="embedding_progress",
                        to="threadmem.thread",
                    ),
                ),
            ],
            options={
                "ordering": ["thread_id", "model"],
                "constraints": [models.UniqueConstraint(fields=("thread", "model"), name="embedding_progress_unique")],
            },
        ),
    ]
