from __future__ import annotations

from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"
    verbose_name = "threadmem REST API"
