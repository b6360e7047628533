"""Threads, their messages and their current context (contract §6).

Views stay thin: check the body's shape, call one selector or service, render.
Reads go through ``thread_get_for`` so another owner's thread answers 404;
the rules for messages, channels and isolation live in the services.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.endpoints import errors, one_or_many, thread_endpoint
from api.fastjson import FastJSONParser, FastJSONRenderer, SafeJSONParser
from api.serializers import (
    ContextSerializer,
    DeletionSerializer,
    MessageRequest,
    MessageSerializer,
    ThreadCreateRequest,
    ThreadDetailSerializer,
    ThreadSerializer,
    ThreadUpdateRequest,
)
from threadmem.domain import selectors, services
from threadmem.domain.render import messages_data
from threadmem.errors import InvalidInput
from threadmem.features.erase.thread_delete import thread_delete
from threadmem.infrastructure.replicas import model_facing_read
from threadmem.lib.validate import require_keys
from threadmem.models import Thread

THREAD_CREATE_FIELDS = {"channel", "title", "fork_from", "project"}
FORK_FROM_FIELDS = {"channel", "message_id"}
THREAD_UPDATE_FIELDS = {"title", "isolated"}


class Pagination(PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 1000

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any] | None:
        raw = request.query_params.get(self.page_query_param)
        if raw not in (None, "", *self.last_page_strings) and not (raw.isascii() and raw.isdigit() and int(raw) >= 1):
            raise InvalidInput(f"page must be a positive integer (1 is the first page), got {raw!r}", field="page")
        # DRF ignores a page_size it cannot read and caps a large one; the schema promises 1 to max_page_size.
        size = request.query_params.get(self.page_size_query_param)
        if size not in (None, "") and not (size.isascii() and size.isdigit() and 1 <= int(size) <= self.max_page_size):
            raise InvalidInput(
                f"page_size must be an integer from 1 to {self.max_page_size}, got {size!r}", field="page_size"
            )
        return super().paginate_queryset(queryset, request, view)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"]["minimum"] = 1
            elif parameter["name"] == self.page_size_query_param:
                parameter["schema"].update(minimum=1, maximum=self.max_page_size)
        return parameters


def body_object(request: Request, *, allowed: set[str], name: str = "the body") -> dict[str, Any]:
    """The JSON body as an object with no fields beyond ``allowed``."""
    data = request.data
    if not isinstance(data, dict):
        raise InvalidInput(f"{name} must be a JSON object")
    require_keys(data, allowed, unknown_message=f"{name} has unknown fields: {{unknown}} (allowed: {{allowed}})")
    return data


def fork_from_object(fork_from: Any) -> dict[str, Any]:
    if not isinstance(fork_from, dict):
        raise InvalidInput("fork_from must be an object with channel and message_id", field="fork_from")
    require_keys(
        fork_from,
        FORK_FROM_FIELDS,
        FORK_FROM_FIELDS,
        missing_message="missing: {missing}",
        joined_message="fork_from must have exactly channel and message_id ({problems})",
        unknown_field="fork_from",
    )
    if not isinstance(fork_from["channel"], str):
        raise InvalidInput("fork_from.channel must be a string", field="fork_from")
    return fork_from


@model_facing_read  # its GETs: threadmem/infrastructure/replicas/middleware.py routes them
class JSONAPIView(APIView):
    # Only JSON: a form-encoded body would otherwise parse into a QueryDict
    # and fail later with a less helpful message. Other types answer 415.
    parser_classes = [SafeJSONParser]


class ThreadListView(JSONAPIView):
    pagination_class = Pagination

    @extend_schema(
        summary="List the threads the caller may read",
        description="Owners see their own threads, operators (staff) see all; most recent activity first.",
        responses={200: ThreadSerializer(many=True), **errors(400, 401, 404)},
        tags=["threads"],
    )
    def get(self, request: Request) -> Response:
        threads = selectors.thread_list_for(user=request.user).select_related("parent")
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(threads, request, view=self)
        return paginator.get_paginated_response(ThreadSerializer(page, many=True).data)

    @extend_schema(
        summary="Create a thread, or fork one at a message",
        description=(
            "Without `channel` a unique one is generated. With `fork_from` the new thread inherits the parent's "
            "history up to and including that message; the parent must be readable by the caller."
        ),
        request=ThreadCreateRequest,
        responses={201: ThreadSerializer, **errors(400, 401, 404, 409)},
        tags=["threads"],
    )
    def post(self, request: Request) -> Response:
        body = body_object(request, allowed=THREAD_CREATE_FIELDS)
        fork_message = None
        if body.get("fork_from") is not None:
            fork_from = fork_from_object(body["fork_from"])
            parent = selectors.thread_get_for(user=request.user, channel=fork_from["channel"])
            fork_message = services.message_lookup_in_thread(thread=parent, message_id=fork_from["message_id"])
        thread = services.thread_create(
            owner=request.user,
            channel=body.get("channel"),
            title=body.get("title", ""),
            fork_from=fork_message,
            project=body.get("project"),
        )
        return Response(ThreadSerializer(thread).data, status=status.HTTP_201_CREATED)


def thread_detail(thread: Thread) -> dict[str, Any]:
    generations = selectors.generation_list_for(thread=thread)
    return ThreadDetailSerializer(thread, context={"generations": generations}).data


class ThreadDetailView(JSONAPIView):
    @thread_endpoint(
        summary="Read a thread with its generations", responses={200: ThreadDetailSerializer}, tags=["threads"]
    )
    def get(self, request: Request, thread: Thread) -> Response:
        return Response(thread_detail(thread))

    @thread_endpoint(
        summary="Change a thread's title, or (admins only) its isolation",
        description=(
            "`isolated` is for superusers and holders of the threadmem.isolate permission (403 for anyone else, "
            "with nothing changed); every toggle writes an audit row."
        ),
        request=ThreadUpdateRequest,
        responses={200: ThreadDetailSerializer, **errors(400, 403)},
        tags=["threads"],
    )
    def patch(self, request: Request, thread: Thread) -> Response:
        body = body_object(request, allowed=THREAD_UPDATE_FIELDS)
        if not body:
            raise InvalidInput("nothing to change: send title and/or isolated")
        # Isolation first: a refused toggle must not leave a changed title behind.
        with transaction.atomic():
            if "isolated" in body:
                services.thread_set_isolated(thread=thread, isolated=body["isolated"], actor=request.user)
            if "title" in body:
                services.thread_update(thread=thread, title=body["title"])
        return Response(thread_detail(thread))

    @thread_endpoint(
        summary="Delete a thread and everything derived from it",
        description=(
            "The owner deletes its own threads, operators any. Messages, tool-call leaves, pieces and their "
            "indexes, compactions, the thread's tool-call log rows, capture cursors and the server's copies of "
            "captured files under every name they were sent, import records: all go. Background work of the thread "
            "(embedding, compaction, import, capture) stops or lands before, and goes with it. A thread with forks "
            "answers 409 naming them unless `forks=delete` deletes them with it. A deletion that stopped half way "
            "(503) is finished by sending DELETE again. The answer is the deletion's record (no content)."
        ),
        parameters=[
            OpenApiParameter("forks", str, enum=["refuse", "delete"], description="what to do with forks (refuse)")
        ],
        responses={200: DeletionSerializer, **errors(400, 409, 503)},
        tags=["threads"],
        withdrawn=True,
    )
    def delete(self, request: Request, thread: Thread) -> Response:
        forks = request.query_params.get("forks", "refuse")
        if forks not in ("refuse", "delete"):
            raise InvalidInput(f"forks must be refuse or delete, got {forks!r}", field="forks")
        deletion = thread_delete(thread=thread, actor=request.user, with_forks=forks == "delete")
        return Response(DeletionSerializer(deletion).data)


class MessageListView(JSONAPIView):
    pagination_class = Pagination
    # The ingest hot path: batches of up to 1,000 messages in and out.
    parser_classes = [FastJSONParser]
    renderer_classes = [FastJSONRenderer]

    @thread_endpoint(
        summary="List a thread's stored messages in seq order",
        description=(
            "Every stored message, flags shown (isolated, model_visible, superseded_by, kind). For non-staff "
            "callers an isolated message keeps its place and flags but comes without content or tool calls."
        ),
        parameters=[
            OpenApiParameter("generation", {"type": "integer", "minimum": 1}, description="only this generation")
        ],
        responses={200: MessageSerializer(many=True), **errors(400)},
        tags=["messages"],
    )
    def get(self, request: Request, thread: Thread) -> Response:
        messages = selectors.message_list_for(thread=thread, generation=request.query_params.get("generation"))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(messages, request, view=self)
        hide_isolated = not selectors.is_operator(request.user)
        return paginator.get_paginated_response(messages_data(page, hide_isolated=hide_isolated))

    @thread_endpoint(
        summary="Append one message or a batch (all or nothing)",
        description=(
            "One message object answers with one stored message; a list (at most THREADMEM_MAX_BATCH, default "
            "1000) answers with the list. A batch with one bad item is refused whole, naming the item. A message "
            "over THREADMEM_MAX_MESSAGE_BYTES answers 413."
        ),
        request=one_or_many("MessageAppend", MessageRequest),
        responses={201: one_or_many("MessageAppended", MessageSerializer), **errors(400, 413)},
        tags=["messages"],
    )
    def post(self, request: Request, thread: Thread) -> Response:
        parsed = services.messages_parse(request.data)
        stored = messages_data(services.messages_store(thread=thread, messages=parsed))
        return Response(stored if isinstance(request.data, list) else stored[0], status=status.HTTP_201_CREATED)


class ContextView(JSONAPIView):
    @thread_endpoint(
        summary="What the model sees now",
        description=(
            "The current generation's summary and model-visible messages as OpenAI-style chat messages "
            "(isolated and superseded messages left out), ready to send to a chat model."
        ),
        responses={200: ContextSerializer},
        tags=["threads"],
    )
    def get(self, request: Request, thread: Thread) -> Response:
        messages = selectors.context_messages(thread)
        return Response(
            {"generation": thread.current_generation, "messages": [selectors.chat_message(m) for m in messages]}
        )
