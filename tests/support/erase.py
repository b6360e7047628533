"""Deleting threads in tests: a DELETE from a thread of its own, and every row a thread may leave behind."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from rest_framework.test import APIClient

from tests.support.workers import close_connections
from threadmem import models


def rows_left(thread_ids: Sequence[int], message_ids: Sequence[int]) -> dict[str, int]:
    """The rows of the threads (and of their messages) still stored, per table; empty when none."""
    counts = {
        "threads": models.Thread.objects.filter(pk__in=thread_ids).count(),
        "messages": models.Message.objects.filter(thread_id__in=thread_ids).count(),
        "messages by id": models.Message.objects.filter(pk__in=message_ids).count(),
        "chunks": models.Chunk.objects.filter(message_id__in=message_ids).count(),
        "tool_arguments": models.ToolArgument.objects.filter(thread_id__in=thread_ids).count(),
        "embedding_progress": models.EmbeddingProgress.objects.filter(thread_id__in=thread_ids).count(),
        "generations": models.Generation.objects.filter(thread_id__in=thread_ids).count(),
        "compactions": models.Compaction.objects.filter(thread_id__in=thread_ids).count(),
        "tool_calls": models.ToolCall.objects.filter(thread_id__in=thread_ids).count(),
        "isolation_events": models.IsolationEvent.objects.filter(thread_id__in=thread_ids).count(),
    }
    return {name: count for name, count in counts.items() if count}


class DeleteInThread(threading.Thread):
    """``DELETE url`` on a thread (and database connection) of its own; ``status`` and ``body`` once joined."""

    def __init__(self, client: APIClient, url: str) -> None:
        super().__init__(daemon=True)
        self.client, self.url = client, url
        self.status: int | None = None
        self.body: dict = {}

    def run(self) -> None:
        try:
            response = self.client.delete(self.url)
            self.status, self.body = response.status_code, response.json()
        finally:
            close_connections()
