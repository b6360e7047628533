"""Embeddings for the semantic part of search_memory.

- ``choice.py`` decides which model embeds: a configured server's, else one in
  this process from a package: ``sentence.py`` (the default: ``minilm.py``'s
  all-MiniLM-L6-v2 and ``universal.py``'s Universal Sentence Encoder in one
  vector) or ``static.py`` (WordLlama: ``THREADMEM_STATIC_EMBEDDINGS=static``,
  and the fallback where the sentence model's packages are missing);
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
