"""The settings of the worker processes the tests start: config.settings with the recovery's timings shortened
and the queues a test's own.

Another process cannot be patched, so a test passes a timing or a queue in the child's environment under the
setting's name (``COMPACTION_LEASE=2``, ``CELERY_TASK_DEFAULT_QUEUE=<the test's queue>``); this module,
the child's DJANGO_SETTINGS_MODULE, reads it. The product reads none of these names from the environment.
"""

from __future__ import annotations

import os

from config.broker import broker_transport_options
from config.settings import *  # noqa: F403
from config.settings import CELERY_BEAT_SCHEDULE, CELERY_TASK_ROUTES

TIMINGS = (
    "COMPACTION_RETRY_BACKOFF",
    "COMPACTION_LEASE",
    "COMPACTION_SWEEP_SECONDS",
    "COMPACTION_DISPATCH_TIMEOUT",
    "EMBEDDINGS_SWEEP_SECONDS",
)
for _name in TIMINGS:
    if _name in os.environ:
        globals()[_name] = int(os.environ[_name])

CELERY_BEAT_SCHEDULE = {
    **CELERY_BEAT_SCHEDULE,
    "compaction-sweep": {"task": "threadmem.compaction.sweep", "schedule": float(COMPACTION_SWEEP_SECONDS)},  # noqa: F405
    "embeddings-sweep": {"task": "threadmem.embeddings.sweep", "schedule": float(EMBEDDINGS_SWEEP_SECONDS)},  # noqa: F405
}
# Each test's workers consume queues of their own, so parallel runs sharing a broker never take each other's tasks.
QUEUES = (
    "CELERY_TASK_DEFAULT_QUEUE",
    "COMPACTION_QUEUE",
    "EMBEDDINGS_QUEUE",
    "IMPORTS_QUEUE",
)
_renamed = {}  # the product's queue name -> the test's
for _name in QUEUES:
    if _name in os.environ:
        _renamed[globals()[_name]] = os.environ[_name]
        globals()[_name] = os.environ[_name]
CELERY_TASK_ROUTES = {
    task: {**route, "queue": _renamed.get(route["queue"], route["queue"])} for task, route in CELERY_TASK_ROUTES.items()
}
if "CELERY_VISIBILITY_TIMEOUT" in os.environ:
    CELERY_BROKER_TRANSPORT_OPTIONS = broker_transport_options(int(os.environ["CELERY_VISIBILITY_TIMEOUT"]))
