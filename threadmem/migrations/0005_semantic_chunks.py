"""Embedded chunks for the semantic part, and per-thread embedding progress.

On PostgreSQL the vectors live in pgvector's ``vector`` type, so this
migration enables the ``vector`` extension first. When the server does not
have it, the migration stops with instructions instead of a bare SQL error.
HNSW indexes are per embedding dimension and are created when the first
vectors of a dimension arrive (threadmem/embeddings/service.py).
"""

import django.db.models.deletion
from django.db import migrations, models

import threadmem.fields

MISSING_PGVECTOR = (
    "The PostgreSQL server has no 'vector' extension (pgvector), which threadmem's semantic search stores "
    "its embeddings in. Install it on the database server, then migrate again: on Debian/Ubuntu "
    "'apt-get install postgresql-<version>-pgvector' where the distribution has it, or build Debian's "
    "pgvector source package with 'make pgvector' from the threadmem checkout (scripts/install-pgvector.sh). "
    "A managed PostgreSQL usually offers it as 'vector' in its extension list."
)


def enable_pgvector(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        if cursor.fetchone() is None:
            raise RuntimeError(MISSING_PGVECTOR)
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
                ("embedding", threadmem.fields.EmbeddingField()),
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
