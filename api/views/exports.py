"""A thread's export: threadmem's own JSONL, streamed (threadmem/features/imports/export.py writes the lines)."""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from api.endpoints import thread_endpoint
from api.serializers import ErrorSerializer
from threadmem.domain import selectors
from threadmem.features.imports.export import export_filename, thread_export_lines
from threadmem.models import Thread

NDJSON = "application/x-ndjson"


class ThreadExportView(APIView):
    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # The answer is JSONL whatever the client accepts; an error answers as JSON, as everywhere in the API.
        return super().perform_content_negotiation(request, force=True)

    # Outermost: the answers by media type (the decorator's own would say JSON for the 200 too).
    @extend_schema(
        responses={
            (200, NDJSON): OpenApiResponse(OpenApiTypes.STR, description="the thread's JSONL"),
            **{(code, "application/json"): ErrorSerializer for code in (401, 404)},
        }
    )
    @thread_endpoint(
        summary="Export a thread as threadmem JSONL",
        description=(
            'Streams the thread as `application/x-ndjson`: a header line (`{"format": "threadmem", '
            '"version": 1, "type": "thread", …}`: the channel, title, source fields, times, isolation, the parent '
            "and fork message seq of a fork), a line per generation, a line per message in seq order with every "
            "stored field, and an end line with the counts. `POST /api/v1/imports/` and `manage.py "
            "import_sessions` restore it. For callers who are not staff, an isolated message (and a summary an "
            "isolation rewrote) keeps its place and flags without content or tool calls (`content_withheld`), as "
            "in the message list. The format: docs/imports.md."
        ),
        responses={},
        tags=["threads"],
    )
    def get(self, request: Request, thread: Thread) -> StreamingHttpResponse:
        lines = thread_export_lines(thread=thread, withhold_isolated=not selectors.is_operator(request.user))
        response = StreamingHttpResponse(lines, content_type=NDJSON)
        response["Content-Disposition"] = f'attachment; filename="{export_filename(thread.channel)}"'
        return response
