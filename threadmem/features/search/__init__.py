"""The bounded pull interface: search_memory and message_context_read (contract §2, §3).

One direction: search_service.py validates and resolves the scope, the two
parts decide, run their statements (statements.py) and read the rows
(literal/, and semantic.py with ranked/), then answer_layout.py lays out the
answer once, with the caps of answer_caps.py; audit.py pages one message;
log.py writes the tool-call log. This file only names what callers import.
"""

from __future__ import annotations

from threadmem.features.search.audit import AuditRead, message_context_read
from threadmem.features.search.hits import Hit
from threadmem.features.search.search_service import SearchResult, search_memory

__all__ = ["AuditRead", "Hit", "SearchResult", "message_context_read", "search_memory"]
