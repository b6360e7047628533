"""django-oauth-toolkit's request validator, with one leniency about scopes and one strictness about codes."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_refresh_token_model
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.scopes import get_scopes_backend
from oauth2_provider.settings import oauth2_settings

from oauth.models import RedeemedCode
from threadmem.lib.storable import text_problem


def checksum(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


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

    def _load_application(self, client_id: Any, request: Any) -> Any:
        # A client id from a Basic authorization header is not a form parameter: NUL is refused here too.
        if isinstance(client_id, str) and text_problem(client_id):
            return None
        return super()._load_application(client_id, request)

    def validate_code(self, client_id: str, code: str, client: Any, request: Any, *args, **kwargs) -> bool:
        """A code not held (or expired) is refused; one already exchanged also revokes what it issued."""
        if not isinstance(code, str) or text_problem(code):
            return False  # no code holds NUL, and PostgreSQL cannot be asked about one
        if super().validate_code(client_id, code, client, request, *args, **kwargs):
            return True
        redeemed = RedeemedCode.objects.filter(code_checksum=checksum(code), application=client).first()
        if redeemed is not None:
            _revoke(redeemed)
        return False

    def save_bearer_token(self, token: dict[str, Any], request: Any, *args, **kwargs) -> Any:
        saved = super().save_bearer_token(token, request, *args, **kwargs)
        if request.grant_type == "authorization_code" and request.code:
            _remember(request, token)
        return saved


def _remember(request: Any, token: dict[str, Any]) -> None:
    """Record the exchanged code with what it issued; a code exchanged twice at once revokes both issues."""
    access = get_access_token_model().objects.filter(token_checksum=checksum(token["access_token"])).first()
    refresh = (
        get_refresh_token_model().objects.filter(token_checksum=checksum(token["refresh_token"])).first()
        if token.get("refresh_token")
        else None
    )
    issued = {
        "token_family": refresh.token_family if refresh else None,
        "access_token_id": access.pk if access else None,
    }
    # Kept as long as a refresh token of the family can live; older rows go as new ones come.
    kept_from = timezone.now() - timedelta(seconds=oauth2_settings.REFRESH_TOKEN_EXPIRE_SECONDS)
    RedeemedCode.objects.filter(created__lt=kept_from).delete()
    with transaction.atomic():
        redeemed, created = RedeemedCode.objects.select_for_update().get_or_create(
            code_checksum=checksum(request.code), defaults={"application": request.client, **issued}
        )
    if not created:
        _revoke(redeemed)
        _revoke(RedeemedCode(**issued))


def _revoke(redeemed: RedeemedCode) -> None:
    """Revoke every token the code's exchange led to: its refresh tokens' family and the first access token."""
    if redeemed.token_family is not None:
        get_refresh_token_model().revoke_family(redeemed.token_family)
    if redeemed.access_token_id is not None:
        get_access_token_model().objects.filter(pk=redeemed.access_token_id).delete()
