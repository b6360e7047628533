"""Project plumbing: settings, URLs, the ASGI/WSGI apps, the Celery app, the health check.

Importing the package (Django does, for ``config.settings``) creates the Celery app,
so ``celery -A config worker`` finds it and ``shared_task`` binds to it.
"""

from __future__ import annotations

import os

# One BLAS thread, set before NumPy loads: a search scores its vectors with one matrix-vector product, which
# threads do not speed up, while OpenBLAS's waiting threads spin on a busy host (docs/production.md, "CPU").
# An operator's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from config.celery import app as celery_app

__all__ = ("celery_app",)
