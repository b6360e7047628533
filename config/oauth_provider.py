"""django-oauth-toolkit's settings for the authorization server hosted MCP clients use (oauth/, docs/mcp.md)."""

from __future__ import annotations

from typing import Any


def oauth2_provider(
    *, issuer: str, registration: bool, access_token_seconds: int, refresh_token_days: int
) -> dict[str, Any]:
    """OAUTH2_PROVIDER: PKCE always, rotating refresh tokens, RFC 9700's rules; open registration when asked."""
    return {
        "SCOPES": {"mcp": "Search your threads and read their stored messages over MCP"},
        "DEFAULT_SCOPES": ["mcp"],
        "OAUTH2_VALIDATOR_CLASS": "oauth.validators.ConnectorValidator",
        "PKCE_REQUIRED": True,
        "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
        "ACCESS_TOKEN_EXPIRE_SECONDS": access_token_seconds,
        "REFRESH_TOKEN_EXPIRE_SECONDS": refresh_token_days * 86400,
        "ROTATE_REFRESH_TOKEN": True,
        # A refresh token used twice revokes its whole family (a stolen one stops working for both holders).
        "REFRESH_TOKEN_REUSE_PROTECTION": True,
        "REQUEST_APPROVAL_PROMPT": "force",
        # Loopback redirect URIs on any port (RFC 8252 §7.3): a client on the owner's machine picks a free one.
        "ALLOW_LOCALHOST_LOOPBACK": True,
        "OIDC_ISS_ENDPOINT": issuer,
        "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
        "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
        "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_post", "client_secret_basic"],
        "DCR_ENABLED": registration,
        "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
        # RFC 9700 (OAuth security best practice): no implicit or password grant, no "plain" PKCE, tokens only in the
        # Authorization header, the issuer in the authorization response, tokens stored as hashes.
        "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
        "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
        "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
        "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
        "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
        "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    }
