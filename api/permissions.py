"""Who may read the API's own description.

Every endpoint needs an authenticated caller (the project default,
``IsAuthenticated``: a missing or wrong token answers 401). Ownership is not a
permission class on purpose: the selectors scope every read to what the caller
may see, so another owner's thread answers 404 like one that does not exist.
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request


class SchemaAccess(BasePermission):
    """The OpenAPI schema and Swagger UI: signed-in callers only (a token or a console session)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user and request.user.is_authenticated)
