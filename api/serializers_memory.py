"""JSON shapes of the memory endpoints: search, audit read, the tool-call log, the tools (contract §6).

As in ``api/serializers.py``, output serializers render results and the
``*Request`` serializers only describe bodies for the OpenAPI schema; search's
comes from the tool's declaration, the answers' from theirs (``threadmem.features.search.answers``),
and the rules for input live in ``threadmem.features.search``.
"""

from __future__ import annotations

from rest_framework import serializers

from api.declared import answer_serializer, request_serializer
from api.serializers import ReadOnlyModelSerializer
from threadmem.features.search.answers import AUDIT_READ, SEARCH_RESULT
from threadmem.features.tools import SearchMemoryRequest
from threadmem.models import ToolCall

# search_memory's body, from the tool's declaration (threadmem/features/tools/requests.py).
SearchRequest = request_serializer(SearchMemoryRequest, "SearchRequest")


# The answers, from their one declaration (threadmem/features/search/answers.py).
SearchResultSerializer = answer_serializer(SEARCH_RESULT, "SearchResultSerializer")
AuditReadSerializer = answer_serializer(AUDIT_READ, "AuditReadSerializer")


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
