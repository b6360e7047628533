"""The MCP caller: a DRF token, checked with REST's own rules and answered with REST's messages."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated

# Over HTTP either scheme works: MCP clients send Bearer, DRF clients send Token.
SCHEMES = ("bearer", "token")


class Unauthenticated(Exception):
    """No token or a wrong one: HTTP answers 401, stdio refuses to start."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def token_from_header(header: str | None) -> str:
    """The key of ``Authorization: Bearer <key>`` or ``Token <key>``."""
    if not header or not header.strip():
        raise Unauthenticated(str(NotAuthenticated.default_detail))
    scheme, _, key = header.strip().partition(" ")
    key = key.strip()
    if scheme.lower() not in SCHEMES:
        raise Unauthenticated("send Authorization: Bearer <token> (a threadmem API token)")
    if not key or " " in key:
        raise Unauthenticated("Invalid token header. Token string should not contain spaces.")
    return key


def user_for_token(key: str | None) -> AbstractBaseUser:
    """The active user owning the DRF token ``key`` (one query, as REST's TokenAuthentication)."""
    if not key or not key.strip():
        raise Unauthenticated(str(NotAuthenticated.default_detail))
    try:
        user, _ = TokenAuthentication().authenticate_credentials(key.strip())
    except AuthenticationFailed as err:
        raise Unauthenticated(str(err.detail)) from None
    return user
