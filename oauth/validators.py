"""django-oauth-toolkit's request validator, with one leniency about scopes."""

from __future__ import annotations

from typing import Any

from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.scopes import get_scopes_backend


class ConnectorValidator(OAuth2Validator):
    def validate_scopes(self, client_id: str, scopes: list[str], client: Any, request: Any, *args, **kwargs) -> bool:
        """Grant the scopes this server knows and ignore the others (RFC 6749 §3.3 lets it).

        Hosted clients ask for scopes of their own naming; refusing them would
        end the connection at the first step. The token response names the
        scopes granted. ``scopes`` is the request's own list, so it is narrowed
        in place.
        """
        available = set(get_scopes_backend().get_available_scopes(application=client, request=request))
        known = [scope for scope in scopes if scope in available]
        scopes[:] = known or list(get_scopes_backend().get_default_scopes(application=client, request=request))
        return True
