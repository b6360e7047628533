"""``manage.py retention [--days N] [--dry-run]``: delete threads idle past THREADMEM_RETENTION_DAYS.

The periodic task runs the same when the setting is on; ``--days`` applies
another limit once (and works with the setting unset).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from threadmem.features.erase.retention import retention_due, retention_run, unfinished_deletions


class Command(BaseCommand):
    help = "Delete threads (with their forks) idle for longer than THREADMEM_RETENTION_DAYS."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=int, default=None, help="this limit instead of THREADMEM_RETENTION_DAYS")
        parser.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")

    def handle(self, *args: Any, days: int | None, dry_run: bool, **options: Any) -> None:
        days = settings.THREADMEM_RETENTION_DAYS if days is None else days
        if days is None or days <= 0:
            raise CommandError("retention is off: set THREADMEM_RETENTION_DAYS or pass --days N (N >= 1)")
        if days > settings.RETENTION_MAX_DAYS:
            raise CommandError(f"--days must be at most {settings.RETENTION_MAX_DAYS} (a hundred years)")
        if dry_run:
            # Deletions that stopped half way go first at every run, whatever the limit.
            unfinished = unfinished_deletions()
            for thread in unfinished:
                self.stdout.write(
                    f"{thread.title}\t{thread.owner.get_username()}\tdeletion unfinished since "
                    f"{thread.last_activity_at:%Y-%m-%d %H:%M}"
                )
            if unfinished:
                self.stdout.write(f"{len(unfinished)} thread(s) whose deletion stopped would be finished")
            due = retention_due(days=days)
            for members in due:
                root = members[0]
                forks = f" with {len(members) - 1} fork(s)" if len(members) > 1 else ""
                self.stdout.write(
                    f"{root.channel}\t{root.owner.get_username()}\tidle since {root.last_activity_at:%Y-%m-%d}{forks}"
                )
            self.stdout.write(f"{sum(len(m) for m in due)} thread(s) idle for more than {days} days would be deleted")
            return
        records = retention_run(days=days)
        for record in records:
            self.stdout.write(f"deleted {record.channel} ({record.counts.get('messages', 0)} messages)")
        self.stdout.write(f"{len(records)} thread(s) deleted (idle for more than {days} days)")
