"""``manage.py token_index create|drop|status``: the token index of global search (PostgreSQL).

On by default (migration 0022). ``status`` says whether search uses it, and
while a concurrent build runs its phase and percent; ``create`` builds what is
missing (after ``make pg-extension`` on a database migrated before the server
had the extension), ``drop`` opts out (docs/scaling.md says what it costs).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from threadmem.features.search.database.token_index import (
    TokenIndexUnavailable,
    token_index_status,
    token_indexes_create,
    token_indexes_drop,
)


class Command(BaseCommand):
    help = "Create, drop or show the token index that global search uses for hosts, paths and phrases (PostgreSQL)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("action", choices=["create", "drop", "status"])
        parser.add_argument("--concurrently", action="store_true", help="create without blocking appends")

    def handle(self, *args: Any, action: str, concurrently: bool, **options: Any) -> None:
        if action == "create":
            try:
                token_indexes_create(concurrently=concurrently)
            except TokenIndexUnavailable as exc:
                raise CommandError(str(exc)) from None
        elif action == "drop":
            token_indexes_drop()
        self.stdout.write(token_index_status())
