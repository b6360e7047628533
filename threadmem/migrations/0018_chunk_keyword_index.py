"""The ranked lane's keyword index over message pieces (contract §12, threadmem/features/search/ranked).

PostgreSQL: a generated ``tsvector`` column over ``threadmem_chunk.text``
(English configuration: stems, stop words) with a GIN index. SQLite: an
FTS5 table over the same text (porter stemmer), its ``content`` the chunk
table itself, kept in step by triggers. Both are filled from the pieces
already stored; a store embedded before this migration gets its static
vectors from ``manage.py embeddings`` (the backfill).

The column is not on the Django model: nothing but the ranked lane's
statements reads it, and the database computes it on every insert.
"""

from __future__ import annotations

from django.db import migrations

POSTGRES_FORWARD = (
    "ALTER TABLE threadmem_chunk ADD COLUMN IF NOT EXISTS search_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED",
    "CREATE INDEX IF NOT EXISTS chunk_search_vector_gin ON threadmem_chunk USING gin (search_vector)",
)
POSTGRES_BACKWARD = (
    "DROP INDEX IF EXISTS chunk_search_vector_gin",
    "ALTER TABLE threadmem_chunk DROP COLUMN IF EXISTS search_vector",
)
SQLITE_FORWARD = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS threadmem_chunk_fts USING fts5("
    "text, content='threadmem_chunk', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER IF NOT EXISTS threadmem_chunk_fts_insert AFTER INSERT ON threadmem_chunk BEGIN "
    "INSERT INTO threadmem_chunk_fts(rowid, text) VALUES (new.id, new.text); END",
    "CREATE TRIGGER IF NOT EXISTS threadmem_chunk_fts_delete AFTER DELETE ON threadmem_chunk BEGIN "
    "INSERT INTO threadmem_chunk_fts(threadmem_chunk_fts, rowid, text) VALUES ('delete', old.id, old.text); END",
    "CREATE TRIGGER IF NOT EXISTS threadmem_chunk_fts_update AFTER UPDATE OF text ON threadmem_chunk BEGIN "
    "INSERT INTO threadmem_chunk_fts(threadmem_chunk_fts, rowid, text) VALUES ('delete', old.id, old.text); "
    "INSERT INTO threadmem_chunk_fts(rowid, text) VALUES (new.id, new.text); END",
    "INSERT INTO threadmem_chunk_fts(threadmem_chunk_fts) VALUES ('rebuild')",
)
SQLITE_BACKWARD = (
    "DROP TRIGGER IF EXISTS threadmem_chunk_fts_insert",
    "DROP TRIGGER IF EXISTS threadmem_chunk_fts_delete",
    "DROP TRIGGER IF EXISTS threadmem_chunk_fts_update",
    "DROP TABLE IF EXISTS threadmem_chunk_fts",
)


def _run(schema_editor, statements: dict[str, tuple[str, ...]]) -> None:
    for statement in statements.get(schema_editor.connection.vendor, ()):
        schema_editor.execute(statement)


def forward(apps, schema_editor):
    _run(schema_editor, {"postgresql": POSTGRES_FORWARD, "sqlite": SQLITE_FORWARD})


def backward(apps, schema_editor):
    _run(schema_editor, {"postgresql": POSTGRES_BACKWARD, "sqlite": SQLITE_BACKWARD})


class Migration(migrations.Migration):
    dependencies = [("threadmem", "0017_token_junction_tails")]

    operations = [migrations.RunPython(forward, backward)]
