"""The redactor's rules, by where they come from; ``threadmem/lib/redact.py`` runs them."""
