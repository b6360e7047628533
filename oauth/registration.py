"""What keeps open client registration (RFC 7591) from being a way to fill the database.

Anyone may register a client, so registrations are counted per client address
(``THREADMEM_OAUTH_REGISTRATION``), and clients registered but never used are
bounded: those left unused past ``UNUSED_CLIENT_HOURS`` are removed at the next
registration, and past ``UNUSED_CLIENTS_MAX`` of them registration waits.
"""

from __future__ import annotations

import ipaddress
import math
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_refresh_token_model,
)
from oauth2_provider.settings import oauth2_settings
from rest_framework.throttling import SimpleRateThrottle

# A client registers right before its owner signs in and allows it: one that has had no code for a day never will.
UNUSED_CLIENT_HOURS = 24
# Unused clients at most: one address at the default rate cannot reach it within UNUSED_CLIENT_HOURS.
UNUSED_CLIENTS_MAX = 1000
# An IPv6 host is given a /64 of its own: counting single addresses would let it register without limit.
IPV6_PREFIX = 64


class RegistrationThrottle(SimpleRateThrottle):
    """Registrations per client address in the cache (set CACHE_URL so that every process counts in one)."""

    scope = "oauth-registration"

    def get_rate(self) -> str | None:
        return settings.THREADMEM_OAUTH_REGISTRATION_RATE

    def get_cache_key(self, request: Any, view: Any) -> str:
        # The peer's address only: X-Forwarded-For is the client's to write (uvicorn's --proxy-headers puts a
        # trusted proxy's in REMOTE_ADDR).
        return self.cache_format % {"scope": self.scope, "ident": client_network(request.META.get("REMOTE_ADDR", ""))}

    def retry_after(self) -> int:
        return max(1, math.ceil(self.wait() or 1))


def client_network(address: str) -> str:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address[:64]
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/{IPV6_PREFIX}", strict=False))
    return str(parsed)


def unused_clients() -> QuerySet:
    """Clients registered here that never got a code or a token (their registration token aside)."""
    application = OuterRef("pk")
    return (
        get_application_model()
        .objects.filter(registration_source="dcr")
        .exclude(Exists(get_grant_model().objects.filter(application=application)))
        .exclude(Exists(get_refresh_token_model().objects.filter(application=application)))
        .exclude(
            Exists(
                get_access_token_model()
                .objects.filter(application=application)
                .exclude(scope=oauth2_settings.DCR_REGISTRATION_SCOPE)
            )
        )
    )


def room_for_a_client() -> int:
    """Remove the clients unused past their time; 0 when one more may register, else seconds to wait."""
    cutoff = timezone.now() - timedelta(hours=UNUSED_CLIENT_HOURS)
    stale = unused_clients().filter(created__lt=cutoff).values_list("pk", flat=True)
    get_application_model().objects.filter(pk__in=list(stale)).delete()
    if unused_clients().count() < UNUSED_CLIENTS_MAX:
        return 0
    oldest = unused_clients().order_by("created").values_list("created", flat=True).first()
    return max(1, math.ceil((oldest - cutoff).total_seconds()))
