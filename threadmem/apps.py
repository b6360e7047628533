from __future__ import annotations

from django.apps import AppConfig


class ThreadmemConfig(AppConfig):
    name = "threadmem"
    verbose_name = "threadmem"

    def ready(self) -> None:
        from threadmem import services
        from threadmem.compaction import service as compaction_service
        from threadmem.compaction import tasks  # noqa: F401  (registers the Celery task in workers)
        from threadmem.embeddings import tasks as embedding_tasks

        # Automatic compaction and embedding after appends; services.py imports neither.
        for hook in (compaction_service.compaction_auto_after_append, embedding_tasks.embeddings_after_append):
            if hook not in services.after_append_hooks:
                services.after_append_hooks.append(hook)
