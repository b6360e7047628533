"""What threadmem keeps beside django-oauth-toolkit's rows: the authorization codes already exchanged."""

from __future__ import annotations

from django.db import models


class RedeemedCode(models.Model):
    """An authorization code exchanged once, and what that exchange issued.

    The library deletes a code's grant when it is exchanged, so a second exchange
    would only be refused; RFC 6749 §4.1.2 asks that the tokens of the first be
    revoked too (the code leaked: whoever holds those tokens may not be the client).
    Only the code's SHA-256 is kept, as the library keeps tokens.
    """

    code_checksum = models.CharField(max_length=64, unique=True)
    application = models.ForeignKey("oauth2_provider.Application", on_delete=models.CASCADE, related_name="+")
    # The refresh tokens' family (each refresh carries it on) and the first access token, revoked on a reuse.
    token_family = models.UUIDField(null=True, blank=True)
    access_token_id = models.BigIntegerField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"code redeemed by application {self.application_id}"
