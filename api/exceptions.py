"""Map errors to JSON answers that name the problem.

Domain errors carry their status; DRF's own become its usual answers; anything
else is a defect, logged with its traceback and answered as a JSON 500 (never
Django's HTML page, which an API client cannot read).
"""

from __future__ import annotations

import logging
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import status
from rest_framework.exceptions import ParseError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from threadmem.errors import DomainError

logger = logging.getLogger(__name__)

SERVER_ERROR = "the server failed to answer this request; it is logged. Nothing was stored by it unless said otherwise"


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DomainError):
        body: dict[str, Any] = {"detail": exc.message}
        if exc.field:
            body["field"] = exc.field
        set_rollback()
        return Response(body, status=exc.status_code)
    if isinstance(exc, ParseError):
        return Response({"detail": f"the body is not valid JSON: {exc.detail}"}, status=status.HTTP_400_BAD_REQUEST)
    response = drf_exception_handler(exc, context)
    if response is None:
        request = context.get("request")
        logger.error("unhandled error answering %s", getattr(request, "path", "?"), exc_info=exc)
        set_rollback()
        response = Response({"detail": SERVER_ERROR}, status=status.HTTP_500_INTERNAL_SERVER_ERROR)
    return response


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """``handler404``: JSON for a URL the API has no route for (a channel with a newline, say)."""
    if _is_api(request):
        return JsonResponse({"detail": f"no API route matches {request.path!r}"}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: JSON on API paths for an error outside a DRF view (middleware, URL resolution)."""
    if _is_api(request):
        return JsonResponse({"detail": SERVER_ERROR}, status=500)
    return defaults.server_error(request)
