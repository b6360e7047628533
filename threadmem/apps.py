from __future__ import annotations

from django.apps import AppConfig


class ThreadmemConfig(AppConfig):
    name = "threadmem"
    verbose_name = "threadmem"

    def ready(self) -> None:
        from threadmem import services
        from threadmem.compaction import service as compaction_service
        from threadmem.compaction import tasks  # noqa: F401  (registers the Celery task in workers)

        # Automatic compaction after appends; services.py does not import compaction.
        if compaction_service.compaction_auto_after_append not in services.after_append_hooks:
            services.after_append_hooks.append(compaction_service.compaction_auto_after_append)
