"""``manage.py token_index create|drop|status``: the opt-in token index of global search (PostgreSQL).

The token index (threadmem/lib/tokens.py) lets a global search list every
hit of a host, path or id that the trigram index cannot narrow in time; it
costs appends about three times their time and is several times the
trigram index's size (docs/scaling.md), so a deployment chooses it.
``create --concurrently`` builds it without blocking appends.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from threadmem.search.literal.tokens import (
    TOKENS_VERSION,
    TokenIndexUnavailable,
    token_index_state,
    token_indexes_create,
    token_indexes_drop,
)


class Command(BaseCommand):
    help = "Create, drop or show the token index that global search uses for hosts, paths and ids (PostgreSQL)."

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
        state = token_index_state()
        indexes = [name for name, present in state.items() if name != "function" and present]
        if indexes and not state["function"]:
            # Built by hand or before threadmem_search TOKENS_VERSION: search leaves it unused (older junctions).
            self.stdout.write(f"token index: unused ({', '.join(indexes)}): make pg-extension, then token_index create")
        elif indexes:
            self.stdout.write(f"token index: on ({', '.join(indexes)})")
        else:
            available = "available" if state["function"] else f"unavailable (needs threadmem_search {TOKENS_VERSION})"
            self.stdout.write(f"token index: off, {available}")
