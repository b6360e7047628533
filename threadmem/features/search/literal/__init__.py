"""The literal part of search_memory: literal_search.py runs it, decide to layout (its docstring says how)."""
