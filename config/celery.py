"""The Celery app, wired the usual Django way.

With no CELERY_BROKER_URL, settings turn on ``task_always_eager`` so tasks run
in the web process and the service works with nothing but Python.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("threadmem")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
