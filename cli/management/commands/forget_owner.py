"""``manage.py forget_owner USERNAME [--dry-run] --yes``: erase an owner and everything of theirs."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from threadmem.features.erase.owners import owner_forget


class Command(BaseCommand):
    help = "Erase an owner entirely: threads (and their forks), imports, captures, logs, tokens, the account."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--dry-run", action="store_true", help="list the threads that would go, change nothing")
        parser.add_argument("--yes", action="store_true", help="erase without asking (required: nothing is kept)")

    def handle(self, *args: Any, username: str, dry_run: bool, yes: bool, **options: Any) -> None:
        try:
            owner = get_user_model().objects.get_by_natural_key(username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user {username!r}") from None
        if not dry_run and not yes:
            raise CommandError("this erases the owner for good: run with --dry-run first, then with --yes")
        erasure = owner_forget(owner=owner, dry_run=dry_run)
        for channel in erasure.threads:
            self.stdout.write(channel)
        verb = "would be erased" if dry_run else "erased"
        rows = ", ".join(f"{name} {count}" for name, count in sorted(erasure.counts.items()) if count)
        self.stdout.write(f"{username}: {len(erasure.threads)} thread(s) {verb}" + (f" ({rows})" if rows else ""))
