from __future__ import annotations

from django.apps import AppConfig
from django.db import connections
from django.db.models.signals import post_migrate


def after_migrate(**kwargs) -> None:
    """Migrations may add or remove threadmem_search or the vector column: probe for them again.

    Also (re)creates search's PL/pgSQL link function from the code that runs
    (search/literal/link_function.py), so it follows that code's filters.
    """
    from threadmem.features.search.literal.link_function import link_function_sql

    using = kwargs.get("using")
    for connection in connections.all(initialized_only=True):
        if connection.vendor == "postgresql" and connection.alias == using:
            with connection.cursor() as cursor:
                cursor.execute(link_function_sql())
        connection.threadmem_search_extension = None
        connection.threadmem_pgvector = None


class ThreadmemConfig(AppConfig):
    name = "threadmem"
    verbose_name = "threadmem"

    def ready(self) -> None:
        from threadmem import checks  # noqa: F401  (registers the system checks)

        post_migrate.connect(after_migrate, sender=self, dispatch_uid="threadmem.after_migrate")
        from threadmem.domain import services
        from threadmem.features.compaction import compacting
        from threadmem.features.compaction import tasks as compaction_tasks  # also registers the Celery task in workers
        from threadmem.features.embeddings import tasks as embedding_tasks
        from threadmem.features.imports import tasks as import_tasks  # noqa: F401  (registers the upload import task)

        # The compaction service enqueues through the task module, which imports it (not the other way round).
        compacting.run_enqueuer = compaction_tasks.compaction_enqueue

        from threadmem.features.compaction import resummarize

        if resummarize.resummarize_after_isolation not in services.after_isolation_hooks:
            services.after_isolation_hooks.append(resummarize.resummarize_after_isolation)
        if resummarize.resummarize_after_thread_isolation not in services.after_thread_isolation_hooks:
            services.after_thread_isolation_hooks.append(resummarize.resummarize_after_thread_isolation)
        # Automatic compaction and embedding after appends; services.py imports neither.
        for hook in (compacting.compaction_auto_after_append, embedding_tasks.embeddings_after_append):
            if hook not in services.after_append_hooks:
                services.after_append_hooks.append(hook)
