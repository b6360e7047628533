"""Map domain errors to HTTP answers that name the problem."""

from __future__ import annotations

from typing import Any

from rest_framework import status
from rest_framework.exceptions import ParseError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from threadmem.errors import DomainError


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DomainError):
        body: dict[str, Any] = {"detail": exc.message}
        if exc.field:
            body["field"] = exc.field
        return Response(body, status=exc.status_code)
    if isinstance(exc, ParseError):
        return Response({"detail": f"the body is not valid JSON: {exc.detail}"}, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
