"""The authorization server hosted clients use to connect to /mcp/ (OAuth 2.1, the MCP specification's authorization).

django-oauth-toolkit does the OAuth: codes, PKCE, tokens, refresh, revocation,
dynamic client registration and the discovery documents. This package holds
what is threadmem's: the one resource tokens are issued for (the MCP endpoint,
``resource``), the rules on top of the library's views (``views``), and the
access-token check and the owner's list of connectors (``tokens``).
"""
