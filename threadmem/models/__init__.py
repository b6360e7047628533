"""threadmem's domain: threads, generations, messages and what is logged about them.

Rows here enforce single-row rules only; anything spanning rows lives in
``services.py`` (writes) and ``selectors.py`` (reads). One package, one app
(``threadmem``): every model is imported here, so Django and callers find them
all as ``threadmem.models``.
"""

from __future__ import annotations

from threadmem.models.audit import Deletion, IsolationEvent, ToolCall
from threadmem.models.history import (
    MODEL_VISIBLE,
    SEARCHABLE,
    WITHDRAWN_PREFIX,
    Generation,
    Message,
    MessageQuerySet,
    Thread,
    ToolArgument,
    quotes_isolated,
    searchable_q,
)
from threadmem.models.work import LIVE_STATUSES, CaptureCursor, Chunk, Compaction, EmbeddingProgress, Import, WorkStatus

__all__ = [
    "LIVE_STATUSES",
    "MODEL_VISIBLE",
    "SEARCHABLE",
    "WITHDRAWN_PREFIX",
    "CaptureCursor",
    "Chunk",
    "Compaction",
    "Deletion",
    "EmbeddingProgress",
    "Generation",
    "Import",
    "IsolationEvent",
    "Message",
    "MessageQuerySet",
    "Thread",
    "ToolArgument",
    "ToolCall",
    "WorkStatus",
    "quotes_isolated",
    "searchable_q",
]
