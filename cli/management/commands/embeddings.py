"""``manage.py embeddings [--channel C] [--status] [--queue] [--sentences]``: embed what is missing, or report.

Without options: embeds, in this process, every message of every thread (or
of ``--channel``) that the embedding model in force (the configured one, else the in-process one:
``choice.py``) has not embedded yet, thread by thread, and prints what it did; a thread whose model call fails is
reported (and recorded on its progress row) and the command goes on with the
next one, exiting non-zero at the end. ``--queue`` hands each thread to the
Celery workers instead. ``--status`` prints, per thread behind or failing,
how far it is embedded and its last error. ``--sentences`` gives the turns
a store embedded before turns had sentence vectors their sentences' vectors
(``sentence_backfill.py``), thread by thread.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from threadmem.domain import selectors
from threadmem.errors import DomainError
from threadmem.features.embeddings import choice, sentence_backfill, tasks
from threadmem.features.embeddings import thread_embedding as service
from threadmem.infrastructure import llm
from threadmem.models import EmbeddingProgress, Thread


class Command(BaseCommand):
    help = "Embed the messages the semantic part has not embedded yet (backfill), or report progress."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--channel", help="only this thread")
        parser.add_argument("--owner", help="the --channel's owner (username), when several owners hold it")
        parser.add_argument("--status", action="store_true", help="report progress and failures; embed nothing")
        parser.add_argument("--queue", action="store_true", help="queue Celery tasks instead of embedding here")
        parser.add_argument(
            "--sentences", action="store_true", help="embed the sentences of turns embedded before turns had them"
        )

    def handle(
        self,
        *args: Any,
        channel: str | None,
        owner: str | None,
        status: bool,
        queue: bool,
        sentences: bool,
        **options: Any,
    ) -> None:
        model = choice.active_model()
        if not model:
            raise CommandError(
                "no embedding model is in force: set OPENAI_BASE_URL and THREADMEM_EMBEDDING_MODEL, "
                "or leave THREADMEM_STATIC_EMBEDDINGS on"
            )
        if sentences and (status or queue):
            raise CommandError("--sentences runs here: leave out --status and --queue")
        if sentences and not choice.embeds_sentences(model):
            raise CommandError(f"{model} embeds a turn whole: only the sentence model embeds its sentences")
        thread_ids = sentence_backfill.threads_to_fill(model) if sentences else service.threads_behind(model)
        if channel is not None:
            try:
                thread_id = selectors.thread_named(channel=channel, owner=owner).pk
            except DomainError as exc:
                raise CommandError(exc.message) from None
            thread_ids = [t for t in thread_ids if t == thread_id]
        if sentences:
            self._sentences(model, thread_ids)
            return
        if status:
            self._status(model, thread_ids)
            return
        if queue:
            for thread_id in thread_ids:
                tasks.embed_thread_task.delay(thread_id, model)
            self.stdout.write(f"queued {len(thread_ids)} threads for {model}")
            return
        failed = 0
        for done, thread_id in enumerate(thread_ids, 1):
            try:
                outcome = service.embed_thread(thread_id=thread_id, model=model)
            except llm.LLMError as exc:
                failed += 1
                self.stderr.write(f"thread {thread_id}: failed: {exc}")
                continue
            self.stdout.write(
                f"[{done}/{len(thread_ids)}] thread {thread_id}: {outcome.chunks} chunks from {outcome.messages} "
                f"messages, through seq {outcome.embedded_seq}"
            )
        self.stdout.write(f"{len(thread_ids) - failed} of {len(thread_ids)} threads embedded with {model}")
        if failed:
            raise CommandError(f"{failed} threads failed; run again once the model server answers")

    def _sentences(self, model: str, thread_ids: list[int]) -> None:
        total = 0
        for done, thread_id in enumerate(thread_ids, 1):
            stored = sentence_backfill.fill_thread(thread_id=thread_id, model=model)
            total += stored
            self.stdout.write(f"[{done}/{len(thread_ids)}] thread {thread_id}: {stored} turns given their sentences")
        self.stdout.write(f"{total} turns in {len(thread_ids)} threads given their sentences with {model}")

    def _status(self, model: str, thread_ids: list[int]) -> None:
        progress = {
            row.thread_id: row for row in EmbeddingProgress.objects.filter(model=model).select_related("thread")
        }
        failing = [row for row in progress.values() if row.failures]
        channels = dict(Thread.objects.filter(id__in=thread_ids).values_list("id", "channel"))
        self.stdout.write(f"model {model}: {len(thread_ids)} threads behind, {len(failing)} failing")
        for thread_id in thread_ids:
            row = progress.get(thread_id)
            through = row.embedded_seq if row else 0
            self.stdout.write(f"  behind  {channels[thread_id]}: embedded through seq {through}")
        for row in failing:
            self.stdout.write(
                f"  failing {row.thread.channel}: {row.failures} failed runs, "
                f"last at {row.failed_at:%Y-%m-%d %H:%M:%S}: {row.last_error}"
            )
