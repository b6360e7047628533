"""What is logged about threads: the memory tools' calls and the isolation toggles."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from threadmem.models.history import NEWEST_FIRST, Message, Thread


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
    # search_memory: the literal plan that ran (LiteralPart.executed, search/literal/literal_search.py); else None
    plan = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = NEWEST_FIRST
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
        ordering = NEWEST_FIRST
        constraints = [
            models.CheckConstraint(
                condition=Q(thread__isnull=False) | Q(message__isnull=False), name="isolation_event_has_target"
            )
        ]

    def __str__(self) -> str:
        target = f"message {self.message_id}" if self.message_id else f"thread {self.thread_id}"
        return f"{target} isolated={self.isolated}"


class Deletion(models.Model):
    """The record of one deletion: who removed what and how much, never the content removed.

    Names are kept as text: the thread is gone, and the actor or owner may be
    erased after it (``manage.py forget_owner``).
    """

    class Kind(models.TextChoices):
        THREAD = "thread"
        MESSAGE = "message"
        OWNER = "owner"

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # "retention" or "forget_owner" when no person asked (the periodic task, a command run without --actor).
    actor_name = models.CharField(max_length=150)
    owner_name = models.CharField(max_length=150)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    surface = models.CharField(max_length=16, default="api")
    channel = models.CharField(max_length=255, blank=True, default="")
    message_id = models.BigIntegerField(null=True, blank=True)
    # Rows removed per table ("messages", "tool_arguments", "chunks", ...) and the threads' channels.
    counts = models.JSONField(default=dict)

    class Meta:
        ordering = NEWEST_FIRST

    def __str__(self) -> str:
        return f"{self.kind} {self.channel or self.owner_name} by {self.actor_name}"
