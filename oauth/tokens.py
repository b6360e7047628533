"""OAuth access tokens at the MCP endpoint, and an owner's connectors (the clients holding their tokens)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max, Min
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_refresh_token_model,
)

from oauth.resource import same_resource

SCOPE = "mcp"


class TokenRefused(Exception):
    """An OAuth access token that exists but may not be used here: expired, or issued for another resource."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def access_token_user(key: str, *, resource: str) -> AbstractBaseUser | None:
    """The owner an OAuth access token acts as at ``resource``; None when no such token exists.

    A revoked token no longer exists (revocation deletes it). A token must name
    ``resource`` among its resources: one issued for another URL (another
    deployment, or this one under another public URL) is refused.
    """
    checksum = hashlib.sha256(key.encode("utf-8")).hexdigest()
    token = (
        get_access_token_model().objects.select_related("user", "application").filter(token_checksum=checksum).first()
    )
    if token is None or token.user is None:
        # A token with no owner (the registration endpoint's management token) acts as no one.
        return None
    if token.is_expired():
        raise TokenRefused("the access token has expired: refresh it or authorize again")
    if not token.allow_scopes([SCOPE]):
        raise TokenRefused(f"the access token lacks the {SCOPE!r} scope")
    if not any(same_resource(value, resource) for value in token.resource or []):
        raise TokenRefused(f"the access token was not issued for this resource ({resource})")
    if not token.user.is_active:
        raise TokenRefused("User inactive or deleted.")
    return token.user


@dataclass(frozen=True)
class Connector:
    """A client an owner authorized, as the console lists it."""

    application_id: int
    name: str
    client_id: str
    redirect_hosts: list[str]
    first_authorized: datetime
    last_token: datetime
    token_expires: datetime | None


def connectors_of(user: AbstractBaseUser) -> list[Connector]:
    """The clients holding a live token of ``user`` (an access token, or a refresh token not revoked), newest first."""
    access = get_access_token_model().objects.filter(user=user)
    refresh = get_refresh_token_model().objects.filter(user=user, revoked__isnull=True)
    ids = set(access.values_list("application_id", flat=True)) | set(refresh.values_list("application_id", flat=True))
    connectors = []
    for application in get_application_model().objects.filter(id__in=ids):
        issued = access.filter(application=application).aggregate(
            first=Min("created"), last=Max("created"), expires=Max("expires")
        )
        refreshed = refresh.filter(application=application).aggregate(first=Min("created"), last=Max("created"))
        firsts = [value for value in (issued["first"], refreshed["first"]) if value]
        lasts = [value for value in (issued["last"], refreshed["last"]) if value]
        connectors.append(
            Connector(
                application_id=application.id,
                name=application.name or "(unnamed client)",
                client_id=application.client_id,
                redirect_hosts=sorted({_host(uri) for uri in application.redirect_uris.split()}),
                first_authorized=min(firsts),
                last_token=max(lasts),
                token_expires=issued["expires"],
            )
        )
    return sorted(connectors, key=lambda connector: connector.last_token, reverse=True)


def revoke_connector(user: AbstractBaseUser, application_id: int) -> bool:
    """End everything ``user`` granted the client: its codes, access tokens and refresh tokens. False: nothing held."""
    with transaction.atomic():
        grants = get_grant_model().objects.filter(user=user, application_id=application_id)
        access = get_access_token_model().objects.filter(user=user, application_id=application_id)
        refresh = get_refresh_token_model().objects.filter(
            user=user, application_id=application_id, revoked__isnull=True
        )
        held = access.exists() or refresh.exists() or grants.exists()
        for token in refresh:
            token.revoke()  # deletes its access token too, and keeps the row so a replay is recognised
        access.delete()
        grants.delete()
    return held


def _host(uri: str) -> str:
    return urlsplit(uri).netloc or uri
