from __future__ import annotations

from django.apps import AppConfig


class ThreadmemConfig(AppConfig):
    name = "threadmem"
    verbose_name = "threadmem"
