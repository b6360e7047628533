"""Domain errors. Surfaces map them to HTTP answers (api/exceptions.py)."""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    """Base class: ``str(err)`` is a message a caller can act on.

    A kind names its HTTP status where it is declared, ``class NotFound(DomainError, status_code=404)``;
    a kind that names none keeps its parent's.
    """

    status_code = 400

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def __init_subclass__(cls, *, status_code: int | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if status_code is not None:
            cls.status_code = status_code


class InvalidInput(DomainError):
    """The request's values break a rule (the default status, 400)."""


class PayloadTooLarge(DomainError, status_code=413):
    """A message or a batch over its size limit."""


class NotFound(DomainError, status_code=404):
    """No such row, or one the caller may not read: the two answer alike."""


class PermissionDenied(DomainError, status_code=403):
    """The caller may not make this change (isolation is for admins); nothing was changed."""


class Conflict(DomainError, status_code=409):
    """The request clashes with the stored state (a channel taken, nothing to compact)."""


class ServiceUnavailable(DomainError, status_code=503):
    """A part the service needs (the task broker) cannot be reached; nothing was changed, try again."""

    # Seconds a client waits before trying again (the Retry-After header).
    retry_after = 5
