"""Project plumbing: settings, URLs, the ASGI/WSGI apps, the Celery app, the health check.

Importing the package (Django does, for ``config.settings``) creates the Celery app,
so ``celery -A config worker`` finds it and ``shared_task`` binds to it.
"""

from __future__ import annotations

from config.celery import app as celery_app

__all__ = ("celery_app",)
