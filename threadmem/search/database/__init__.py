"""threadmem_search on PostgreSQL: what the database offers search (capabilities.py), the token grammar
(token_grammar.py), what an operator runs on the token index (token_index.py)."""
