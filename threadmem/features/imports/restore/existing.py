"""An export whose channel the importer already has: never written to; its messages known by source id, or refused."""

from __future__ import annotations

from typing import Any

from threadmem.errors import Conflict
from threadmem.features.imports.records import Line
from threadmem.features.imports.restore.outcome import Refused, Restored
from threadmem.features.imports.restore.writing import BATCH_SIZE
from threadmem.models import Message, Thread


class KnownCheck:
    """Counts the export's messages the existing thread holds; the first it does not hold refuses the file."""

    def __init__(self, *, thread: Thread, restored: Restored) -> None:
        self.thread, self.restored = thread, restored
        self.unmatched: tuple[int, str] | None = None
        self.unverified: list[tuple[int, str]] = []

    def check(self, record: dict[str, Any], line: Line) -> None:
        if self.unmatched is not None:
            return
        source_id = record.get("source_id")
        if not isinstance(source_id, str) or not source_id:
            self.unmatched = (line.number, f"its message at seq {record['seq']} has no source id")
            return
        self.unverified.append((line.number, source_id))
        if len(self.unverified) >= BATCH_SIZE:
            self._verify_batch()

    def verify(self) -> None:
        self._verify_batch()
        if self.unmatched is not None:
            number, why = self.unmatched
            raise Refused(
                number,
                f"channel {self.restored.channel!r} already exists and {why}: nothing restored (delete the thread "
                "first, or import the export under another channel)",
                Conflict,
            )

    def _verify_batch(self) -> None:
        batch, self.unverified = self.unverified, []
        held = set(
            Message.objects.filter(thread=self.thread, source_id__in=[s for _, s in batch]).values_list(
                "source_id", flat=True
            )
        )
        for number, source_id in batch:
            if source_id in held:
                self.restored.messages_known += 1
            elif self.unmatched is None:
                self.unmatched = (number, f"its message with source id {source_id!r} is not in it")
