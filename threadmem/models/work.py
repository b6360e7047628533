"""Work done on threads in the background: imports, embeddings (chunks and progress), compactions."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from threadmem.infrastructure.fields import EmbeddingField
from threadmem.models.history import NEWEST_FIRST, Message, Thread


class WorkStatus(models.TextChoices):
    """Where a piece of background work stands: an import or a compaction."""

    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


# Work that may still finish: at most one live compaction per generation (Compaction.Meta).
LIVE_STATUSES = [WorkStatus.PENDING, WorkStatus.RUNNING]


class Import(models.Model):
    """One import of agent sessions (threadmem/features/imports): an API upload, or a run of the command.

    The upload is kept in ``path`` until its task has run; ``errors`` holds
    the first problems (file, line, reason), ``lines_skipped`` counts them all.
    """

    Status = WorkStatus

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="imports")
    format = models.CharField(max_length=32)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    name = models.CharField(max_length=1000, blank=True, default="")  # the uploaded file's name
    path = models.CharField(max_length=1000, blank=True, default="")  # where the upload waits for its task
    size = models.BigIntegerField(default=0)
    channel = models.CharField(max_length=255, blank=True, default="")
    task_id = models.CharField(max_length=255, blank=True, default="")
    channels = models.JSONField(default=list, blank=True)
    lines_read = models.PositiveIntegerField(default=0)
    lines_skipped = models.PositiveIntegerField(default=0)
    messages_imported = models.PositiveIntegerField(default=0)
    messages_known = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = NEWEST_FIRST

    def __str__(self) -> str:
        return f"import {self.pk} ({self.format}, {self.status})"


class CaptureCursor(models.Model):
    """How far one session file has been captured (``manage.py capture``, remote captures): nothing twice.

    ``offset`` is where the next capture starts reading: the end of the last
    line consumed, or the start of an API message still streaming (its
    records are read again, so the stored message grows rather than
    splits). ``tail_sha1`` fingerprints the bytes just before ``offset``: a
    file rewritten or shrunk since fails it and is imported whole again
    (idempotent by source id).
    """

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="capture_cursors")
    path = models.CharField(max_length=1000)
    format = models.CharField(max_length=32)
    offset = models.BigIntegerField(default=0)
    line_number = models.BigIntegerField(default=0)
    tail_sha1 = models.CharField(max_length=40, blank=True, default="")
    last_source_id = models.CharField(max_length=255, blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "path"], name="capture_cursor_unique_path")]

    def __str__(self) -> str:
        return f"capture of {self.path} at {self.offset}"


class Compaction(models.Model):
    """One compaction of one generation: its history and its claim."""

    Status = WorkStatus

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="compactions")
    generation = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    task_id = models.CharField(max_length=255, blank=True, default="")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    trigger = models.CharField(max_length=32, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cut_seq = models.BigIntegerField(null=True, blank=True)
    model = models.CharField(max_length=255, blank=True, default="")
    input_chars = models.BigIntegerField(null=True, blank=True)
    output_chars = models.BigIntegerField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    summary_message = models.ForeignKey(Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The running claim: "<host>:<pid>:<token>" of the attempt that holds it and
    # when its lease ends. A redelivered task takes over a claim whose holder
    # died (same host, pid gone) or whose lease ran out (the hard time limit
    # has killed any holder by then).
    claimed_by = models.CharField(max_length=255, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = NEWEST_FIRST
        constraints = [
            # At most one live compaction per generation: a second request
            # finds the running one instead of starting another.
            models.UniqueConstraint(
                fields=["thread", "generation"],
                condition=Q(status__in=LIVE_STATUSES),
                name="compaction_one_live_per_generation",
            ),
            # Re-summaries after isolation (trigger "isolation") rewrite a compacted generation's summary again.
            models.UniqueConstraint(
                fields=["thread", "generation"],
                condition=Q(status="succeeded") & ~Q(trigger="isolation"),
                name="compaction_one_success_per_generation",
            ),
        ]

    def __str__(self) -> str:
        return f"compaction of {self.thread_id}#{self.generation} ({self.status})"


class Chunk(models.Model):
    """One embedded piece of a message, for the semantic part (threadmem/features/embeddings).

    Kept for the messages search may ever show (kind ``message``,
    ``model_visible``); whether one may be shown *now* (isolation,
    supersession, the scope) is decided at query time, by the same filter as
    the literal part. ``text`` is the piece itself: next to its vector it is
    small, and search shows it without reading the message.
    """

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="chunks")
    model = models.CharField(max_length=255)
    part = models.PositiveIntegerField()  # the piece's ordinal in the message (embeddings/chunks.py)
    field = models.CharField(max_length=1000)  # "content" or "tool_args.<path>"
    start = models.PositiveIntegerField()  # offset of the piece in that field
    end_of_field = models.BooleanField(default=True)  # the field ends with this piece
    text = models.TextField()
    dimensions = models.PositiveIntegerField()
    embedding = EmbeddingField()
    # The unit vectors of the piece's sentences when a turn of a conversation holds several (embeddings/chunks.py):
    # float16 rows of ``dimensions`` each; NULL for any other piece (nullable, so that SQLite adds the column in
    # place, keeping the full-text index's triggers on this table).
    sentences = models.BinaryField(null=True, editable=False)

    class Meta:
        ordering = ["message_id", "part"]
        constraints = [models.UniqueConstraint(fields=["message", "model", "part"], name="chunk_unique_part")]

    def __str__(self) -> str:
        return f"{self.message_id}#{self.part} {self.field}"


class EmbeddingProgress(models.Model):
    """How far one thread is embedded for one model, and its last failure.

    Appends arrive in seq order under the thread's row lock, so "every message
    up to ``embedded_seq`` is embedded" is a complete record of the work done;
    the next run starts after it. A failure leaves ``embedded_seq`` where it
    was (the next run, retry or backfill takes the same messages again) and
    says what went wrong in ``last_error`` for operators.
    """

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="embedding_progress")
    model = models.CharField(max_length=255)
    embedded_seq = models.BigIntegerField(default=0)
    chunks = models.PositiveIntegerField(default=0)
    # Transactions that stored or dropped pieces: what a process keeps of them is current while it is unchanged.
    changes = models.PositiveBigIntegerField(default=0, db_default=0)
    failures = models.PositiveIntegerField(default=0)  # consecutive failed runs
    last_error = models.TextField(blank=True, default="")
    failed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["thread_id", "model"]
        constraints = [models.UniqueConstraint(fields=["thread", "model"], name="embedding_progress_unique")]

    def __str__(self) -> str:
        return f"{self.thread_id} {self.model} through seq {self.embedded_seq}"
