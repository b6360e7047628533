"""The bounded pull interface: search_memory and message_context_read (contract §2, §3).

literal/ runs the SQL, semantic.py the other-results part, bounded.py holds
the caps, the layout and the pure merge; scope.py decides what a call may see;
audit.py pages one message; log.py writes the tool-call log.
"""

from __future__ import annotations

from threadmem.search.audit import AuditRead, message_context_read
from threadmem.search.hits import Hit
from threadmem.search.service import SearchResult, search_memory

__all__ = ["AuditRead", "Hit", "SearchResult", "message_context_read", "search_memory"]
