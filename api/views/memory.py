"""Search, the audit read, message isolation, the tool-call log and the tools (contract §6).

Over REST, staff are operators: they search every thread that is not
isolated (the contract §2 exclusions still apply: search shows what a model could
be shown) and read every message with its flags. Everyone else is
model-facing: their own threads only, and an audit read only of what search
could show them; anything else answers 404 like a missing id.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.endpoints import errors
from api.serializers import MessageSerializer as StoredMessageSerializer
from api.serializers_memory import (
    QUERY_PATTERN,
    ROLE_SCHEMA,
    TOOL_NAMES_SCHEMA,
    AuditReadSerializer,
    MessageIsolationRequest,
    SearchRequest,
    SearchResultSerializer,
    ToolCallLogSerializer,
    ToolSchemaSerializer,
)
from api.views.threads import JSONAPIView, Pagination, body_object
from threadmem import selectors, services
from threadmem.errors import InvalidInput
from threadmem.lib.validate import require_keys
from threadmem.models import ToolCall
from threadmem.render import message_data
from threadmem.search import message_context_read, search_memory
from threadmem.search.answers import audit_read_data, search_result_data
from threadmem.search.bounded import QUERY_MAX_CHARS
from threadmem.tools import TOOLS

SEARCH_FIELDS = {"query", "channel", "cursor", "tool", "role"}
MESSAGE_ID_PARAMETER = OpenApiParameter(
    "message_id", {"type": "integer", "minimum": 1, "maximum": 2**63 - 1}, OpenApiParameter.PATH
)


def _search(request: Request, data: Any) -> Response:
    if not isinstance(data, dict):
        raise InvalidInput("the body must be a JSON object with query and, optionally, channel, cursor, tool and role")
    require_keys(
        data,
        SEARCH_FIELDS,
        {"query"},
        unknown_message="unknown fields: {unknown} (allowed: query, channel, cursor, tool, role)",
    )
    result = search_memory(
        user=request.user,
        query=data["query"],
        channel=data.get("channel"),
        cursor=data.get("cursor"),
        tool=data.get("tool"),
        role=data.get("role"),
        surface="api",
    )
    return Response(search_result_data(result))


class SearchView(JSONAPIView):
    @extend_schema(
        summary="search_memory: bounded literal search of stored history",
        description=(
            "`text` is exactly what a model reads: at most 12,000 characters whatever matched. With `channel`, "
            "every generation of that thread (and its fork ancestry); without it, every thread the caller may "
            "read that is not isolated (that needs 3+ letters or digits in a row in the query)."
        ),
        request=SearchRequest,
        responses={200: SearchResultSerializer, **errors(400, 401, 404)},
        tags=["memory"],
    )
    def post(self, request: Request) -> Response:
        return _search(request, request.data)

    @extend_schema(
        summary="search_memory with query parameters",
        parameters=[
            OpenApiParameter(
                "query",
                {"type": "string", "minLength": 1, "maxLength": QUERY_MAX_CHARS, "pattern": QUERY_PATTERN},
                required=True,
                description="literal text to find",
            ),
            OpenApiParameter("channel", OpenApiTypes.STR, description="the thread to search; omit for all"),
            OpenApiParameter(
                "cursor",
                {"type": "string", "minLength": 1},
                description="next_cursor of an earlier answer to the same query",
            ),
            OpenApiParameter(
                "tool", TOOL_NAMES_SCHEMA, explode=True, description="only hits of these tools' calls and results"
            ),
            OpenApiParameter("role", ROLE_SCHEMA, description="only hits in messages of this role"),
        ],
        responses={200: SearchResultSerializer, **errors(400, 401, 404)},
        tags=["memory"],
    )
    def get(self, request: Request) -> Response:
        data: dict[str, Any] = {key: request.query_params.get(key) for key in request.query_params}
        if "tool" in data:  # ?tool=Read&tool=Edit: a list; one: a name
            tools = request.query_params.getlist("tool")
            data["tool"] = tools[0] if len(tools) == 1 else tools
        return _search(request, data)


def _offset(raw: str | None) -> int:
    if raw is None or raw == "":
        return 0
    digits = raw.strip()
    # isdigit() alone admits '²' and other digits int() refuses.
    if not (digits.isascii() and digits.isdigit()):
        raise InvalidInput(f"offset must be a non-negative integer, got {raw!r}", field="offset")
    return int(digits)


class MessageView(JSONAPIView):
    @extend_schema(
        summary="message_context_read: one stored message, content paged",
        description=(
            "Model-facing for every caller, operators included: it reads exactly the messages search may show "
            "(operators: any owner's; others: their own threads), not isolated, not superseded, model-visible, not "
            "a machine event or summary; any other id answers 404. Operators see isolated messages in the console. "
            "`text` is what the model reads (at most 12,000 characters)."
        ),
        parameters=[
            MESSAGE_ID_PARAMETER,
            OpenApiParameter("view", OpenApiTypes.STR, enum=["audit"], description="only 'audit'"),
            OpenApiParameter(
                "offset",
                {"type": "integer", "minimum": 0},
                description="where the page of content starts; past the content's end answers 400",
            ),
        ],
        responses={200: AuditReadSerializer, **errors(400, 401, 404)},
        tags=["memory"],
    )
    def get(self, request: Request, message_id: str) -> Response:
        read = message_context_read(
            user=request.user,
            message_id=message_id,
            view=request.query_params.get("view", "audit"),
            offset=_offset(request.query_params.get("offset")),
            surface="api",
        )
        return Response(audit_read_data(read))

    @extend_schema(
        summary="Isolate a message (admins only)",
        description=(
            "An isolated message disappears from every model-facing read and search. Superusers and holders of "
            "threadmem.isolate only (403 otherwise); every toggle writes an audit row."
        ),
        parameters=[MESSAGE_ID_PARAMETER],
        request=MessageIsolationRequest,
        responses={200: StoredMessageSerializer, **errors(400, 401, 403, 404)},
        tags=["memory"],
    )
    def patch(self, request: Request, message_id: str) -> Response:
        message = selectors.message_get_for(user=request.user, message_id=message_id, model_facing=False)
        body = body_object(request, allowed={"isolated"})
        if "isolated" not in body:
            raise InvalidInput("send isolated: true or false", field="isolated")
        message = services.message_set_isolated(message=message, isolated=body["isolated"], actor=request.user)
        return Response(message_data(message))


class ToolCallListView(JSONAPIView):
    pagination_class = Pagination

    @extend_schema(
        summary="The tool-call log: every memory-tool call the service answered",
        description=(
            "Newest first. Operators see every call; other callers see calls on their own threads and calls they "
            "made themselves."
        ),
        parameters=[OpenApiParameter("channel", OpenApiTypes.STR, description="only calls on this thread")],
        responses={200: ToolCallLogSerializer(many=True), **errors(400, 401, 404)},
        tags=["memory"],
    )
    def get(self, request: Request) -> Response:
        calls = ToolCall.objects.select_related("thread", "caller")
        if not selectors.is_operator(request.user):
            calls = calls.filter(Q(thread__owner=request.user) | Q(caller=request.user))
        channel = request.query_params.get("channel")
        if channel:
            thread = selectors.thread_get_for(user=request.user, channel=channel)
            calls = calls.filter(thread=thread)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(calls, request, view=self)
        return paginator.get_paginated_response(ToolCallLogSerializer(page, many=True).data)


class ToolsView(JSONAPIView):
    @extend_schema(
        summary="The two memory tools as OpenAI function-calling schemas",
        description="Pass the list as the `tools` of a chat completion; run the calls through this API.",
        responses={200: ToolSchemaSerializer(many=True), **errors(401)},
        tags=["memory"],
    )
    def get(self, request: Request) -> Response:
        return Response(TOOLS)
