"""Embeddings for the semantic part of search_memory.

- ``choice.py`` decides which model embeds: a configured server's, else one in
  this process from a package: ``static.py`` (WordLlama, the default and the
  fallback) or ``minilm.py`` (all-MiniLM-L6-v2, ``THREADMEM_STATIC_EMBEDDINGS=minilm``);
- ``chunks.py`` cuts a message into the pieces that are embedded (pure);
- ``threadmem/infrastructure/fields.py`` (below models, which use it) stores a vector:
  pgvector's ``vector`` on PostgreSQL, float32 bytes on SQLite;
- ``service.py`` embeds what a thread has not embedded yet, in batches, and
  records failures where operators see them;
- ``tasks.py`` runs that after appends (Celery, or a background thread when
  tasks run in-process);
- ``retrieve.py`` ranks the chunks a search scope may show by cosine
  similarity: HNSW on PostgreSQL for the global scope, exact otherwise.
"""
