from __future__ import annotations

from django.apps import AppConfig


class CLIConfig(AppConfig):
    """An app only so that the command-line surface owns its management commands (``manage.py <command>``)."""

    name = "cli"
    verbose_name = "threadmem commands"
