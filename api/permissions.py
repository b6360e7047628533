"""Who may call what.

Every endpoint needs an authenticated caller (the project default,
``IsAuthenticated``: a missing or wrong token answers 401). Ownership is not a
permission class on purpose: the selectors (``thread_get_for``,
``message_get_for``) scope every read to what the caller may see, so another
owner's thread answers 404 exactly like one that does not exist, instead of a
403 that would confirm it exists. Isolation is checked by the services
(``can_isolate``) so the console and the API refuse it the same way; these
classes serve views that are for operators or admins as a whole.
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from threadmem.selectors import is_operator
from threadmem.services import ISOLATION_DENIED, can_isolate


class IsOperator(BasePermission):
    """Staff: read every thread and message."""

    message = "only operators (staff) may do this"

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user and request.user.is_authenticated and is_operator(request.user))


class CanIsolate(BasePermission):
    """Superusers and holders of ``threadmem.isolate``."""

    message = ISOLATION_DENIED

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user and request.user.is_authenticated and can_isolate(request.user))
