"""``manage.py redact_secrets [--owner USER] [--from-id N] [--dry-run]``: clean a store written before redaction.

Applies the ingest rules (``threadmem/lib/redact.py``) to every message stored already, in ascending id, a batch
per transaction (content, tool calls' arguments and names and their tool-argument leaves, summaries), then to
thread titles, import problems and the tool-call log's arguments. The pieces of a changed message are dropped and
embedded again here with the model in force (as ``manage.py embeddings`` does). After each batch it prints the id
to resume from with ``--from-id``; a second run over a clean store changes nothing. ``--dry-run`` prints what
would change, counts per rule and per field, and writes nothing. It prints counts and ids only, never a stored
text: no secret, and no title, channel or tool name around one.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from threadmem.domain.redaction import BATCH_MESSAGES, StoreRedaction, store_redact
from threadmem.features.embeddings import choice
from threadmem.features.embeddings import thread_embedding as service
from threadmem.infrastructure import llm


class Command(BaseCommand):
    help = (
        "Replace the secrets already stored (messages, tool arguments and names, summaries, titles, import problems, "
        "the tool-call log, derived indexes)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", help="only this user's threads")
        parser.add_argument("--from-id", type=int, default=1, help="start at this message id (resume a run)")
        parser.add_argument("--dry-run", action="store_true", help="count what would change; write nothing")
        parser.add_argument("--batch", type=int, default=BATCH_MESSAGES, help="messages per transaction")

    def handle(self, *args: Any, owner: str | None, from_id: int, dry_run: bool, batch: int, **options: Any) -> None:
        user = None
        if owner is not None:
            user = get_user_model().objects.filter(username=owner).first()
            if user is None:
                raise CommandError(f"no user {owner!r}")
        if from_id < 1 or batch < 1:
            raise CommandError("--from-id and --batch must be at least 1")
        report = store_redact(owner=user, from_id=from_id, dry_run=dry_run, batch=batch, progress=self._progress)
        self._summary(report, dry_run=dry_run)
        if not dry_run and report.to_embed:
            self._embed(sorted(report.to_embed))

    def _progress(self, report: StoreRedaction) -> None:
        self.stdout.write(
            f"through message {report.last_id}: {report.messages_changed} of the {report.messages_read} messages "
            f"read held secrets (resume with --from-id {report.last_id + 1})"
        )

    def _summary(self, report: StoreRedaction, *, dry_run: bool) -> None:
        verb = "would change" if dry_run else "changed"
        self.stdout.write(
            f"{verb}: {report.messages_changed} messages, {report.tool_arguments_changed} tool arguments, "
            f"{report.chunks_dropped} pieces to embed again, {report.titles_changed} titles, "
            f"{report.imports_changed} imports, {report.logged_calls_changed} logged tool calls"
        )
        # Rule labels and field names are the code's words: nothing here is read from a stored row.
        for label, count in sorted(report.by_rule.items(), key=lambda item: (-item[1], item[0])):
            self.stdout.write(f"  rule {label}: {count} redactions")
        for name, count in sorted(report.by_field.items(), key=lambda item: (-item[1], item[0])):
            self.stdout.write(f"  field {name}: {count} redactions")

    def _embed(self, thread_ids: list[int]) -> None:
        model = choice.active_model()
        if not model:
            return
        for thread_id in thread_ids:
            try:
                outcome = service.embed_thread(thread_id=thread_id, model=model)
            except llm.LLMError as exc:
                self.stderr.write(f"thread {thread_id}: embedding again failed ({exc}); run manage.py embeddings")
                continue
            self.stdout.write(f"thread {thread_id}: {outcome.chunks} pieces embedded again with {model}")
