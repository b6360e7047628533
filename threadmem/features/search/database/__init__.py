"""threadmem_search on PostgreSQL: what the database offers search (capabilities.py), what the token index can
tell of a term (term_tokens.py: its lexemes, the index's statistics), what an operator runs on the token index
(token_index.py)."""
