"""Django admin for raw data work.

Isolation is read-only here: every toggle goes through
``services.thread_set_isolated``/``message_set_isolated`` (the console or the
API), so the audit trail never misses one. The logs (tool calls, isolation
events, deletions) are read-only records. Nothing is deleted here: a deletion goes
through ``threadmem.features.erase`` (the API, the commands), which removes what derives
from the rows too and records it. Foreign keys are raw ids: a select box with a
million messages would never render.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models.functions import Length

from threadmem.models import (
    Compaction,
    Deletion,
    EmbeddingProgress,
    Generation,
    IsolationEvent,
    Message,
    Thread,
    ToolArgument,
    ToolCall,
)


class NoDeleteAdmin(admin.ModelAdmin):
    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ReadOnlyAdmin(NoDeleteAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Thread)
class ThreadAdmin(NoDeleteAdmin):
    list_display = ["channel", "title", "owner", "isolated", "current_generation", "last_activity_at"]
    list_filter = ["isolated"]
    search_fields = ["channel", "title", "owner__username"]
    list_select_related = ["owner"]
    raw_id_fields = ["owner", "parent", "fork_message"]
    readonly_fields = ["isolated", "next_seq", "created_at", "last_activity_at"]
    date_hierarchy = "last_activity_at"


@admin.register(Generation)
class GenerationAdmin(NoDeleteAdmin):
    list_display = ["thread", "number", "state", "started_at", "closed_at", "summary_message"]
    list_filter = ["state"]
    search_fields = ["thread__channel"]
    list_select_related = ["thread"]
    raw_id_fields = ["thread", "summary_message"]


@admin.register(Message)
class MessageAdmin(NoDeleteAdmin):
    list_display = ["id", "thread", "generation", "seq", "role", "kind", "content_chars", "model_visible", "isolated"]
    list_filter = ["role", "kind", "model_visible", "isolated"]
    search_fields = ["=id", "thread__channel", "session_id", "tool_call_id"]
    list_select_related = ["thread"]
    raw_id_fields = ["thread", "superseded_by"]
    readonly_fields = ["isolated", "created_at"]
    show_full_result_count = False

    def get_queryset(self, request):
        # The list shows sizes, not content: never pull megabytes into a changelist.
        return super().get_queryset(request).defer("content", "tool_calls").annotate(_chars=Length("content"))

    @admin.display(description="chars", ordering="_chars")
    def content_chars(self, obj: Message) -> int:
        return obj._chars


@admin.register(ToolArgument)
class ToolArgumentAdmin(NoDeleteAdmin):
    list_display = ["message", "call_index", "tool_name", "path"]
    search_fields = ["tool_name", "path", "tool_call_id"]
    raw_id_fields = ["message", "thread"]
    show_full_result_count = False

    def get_queryset(self, request):
        return super().get_queryset(request).defer("value")


@admin.register(Compaction)
class CompactionAdmin(NoDeleteAdmin):
    list_display = [
        "thread",
        "generation",
        "status",
        "trigger",
        "requested_by",
        "created_at",
        "finished_at",
        "attempts",
    ]
    list_filter = ["status", "trigger"]
    search_fields = ["thread__channel", "task_id"]
    list_select_related = ["thread", "requested_by"]
    raw_id_fields = ["thread", "requested_by", "summary_message"]


@admin.register(EmbeddingProgress)
class EmbeddingProgressAdmin(NoDeleteAdmin):
    list_display = ["thread", "model", "embedded_seq", "chunks", "failures", "failed_at", "updated_at"]
    list_filter = ["model"]
    search_fields = ["thread__channel", "last_error"]
    list_select_related = ["thread"]
    raw_id_fields = ["thread"]


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "tool", "surface", "thread", "caller", "hits_total", "chars_returned", "truncated"]
    list_filter = ["tool", "surface", "truncated"]
    search_fields = ["thread__channel", "caller__username"]
    list_select_related = ["thread", "caller"]
    date_hierarchy = "created_at"
    show_full_result_count = False


@admin.register(IsolationEvent)
class IsolationEventAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "actor", "thread", "message", "isolated", "surface"]
    list_filter = ["isolated", "surface"]
    search_fields = ["thread__channel", "actor__username"]
    list_select_related = ["actor", "thread"]


@admin.register(Deletion)
class DeletionAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "kind", "channel", "owner_name", "actor_name", "surface"]
    list_filter = ["kind", "surface"]
    search_fields = ["channel", "owner_name", "actor_name"]
