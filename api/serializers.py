"""DRF serializers: the JSON shapes of contract §6.

Output serializers render rows. The ``*Request`` serializers describe request
bodies for the OpenAPI schema only: the rules for incoming data live in
``threadmem.domain.services`` (``message_parse``, ``thread_create`` …) so the REST
API, the console and agent turns all enforce the same ones.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from threadmem.domain.services import (
    CHANNEL_MAX_CHARS,
    CHANNEL_RESERVED_LAST_SEGMENTS,
    ID_FIELD_MAX_CHARS,
    MAX_ROW_ID,
    TITLE_MAX_CHARS,
)
from threadmem.lib.projects import PROJECT_MAX_CHARS
from threadmem.models import Deletion, Message, Thread

# Python's whitespace (what str.strip removes) and control characters (category Cc), spelled out for patterns:
# \s means something else in each regex engine.
SPACE_CHARS = "\\t-\\r\\u001c-\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
CONTROL_CHARS = "\\u0000-\\u001f\\u007f-\\u009f"
# The channel grammar of services._check_channel: no '*', no control characters, no surrounding whitespace,
# no '.' or '..' segment, no trailing '/', no last segment that names a route. [\s\S] is any character in
# every engine ('.' stops at line separators in JavaScript).
CHANNEL_PATTERN = (
    f"^(?![\\s\\S]*/(?:{'|'.join(sorted(CHANNEL_RESERVED_LAST_SEGMENTS))})$)(?![\\s\\S]*/$)"
    "(?!(?:[\\s\\S]*/)?\\.\\.?(?:/|$))"
    f"[^*{SPACE_CHARS}{CONTROL_CHARS}](?:[^*{CONTROL_CHARS}]*[^*{SPACE_CHARS}{CONTROL_CHARS}])?$"
)

# --- output -------------------------------------------------------------------


# A ModelSerializer that only renders rows: every field of ``Meta.fields`` is read-only. (A comment, not a
# docstring: the schema would take a docstring for the description of every serializer built on it.)
class ReadOnlyModelSerializer(serializers.ModelSerializer):
    def get_extra_kwargs(self) -> dict[str, Any]:
        extra = super().get_extra_kwargs()
        for name in self.Meta.fields:
            extra[name] = {**extra.get(name, {}), "read_only": True}
        return extra


class ThreadSerializer(ReadOnlyModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True, help_text="the owner's username")
    parent = serializers.CharField(
        source="parent.channel",
        read_only=True,
        allow_null=True,
        help_text="channel of the thread this one was forked from, or null",
    )
    fork_message_id = serializers.IntegerField(
        read_only=True, allow_null=True, help_text="the parent's message this thread was forked at, or null"
    )
    project = serializers.CharField(
        read_only=True,
        help_text="the session's project: its git root, else its working directory; search's project filters by it",
    )

    class Meta:
        model = Thread
        fields = [
            "channel",
            "title",
            "project",
            "isolated",
            "current_generation",
            "owner",
            "parent",
            "fork_message_id",
            "created_at",
            "last_activity_at",
        ]


class GenerationSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    state = serializers.ChoiceField(choices=["open", "compacting", "closed"])
    summary_message_id = serializers.IntegerField(
        allow_null=True, help_text="the summary of this generation (it opens the next one), once compacted"
    )
    message_count = serializers.IntegerField(help_text="messages stored in this generation")
    started_at = serializers.DateTimeField()
    closed_at = serializers.DateTimeField(allow_null=True)


class DeletionSerializer(ReadOnlyModelSerializer):
    actor = serializers.CharField(source="actor_name", help_text="who deleted (a username, or the task that did)")
    owner = serializers.CharField(source="owner_name", help_text="whose data it was")
    counts = serializers.DictField(help_text="rows removed per table, and the channels of forks deleted with it")

    class Meta:
        model = Deletion
        fields = ["id", "created_at", "kind", "actor", "owner", "channel", "message_id", "surface", "counts"]


class ThreadDetailSerializer(ThreadSerializer):
    generations = serializers.SerializerMethodField()

    class Meta(ThreadSerializer.Meta):
        fields = [*ThreadSerializer.Meta.fields, "generations"]

    @extend_schema_field(GenerationSerializer(many=True))
    def get_generations(self, thread: Thread) -> list[dict[str, Any]]:
        # The view hands the rows in through the context: they come from one
        # grouped query (selectors.generation_list_for), not one per generation.
        return GenerationSerializer(self.context["generations"], many=True).data


class ToolCallSerializer(serializers.Serializer):
    id = serializers.CharField(max_length=ID_FIELD_MAX_CHARS, required=False, allow_blank=True, allow_null=True)
    # Blank names answer 400: at least one character that is not whitespace.
    name = serializers.RegexField(f"[^{SPACE_CHARS}]", max_length=ID_FIELD_MAX_CHARS)
    # An object (null reads as {}); a string holding one is read too, but the schema names the object only.
    arguments = extend_schema_field({"type": "object", "nullable": True})(serializers.JSONField)(
        required=False,
        help_text='a JSON object (or a string holding one, as in the OpenAI wire shape), e.g. {"command": "ls"}',
    )


class MessageSerializer(ReadOnlyModelSerializer):
    tool_calls = ToolCallSerializer(many=True, read_only=True)
    superseded_by = serializers.IntegerField(
        source="superseded_by_id", read_only=True, allow_null=True, help_text="id of the message that replaces it"
    )

    class Meta:
        model = Message
        fields = [
            "id",
            "generation",
            "seq",
            "role",
            "kind",
            "content",
            "tool_calls",
            "tool_call_id",
            "session_id",
            "source_id",
            "model_visible",
            "isolated",
            "superseded_by",
            "created_at",
        ]


class ChatToolCallFunctionSerializer(serializers.Serializer):
    name = serializers.CharField()
    arguments = serializers.CharField(help_text="the arguments as a JSON string")


class ChatToolCallSerializer(serializers.Serializer):
    id = serializers.CharField()
    type = serializers.ChoiceField(choices=["function"])
    function = ChatToolCallFunctionSerializer()


class ChatMessageSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Message.Role.choices)
    content = serializers.CharField(allow_blank=True)
    tool_calls = ChatToolCallSerializer(many=True, required=False)
    tool_call_id = serializers.CharField(required=False)


class ContextSerializer(serializers.Serializer):
    generation = serializers.IntegerField(help_text="the thread's current generation")
    messages = ChatMessageSerializer(
        many=True, help_text="what the model sees now, as OpenAI-style chat messages, oldest first"
    )


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="what is wrong, in words a caller can act on")
    field = serializers.CharField(required=False, help_text="the input field at fault, when there is one")


# --- request bodies (schema only) ---------------------------------------------


class ForkFromRequest(serializers.Serializer):
    channel = serializers.CharField(min_length=1, max_length=CHANNEL_MAX_CHARS, help_text="the thread to fork")
    message_id = serializers.IntegerField(help_text="the message of that thread the fork starts after")


class ThreadCreateRequest(serializers.Serializer):
    channel = serializers.RegexField(
        CHANNEL_PATTERN,
        min_length=1,
        max_length=CHANNEL_MAX_CHARS,
        required=False,
        allow_null=True,
        help_text="unique address such as slack:C042/1700000000.1; generated when omitted or null",
    )
    title = serializers.CharField(max_length=TITLE_MAX_CHARS, required=False, allow_blank=True, allow_null=True)
    fork_from = ForkFromRequest(required=False, allow_null=True)
    project = serializers.CharField(
        max_length=PROJECT_MAX_CHARS,
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="the project's path (search_memory's project filter); a fork without one takes its parent's",
    )


class ThreadUpdateRequest(serializers.Serializer):
    title = serializers.CharField(max_length=TITLE_MAX_CHARS, required=False, allow_blank=True)
    isolated = serializers.BooleanField(
        required=False, help_text="admins only: hide the thread from every search scope but its own"
    )


class MessageRequest(serializers.Serializer):
    role = serializers.ChoiceField(choices=Message.Role.choices)
    # null reads as omitted, in every field but role and model_visible.
    content = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="text; tool results live here too. Limited in size (413)",
    )
    tool_calls = ToolCallSerializer(many=True, required=False, allow_null=True, help_text="assistant messages only")
    tool_call_id = serializers.CharField(
        max_length=ID_FIELD_MAX_CHARS,
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="tool results: the call answered",
    )
    session_id = serializers.CharField(max_length=ID_FIELD_MAX_CHARS, required=False, allow_blank=True, allow_null=True)
    source_id = serializers.CharField(
        max_length=ID_FIELD_MAX_CHARS,
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text=(
            "the client's own id for this message, unique in the thread: an append that repeats a stored "
            "source_id stores nothing new for it and answers with the stored message, so retries never duplicate"
        ),
    )
    kind = serializers.ChoiceField(
        # The stored choices but "summary", which answers 400.
        choices=[choice for choice in Message.Kind.choices if choice[0] != Message.Kind.SUMMARY],
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="message (default) or machine_event; summaries are written by compaction only (400)",
    )
    model_visible = serializers.BooleanField(required=False, default=True)
    supersedes = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_ROW_ID,
        help_text="id of an earlier message of this thread that this one replaces",
    )
