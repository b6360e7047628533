"""Threads, their generations and messages, the tool-argument leaves search reads, and the message rules.

``MODEL_VISIBLE`` and ``SEARCHABLE`` are the one home of what the model sees
and what search may show (``Message.objects.visible()`` / ``.searchable()``).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

# The order of the rows kept as a history (the tool-call log, isolation events, imports, compactions).
NEWEST_FIRST = ["-created_at", "-id"]
# A thread being deleted (threadmem/features/erase/thread_delete.py) is renamed to this prefix and its id: DEL is
# a control character no channel may hold, so no caller names it, and listings leave it out.
WITHDRAWN_PREFIX = "\x7fdeleted:"


class Thread(models.Model):
    """One conversation of one agent, addressed by its ``channel``, unique per owner.

    Owners have a namespace each: a name another owner holds is free, so nothing tells who holds it.

    A fork points at its parent thread and at the parent's message it was
    forked from: the parent's history up to and including that message is the
    fork's ancestry (searchable, and the start of its context).
    """

    channel = models.CharField(max_length=255, db_index=True)
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
    # Where an imported thread came from (threadmem/features/imports): "claude-code" or
    # "openai" or "codex", the file (or upload) and the session id in it. Empty otherwise.
    source_format = models.CharField(max_length=32, blank=True, default="", db_default="")
    source_path = models.CharField(max_length=1000, blank=True, default="", db_default="")
    source_session_id = models.CharField(max_length=255, blank=True, default="", db_default="")
    # The agent's working directory (its project): the SessionStart catalogue lists a project's sessions by it.
    source_cwd = models.CharField(max_length=1000, blank=True, default="", db_default="")
    # The project search_memory's ``project`` filters by: the working directory resolved to its git root where the
    # client or this server could (threadmem/lib/projects.py). Empty: none known.
    project = models.CharField(max_length=1000, blank=True, default="", db_default="")

    class Meta:
        ordering = ["-last_activity_at", "-id"]
        permissions = [("isolate", "Can toggle isolation of threads and messages")]
        constraints = [models.UniqueConstraint(fields=["owner", "channel"], name="thread_owner_channel")]
        # A project's threads of one owner (search_memory's project filter, the console's).
        indexes = [models.Index(fields=["owner", "project"], name="thread_owner_project")]

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
    (``search.shared_sql.searchable_sql``) is held equal to it by
    tests/search/test_filters.py.
    """

    def visible(self) -> MessageQuerySet:
        return self.filter(MODEL_VISIBLE)

    def searchable(self) -> MessageQuerySet:
        return self.filter(SEARCHABLE)


class Message(models.Model):
    class Kind(models.TextChoices):
        MESSAGE = "message"
        MACHINE_EVENT = "machine_event"
        SUMMARY = "summary"

    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"
        TOOL = "tool"
        SYSTEM = "system"

    # Indexed by (thread, id) below, which also serves every lookup by thread alone.
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="messages", db_index=False)
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
            # A thread's messages newest first: an owner's newest window (search/literal/filter_sql.py, window_sql).
            models.Index(fields=["thread", "id"], name="message_thread_id"),
            # A tool-argument hit names its results (search/literal/filter_sql.py).
            models.Index(fields=["thread", "tool_call_id"], condition=~Q(tool_call_id=""), name="message_tool_call"),
            # The few messages of a thread no search shows now: a global ranked lane's filter
            # (search/ranked/spread.py).
            models.Index(
                fields=["thread", "id"],
                condition=Q(isolated=True)
                | Q(model_visible=False)
                | Q(superseded_by__isnull=False)
                | ~Q(kind="message"),
                name="message_hidden",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}:{self.seq} {self.role}"

    @property
    def searchable(self) -> bool:
        """What every model-facing read and search may show (contract §2 exclusions)."""
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


def quotes_isolated(message: Message) -> bool:
    """Isolated content: an isolated message, or a summary something superseded (a row, or a stored tuple).

    A summary is superseded when an isolation rewrote it
    (compaction/resummarize.py), so its text may quote what was isolated; a
    summary a client superseded is hidden too, which costs nothing the model
    reads (superseded messages are out of every context).
    """
    return message.isolated or (message.kind == Message.Kind.SUMMARY and message.superseded_by_id is not None)


SEARCHABLE = searchable_q()
# What the model sees of a generation (selectors.context_messages): machine events and summaries included.
MODEL_VISIBLE = Q(model_visible=True, isolated=False, superseded_by__isnull=True)


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
            # A hit in a tool result names its call (search/literal/filter_sql.py).
            models.Index(fields=["thread", "tool_call_id"], condition=~Q(tool_call_id=""), name="toolarg_tool_call"),
        ]

    def __str__(self) -> str:
        return f"{self.message_id} tool_args.{self.path}"
