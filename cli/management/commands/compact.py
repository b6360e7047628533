"""``manage.py compact CHANNEL [--wait]``: compact a thread's current generation.

Without a broker the task runs in this process. With one, a worker runs it;
``--wait`` polls the compaction until it has finished and exits non-zero if it
failed.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from threadmem.domain import selectors
from threadmem.errors import DomainError
from threadmem.features.compaction import compacting
from threadmem.features.compaction.claim import LIVE, lease_duration
from threadmem.models import Compaction

POLL_SECONDS = 0.5


class Command(BaseCommand):
    help = "Compact the current generation of a thread (contract §4)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("channel", help="the thread's channel")
        parser.add_argument("--owner", help="the thread's owner (username), when several owners hold the channel")
        parser.add_argument("--wait", action="store_true", help="wait until the compaction has finished")
        parser.add_argument(
            "--timeout", type=float, default=None, help="seconds to wait at most (default: the task's time limits)"
        )

    def handle(
        self, *args: Any, channel: str, owner: str | None, wait: bool, timeout: float | None, **options: Any
    ) -> None:
        try:
            thread = selectors.thread_named(channel=channel, owner=owner)
        except DomainError as exc:
            raise CommandError(exc.message) from None
        try:
            compaction = compacting.compaction_request(thread=thread, trigger="command")
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"compaction {compaction.id} of generation {compaction.generation}: task {compaction.task_id}"
        )
        if not wait:
            compaction.refresh_from_db()
            self.stdout.write(f"status: {compaction.status}")
            return
        limit = timeout if timeout is not None else lease_duration().total_seconds()
        deadline = time.monotonic() + limit
        while True:
            compaction.refresh_from_db()
            if compaction.status not in LIVE:
                break
            if time.monotonic() > deadline:
                raise CommandError(f"compaction {compaction.id} is still {compaction.status} after {limit:g} s")
            time.sleep(POLL_SECONDS)
        if compaction.status == Compaction.Status.FAILED:
            raise CommandError(f"compaction {compaction.id} failed: {compaction.error}")
        self.stdout.write(
            f"succeeded: generation {compaction.generation} closed, summary messageId={compaction.summary_message_id} "
            f"({compaction.output_chars} characters, model {compaction.model})"
        )
