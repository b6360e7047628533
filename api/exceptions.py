"""Map errors to JSON answers that name the problem.

Domain errors carry their status; DRF's own become its usual answers; a body
over Django's size limit answers 413; a database that cannot be reached
answers 503 with ``Retry-After`` (saying the request may have been stored
when the connection was lost at COMMIT); anything else is a defect, logged with its
traceback and answered as a JSON 500 (never Django's HTML page, which an API
client cannot read).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import DisallowedHost, RequestDataTooBig, TooManyFieldsSent
from django.db import InterfaceError, OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper
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
DATABASE_UNAVAILABLE = "the database cannot be reached; nothing was stored by this request. Try again shortly"
# The connection was lost once COMMIT was sent: the server may have committed before it went away.
DATABASE_OUTCOME_UNKNOWN = (
    "the database connection was lost while this request was being committed: it may have been stored; "
    "retry with the same source_id (a message already stored under it is not stored again)"
)
DATABASE_RETRY_AFTER_SECONDS = 5
# The connection's methods that send COMMIT, or run what follows a committed transaction.
COMMIT_FRAMES = frozenset({"commit", "_commit", "run_and_clear_commit_hooks"})
# PostgreSQL's connection failures: class 08, the server shutting down or starting (57P01-57P03), too many clients.
UNREACHABLE_SQLSTATES = ("08", "57P01", "57P02", "57P03", "53300")
# SQLite's: busy, locked, I/O error, cannot open the file (primary result codes).
UNREACHABLE_SQLITE_CODES = {5, 6, 10, 14}


def database_unreachable(exc: Exception) -> bool:
    """Whether ``exc`` says the database could not be reached (transient), not that a statement was wrong."""
    if isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, OperationalError):
        return False
    cause = exc.__cause__
    sqlite_code = getattr(cause, "sqlite_errorcode", None)
    if sqlite_code is not None:
        return sqlite_code & 0xFF in UNREACHABLE_SQLITE_CODES
    sqlstate = getattr(cause, "sqlstate", None)
    # psycopg raises a failed or lost connection without a SQLSTATE: the server never answered.
    return sqlstate is None or sqlstate.startswith(UNREACHABLE_SQLSTATES)


def lost_at_commit(exc: Exception) -> bool:
    """Whether ``exc`` came out of a COMMIT (or what runs after one) rather than from before the transaction ended.

    Django's wrapper raises the same error class either way; only the frames it passed through tell them apart.
    """
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name in COMMIT_FRAMES and isinstance(frame.f_locals.get("self"), BaseDatabaseWrapper):
            return True
        tb = tb.tb_next
    return False


def _too_big() -> str:
    return (
        f"the body is over {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes, the limit (DATA_UPLOAD_MAX_MEMORY_SIZE); "
        "send a smaller batch"
    )


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DomainError):
        body: dict[str, Any] = {"detail": exc.message}
        if exc.field:
            body["field"] = exc.field
        set_rollback()
        retry_after = getattr(exc, "retry_after", None)
        return Response(
            body, status=exc.status_code, headers={"Retry-After": str(retry_after)} if retry_after else None
        )
    if isinstance(exc, ParseError):
        return Response({"detail": f"the body is not valid JSON: {exc.detail}"}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, RequestDataTooBig):
        return Response({"detail": _too_big()}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, TooManyFieldsSent):
        return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
    if database_unreachable(exc):
        request = context.get("request")
        logger.warning("database unreachable answering %s: %s", getattr(request, "path", "?"), exc)
        set_rollback()
        return Response(
            {"detail": DATABASE_OUTCOME_UNKNOWN if lost_at_commit(exc) else DATABASE_UNAVAILABLE},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)},
        )
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


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """``handler400``: JSON on API paths for what Django refuses before a view (a bad Host, a body too big)."""
    if not _is_api(request):
        return defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        return JsonResponse({"detail": _too_big()}, status=413)
    if isinstance(exception, DisallowedHost):
        return JsonResponse({"detail": "the Host header is not one of ALLOWED_HOSTS"}, status=400)
    return JsonResponse({"detail": "the request is malformed"}, status=400)


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: JSON on API paths for an error outside a DRF view (middleware, URL resolution)."""
    if _is_api(request):
        return JsonResponse({"detail": SERVER_ERROR}, status=500)
    return defaults.server_error(request)
