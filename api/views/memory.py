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

from api.declared import path_parameter, query_parameters
from api.endpoints import errors
from api.serializers import DeletionSerializer
from api.serializers import MessageSerializer as StoredMessageSerializer
from api.serializers_memory import (
    AuditReadSerializer,
    MessageIsolationRequest,
    SearchRequest,
    SearchResultSerializer,
    ToolCallLogSerializer,
    ToolSchemaSerializer,
)
from api.views.threads import JSONAPIView, Pagination, body_object
from threadmem.domain import selectors, services
from threadmem.domain.render import message_data
from threadmem.errors import InvalidInput
from threadmem.features.erase.messages import message_erase
from threadmem.features.search import message_context_read, search_memory
from threadmem.features.search.answer_caps import AUDIT_READ_MAX_CHARS, THREAD_SEARCH_MAX_CHARS
from threadmem.features.search.answers import audit_read_data, search_result_data
from threadmem.features.tools import TOOLS, MessageContextReadRequest, SearchMemoryRequest
from threadmem.infrastructure.replicas import model_facing_read
from threadmem.models import ToolCall

MESSAGE_ID_PARAMETER = path_parameter(MessageContextReadRequest, "message_id")


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


NOT_AN_OBJECT = (
    f"the body must be a JSON object with {_listed(SearchMemoryRequest.required())} and, optionally, "
    f"{_listed(SearchMemoryRequest.optional())}"
)
UNKNOWN_FIELDS = f"unknown fields: {{unknown}} (allowed: {', '.join(SearchMemoryRequest.args())})"


def _search(request: Request, data: Any) -> Response:
    if not isinstance(data, dict):
        raise InvalidInput(NOT_AN_OBJECT)
    search = SearchMemoryRequest.from_call(data, unknown_message=UNKNOWN_FIELDS)
    result = search_memory(user=request.user, **search.keywords(), surface="api")
    return Response(search_result_data(result))


# A search is a read whatever its method: its log row does not hold the caller's next reads back
# (threadmem/infrastructure/replicas/rule.py says why).
@model_facing_read(methods={"GET", "HEAD", "POST"})
class SearchView(JSONAPIView):
    @extend_schema(
        summary="search_memory: bounded literal search of stored history",
        description=(
            f"`text` is exactly what a model reads: at most {THREAD_SEARCH_MAX_CHARS:,} characters whatever matched. "
            "With `channel`, "
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
        parameters=query_parameters(SearchMemoryRequest),
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
            f"`text` is what the model reads (at most {AUDIT_READ_MAX_CHARS:,} characters)."
        ),
        parameters=[MESSAGE_ID_PARAMETER, *query_parameters(MessageContextReadRequest, exclude=("message_id",))],
        responses={200: AuditReadSerializer, **errors(400, 401, 404)},
        tags=["memory"],
    )
    def get(self, request: Request, message_id: str) -> Response:
        # The path's id as given: the domain answers 404 to one that names no message.
        arguments = {"message_id": message_id, "offset": _offset(request.query_params.get("offset"))}
        if "view" in request.query_params:
            arguments["view"] = request.query_params["view"]
        read = MessageContextReadRequest.build(arguments)
        read = message_context_read(user=request.user, **read.keywords(), surface="api")
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

    @extend_schema(
        summary="Erase a message for good (admins only)",
        description=(
            "For a leaked secret: the message, its tool-call leaves and pieces are deleted, and every summary "
            "that may have quoted it is withdrawn and written again without it, as isolation does. Superusers "
            "and holders of threadmem.isolate only (403 otherwise). A summary is not erased itself (400), nor a "
            "message a fork starts from (409). The answer is the deletion's record (no content)."
        ),
        parameters=[MESSAGE_ID_PARAMETER],
        responses={200: DeletionSerializer, **errors(400, 401, 403, 404, 409)},
        tags=["memory"],
    )
    def delete(self, request: Request, message_id: str) -> Response:
        message = selectors.message_get_for(user=request.user, message_id=message_id, model_facing=False)
        return Response(DeletionSerializer(message_erase(message=message, actor=request.user)).data)


@model_facing_read(methods=())  # the log as written: a search's row is on the primary at once
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
