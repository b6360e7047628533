"""Domain errors. Surfaces map them to HTTP answers (api/exceptions.py)."""

from __future__ import annotations


class DomainError(Exception):
    """Base class: ``str(err)`` is a message a caller can act on."""

    status_code = 400

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidInput(DomainError):
    status_code = 400


class PayloadTooLarge(DomainError):
    status_code = 413


class NotFound(DomainError):
    status_code = 404


class PermissionDenied(DomainError):
    status_code = 403


class Conflict(DomainError):
    status_code = 409


class ServiceUnavailable(DomainError):
    """A part the service needs (the task broker) cannot be reached; nothing was changed, try again."""

    status_code = 503
