"""JSON shapes of the memory endpoints: search, audit read, the tool-call log, the tools (contract §6).

As in ``api/serializers.py``, output serializers render results and the
``*Request`` serializers only describe bodies for the OpenAPI schema; search's
comes from the tool's declaration, and the rules for input live in ``threadmem.search``.
"""

from __future__ import annotations

from rest_framework import serializers

from api.declared import request_serializer
from api.serializers import ReadOnlyModelSerializer, ToolCallSerializer
from threadmem.models import Message, ToolCall
from threadmem.tools import SearchMemoryRequest

# search_memory's body, from the tool's declaration (threadmem/tools/requests.py).
SearchRequest = request_serializer(SearchMemoryRequest, "SearchRequest")


class HitSerializer(serializers.Serializer):
    message_id = serializers.IntegerField()
    session_id = serializers.CharField(allow_blank=True)
    generation = serializers.IntegerField()
    role = serializers.ChoiceField(choices=Message.Role.choices)
    field = serializers.CharField(help_text="content, or tool_args.<path> such as tool_args.files[0].path")
    window = serializers.CharField(help_text="the window as the model reads it, with its … / …[truncated] markers")
    tool = serializers.CharField(
        allow_null=True,
        help_text="a tool-argument hit: its call's tool; a hit in a tool result: its call's tool (null: no call "
        "stored); null for other hits",
    )
    result_message_ids = serializers.ListField(
        child=serializers.IntegerField(), help_text="a tool-argument hit: the messages holding its call's results"
    )
    call_message_id = serializers.IntegerField(
        allow_null=True, help_text="a hit in a tool result: the message holding its call"
    )
    result_chars = serializers.ListField(
        child=serializers.IntegerField(), help_text="a tool-argument hit: each result's length, as result_message_ids"
    )
    arguments = serializers.CharField(
        allow_blank=True, help_text="a tool-argument hit: the call's other arguments in brief ('offset=120 limit=40')"
    )
    identical_message_ids = serializers.ListField(
        child=serializers.IntegerField(), help_text="later hits with the same window, listed in this one"
    )


class SearchResultSerializer(serializers.Serializer):
    text = serializers.CharField(help_text="exactly what the model reads, at most 12,000 characters")
    literal_hits_total = serializers.IntegerField(
        help_text="literal hits counted; in the global scope counting stops at a bound (the text says 'more than')"
    )
    literal_hits_shown = serializers.IntegerField()
    truncated = serializers.BooleanField(help_text="the whole result was cut at 12,000 characters")
    hits = HitSerializer(many=True)
    next_cursor = serializers.CharField(
        allow_null=True, help_text="pass it back as cursor for the hits left out; null when nothing is left"
    )


class AuditReadSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    channel = serializers.CharField()
    generation = serializers.IntegerField()
    seq = serializers.IntegerField()
    role = serializers.ChoiceField(choices=Message.Role.choices)
    kind = serializers.ChoiceField(choices=Message.Kind.choices)
    session_id = serializers.CharField(allow_blank=True)
    tool_calls = ToolCallSerializer(many=True)
    tool_call_id = serializers.CharField(allow_blank=True)
    model_visible = serializers.BooleanField()
    isolated = serializers.BooleanField()
    superseded_by = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()
    content_chars = serializers.IntegerField(help_text="the length of the whole content, in characters")
    offset = serializers.IntegerField(help_text="where this page of content starts")
    content = serializers.CharField(allow_blank=True, help_text="the page of content from offset")
    next_offset = serializers.IntegerField(allow_null=True, help_text="where the next page starts; null at the end")
    result_message_ids = serializers.ListField(
        child=serializers.IntegerField(), help_text="an assistant's tool calls: the messages holding their results"
    )
    call_message_id = serializers.IntegerField(
        allow_null=True, help_text="a tool result: the assistant message holding its call"
    )
    call_tool = serializers.CharField(allow_null=True, help_text="a tool result: its call's tool name")
    calls = serializers.ListField(
        child=serializers.DictField(), help_text="an assistant's tool calls: id, tool and result_message_ids each"
    )
    text = serializers.CharField(help_text="exactly what the model reads: metadata plus the page, at most 12,000")


class MessageIsolationRequest(serializers.Serializer):
    isolated = serializers.BooleanField(help_text="hide the message from every model-facing read and search")


class ToolCallLogSerializer(ReadOnlyModelSerializer):
    channel = serializers.CharField(source="thread.channel", allow_null=True, read_only=True)
    caller = serializers.CharField(source="caller.username", allow_null=True, read_only=True)

    class Meta:
        model = ToolCall
        fields = [
            "id",
            "created_at",
            "channel",
            "caller",
            "surface",
            "tool",
            "arguments",
            "hits_total",
            "hits_shown",
            "chars_returned",
            "truncated",
            "latency_ms",
            "status_code",
        ]


class FunctionSchemaSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    parameters = serializers.JSONField(help_text="JSON Schema of the arguments")


class ToolSchemaSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=["function"])
    function = FunctionSchemaSerializer()
