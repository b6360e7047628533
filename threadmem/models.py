"""threadmem's domain: threads, generations, messages and what is logged about them.

Rows here enforce single-row rules only; anything spanning rows lives in
``services.py`` (writes) and ``selectors.py`` (reads).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from threadmem.fields import EmbeddingField


class Thread(models.Model):
    """One conversation of one agent, addressed by its unique ``channel``.

    A fork points at its parent thread and at the parent's message it was
    forked from: the parent's history up to and including that message is the
    fork's ancestry (searchable, and the start of its context).
    """

    channel = models.CharField(max_length=255, unique=True)
    title = models.CharField(max_length=500, blank=True, default="")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="threads")
    isolated = models.BooleanField(default=False)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="forks")
    fork_message = models.ForeignKey("Message", null=True, blank=True, on_delete=models.PROTECT, related_name="forks")
    current_generation = models.PositiveIntegerField(default=1)
    # The next message's seq. Appends bump it with one UPDATE, which takes the
    # row lock: concurrent appends to one thread serialize there and get a
    # gap-free, duplicate-free order.
    next_seq = models.BigIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    last_activity_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # Where an imported thread came from (threadmem/imports): "claude-code" or
    # "openai", the file (or upload) and the session id in it. Empty otherwise.
    source_format = models.CharField(max_length=32, blank=True, default="")
    source_path = models.CharField(max_length=1000, blank=True, default="")
    source_session_id = models.CharField(max_length=255, blank=True, default="")

    class Meta:
        ordering = ["-last_activity_at", "-id"]
        permissions = [("isolate", "Can toggle isolation of threads and messages")]

    def __str__(self) -> str:
        return self.channel


class Generation(models.Model):
    """One stretch of a thread between two compactions.

    ``summary_message`` is the compaction summary *of* this generation: the
    ``kind=summary`` message that opens the next one (it is stored in the next
    generation). It is empty until this generation is compacted.
    """

    class State(models.TextChoices):
        OPEN = "open"
        COMPACTING = "compacting"
        CLOSED = "closed"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="generations")
    number = models.PositiveIntegerField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.OPEN)
    started_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    summary_message = models.OneToOneField(
        "Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="summarized_generation"
    )
    # Model-visible text appended to this generation, in UTF-8 bytes of content
    # and tool-call arguments, kept as a running total by appends (and by
    # compaction for the messages it moves here). Isolation and supersession
    # never subtract, so it is an upper bound: the automatic compaction check
    # reads one row instead of summing the generation on every append.
    visible_chars = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["thread_id", "number"]
        constraints = [models.UniqueConstraint(fields=["thread", "number"], name="generation_unique_number")]

    def __str__(self) -> str:
        return f"{self.thread_id}#{self.number}"


class MessageQuerySet(models.QuerySet):
    """The message rules every read shares, one home each (``MODEL_VISIBLE``, ``SEARCHABLE`` below).

    ``visible()``: what the model sees of a generation (machine events and
    summaries included). ``searchable()``: what every model-facing read and
    search may show; the literal search's raw SQL
    (``search.literal.filters.searchable_sql``) is held equal to it by
    tests/search/test_filters.py.
    """

    def visible(self) -> MessageQuerySet:
        return self.filter(MODEL_VISIBLE)

    def searchable(self) -> MessageQuerySet:
        return self.filter(SEARCHABLE)


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"
        TOOL = "tool"
        SYSTEM = "system"

    class Kind(models.TextChoices):
        MESSAGE = "message"
        MACHINE_EVENT = "machine_event"
        SUMMARY = "summary"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="messages")
    # The generation *number* within the thread; compaction moves late
    # arrivals to the next generation with one UPDATE on this column.
    generation = models.PositiveIntegerField()
    seq = models.BigIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.MESSAGE)
    content = models.TextField(blank=True, default="")
    # Assistant tool calls: [{"id", "name", "arguments": {...}}]. Their string
    # leaves are also stored in ToolArgument so search never parses JSON.
    tool_calls = models.JSONField(default=list, blank=True)
    tool_call_id = models.CharField(max_length=255, blank=True, default="")
    session_id = models.CharField(max_length=255, blank=True, default="")
    # The message's id where it came from: a client's own message id, an
    # imported record's uuid. Unique in its thread, so a retried append or a
    # re-imported file stores nothing twice ("" means none was given).
    source_id = models.CharField(max_length=255, blank=True, default="", db_default="")
    model_visible = models.BooleanField(default=True)
    isolated = models.BooleanField(default=False)
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Who wrote a kind=summary message: "" for threadmem's compaction, or the
    # imported agent ("claude-code") whose own summary it is. A database
    # default, because the PostgreSQL append path COPYs named columns only.
    summary_origin = models.CharField(max_length=32, blank=True, default="", db_default="")

    objects = MessageQuerySet.as_manager()

    class Meta:
        ordering = ["thread_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["thread", "seq"], name="message_unique_seq"),
            models.UniqueConstraint(
                fields=["thread", "source_id"], condition=~Q(source_id=""), name="message_unique_source_id"
            ),
        ]
        indexes = [
            models.Index(fields=["thread", "generation", "seq"], name="message_thread_gen_seq"),
            # A tool-argument hit names its results (search/literal/links.py).
            models.Index(fields=["thread", "tool_call_id"], condition=~Q(tool_call_id=""), name="message_tool_call"),
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}:{self.seq} {self.role}"

    @property
    def searchable(self) -> bool:
        """What every model-facing read and search may show (SPEC §2 exclusions)."""
        return (
            self.kind == self.Kind.MESSAGE
            and self.model_visible
            and not self.isolated
            and self.superseded_by_id is None
        )


def searchable_q(prefix: str = "") -> Q:
    """The row filter behind ``Message.searchable``; ``prefix`` reaches the message (e.g. ``message__``)."""
    return Q(
        **{
            f"{prefix}kind": Message.Kind.MESSAGE,
            f"{prefix}model_visible": True,
            f"{prefix}isolated": False,
            f"{prefix}superseded_by__isnull": True,
        }
    )


SEARCHABLE = searchable_q()
# What the model sees of a generation (selectors.context_messages): machine events and summaries included.
MODEL_VISIBLE = Q(model_visible=True, isolated=False, superseded_by__isnull=True)


class Import(models.Model):
    """One import of agent sessions (threadmem/imports): an API upload, or a run of the command.

    The upload is kept in ``path`` until its task has run; ``errors`` holds
    the first problems (file, line, reason), ``lines_skipped`` counts them all.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

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
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"import {self.pk} ({self.format}, {self.status})"


class ToolArgument(models.Model):
    """One string leaf of one tool call's arguments, with its path.

    ``path`` is what search shows as ``field=tool_args.<path>``, e.g.
    ``command`` or ``files[0].path``.
    """

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="tool_arguments")
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="+")
    call_index = models.PositiveIntegerField()
    tool_call_id = models.CharField(max_length=255, blank=True, default="")
    tool_name = models.CharField(max_length=255, blank=True, default="")
    path = models.CharField(max_length=1000)
    value = models.TextField()

    class Meta:
        ordering = ["message_id", "call_index", "id"]
        indexes = [
            models.Index(fields=["thread", "message"], name="toolarg_thread_message"),
            # A hit in a tool result names its call (search/literal/links.py).
            models.Index(fields=["thread", "tool_call_id"], condition=~Q(tool_call_id=""), name="toolarg_tool_call"),
        ]

    def __str__(self) -> str:
        return f"{self.message_id} tool_args.{self.path}"


class Chunk(models.Model):
    """One embedded piece of a message, for the semantic part (threadmem/embeddings).

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
    failures = models.PositiveIntegerField(default=0)  # consecutive failed runs
    last_error = models.TextField(blank=True, default="")
    failed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["thread_id", "model"]
        constraints = [models.UniqueConstraint(fields=["thread", "model"], name="embedding_progress_unique")]

    def __str__(self) -> str:
        return f"{self.thread_id} {self.model} through seq {self.embedded_seq}"


class Compaction(models.Model):
    """One compaction of one generation: its history and its claim."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

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
        ordering = ["-created_at", "-id"]
        constraints = [
            # At most one live compaction per generation: a second request
            # finds the running one instead of starting another.
            models.UniqueConstraint(
                fields=["thread", "generation"],
                condition=Q(status__in=["pending", "running"]),
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


class ToolCall(models.Model):
    """The tool-call log: every memory-tool call the service answered."""

    class Tool(models.TextChoices):
        SEARCH_MEMORY = "search_memory"
        MESSAGE_CONTEXT_READ = "message_context_read"

    class Surface(models.TextChoices):
        API = "api"
        AGENT = "agent"
        CONSOLE = "console"
        MCP = "mcp"
        CLI = "cli"

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    thread = models.ForeignKey(Thread, null=True, blank=True, on_delete=models.SET_NULL, related_name="tool_calls")
    caller = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    surface = models.CharField(max_length=16, choices=Surface.choices, default=Surface.API)
    tool = models.CharField(max_length=32, choices=Tool.choices)
    arguments = models.JSONField(default=dict)
    hits_total = models.PositiveIntegerField(default=0)
    hits_shown = models.PositiveIntegerField(default=0)
    chars_returned = models.PositiveIntegerField(default=0)
    truncated = models.BooleanField(default=False)
    latency_ms = models.FloatField(default=0.0)
    status_code = models.PositiveIntegerField(default=200)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["thread", "created_at"], name="toolcall_thread_time")]

    def __str__(self) -> str:
        return f"{self.tool} {self.created_at:%Y-%m-%d %H:%M:%S}"


class IsolationEvent(models.Model):
    """The audit trail of isolation toggles: who set what, when."""

    created_at = models.DateTimeField(auto_now_add=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    thread = models.ForeignKey(Thread, null=True, blank=True, on_delete=models.CASCADE, related_name="isolation_events")
    message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.CASCADE, related_name="isolation_events"
    )
    isolated = models.BooleanField()
    surface = models.CharField(max_length=16, default="api")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(thread__isnull=False) | Q(message__isnull=False), name="isolation_event_has_target"
            )
        ]

    def __str__(self) -> str:
        target = f"message {self.message_id}" if self.message_id else f"thread {self.thread_id}"
        return f"{target} isolated={self.isolated}"
