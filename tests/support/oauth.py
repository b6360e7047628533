"""OAuth over real HTTP, as a connector does it: register, have the owner sign in and allow, exchange the code."""

from __future__ import annotations

import base64
import hashlib
import html
import re
import secrets
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2

HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def pkce() -> tuple[str, str]:
    """A code verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def register(base: str, redirect_uri: str, name: str = "Test connector") -> str:
    response = httpx2.post(
        f"{base}/oauth/register/",
        json={
            "client_name": name,
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
    )
    assert response.status_code == 201, response.text
    return response.json()["client_id"]


def hidden_fields(page: str) -> dict[str, str]:
    return {name: html.unescape(value) for name, value in HIDDEN.findall(page)}


@dataclass
class Authorization:
    """Where the authorization endpoint sent the browser at the end: the client's redirect URI, or nowhere."""

    response: httpx2.Response

    @property
    def location(self) -> str:
        return self.response.headers.get("location", "")

    @property
    def params(self) -> dict[str, str]:
        return {key: values[0] for key, values in parse_qs(urlsplit(self.location).query).items()}


def authorize(base: str, username: str, query: dict[str, str], *, allow: bool = True) -> Authorization:
    """The authorization request in a cookie-keeping client: sign in at the console's login, then allow (or deny).

    Stops at the first answer that is not the login or the consent page: the
    redirect to the client, or an error page.
    """
    url = f"{base}/oauth/authorize/?{urlencode(query)}"
    with httpx2.Client(follow_redirects=False, timeout=30) as browser:
        first = browser.get(url)
        if first.status_code != 302 or "/console/login/" not in first.headers["location"]:
            return Authorization(first)
        login_url = base + first.headers["location"]
        login_page = browser.get(login_url)
        fields = hidden_fields(login_page.text)
        signed_in = browser.post(
            login_url,
            data={**fields, "username": username, "password": f"{username}-password"},
            headers={"Referer": login_url},
        )
        assert signed_in.status_code == 302, signed_in.text
        consent = browser.get(base + signed_in.headers["location"])
        if consent.status_code != 200 or 'name="allow"' not in consent.text:
            return Authorization(consent)
        form = hidden_fields(consent.text)
        if allow:
            form["allow"] = "Authorize"
        return Authorization(browser.post(url, data=form, headers={"Referer": url}))


def token_request(base: str, **data: str) -> httpx2.Response:
    return httpx2.post(f"{base}/oauth/token/", data=data)


def list_tools(base: str, token: str, path: str = "/mcp/") -> httpx2.Response:
    return httpx2.post(f"{base}{path}", json=LIST_TOOLS, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})
