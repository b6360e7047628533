"""OAuth 2.1 at /mcp/, over real HTTP against the deployment's ASGI app under uvicorn.

The whole flow is driven by the official SDK's ``OAuthClientProvider`` with
the owner's sign-in and consent in headless chromium; the refusals go through
the same endpoints with a plain HTTP client. The requests a connector makes
land in test-artifacts/oauth/flow.txt.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from django.conf import settings
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.utils import timezone
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from oauth2_provider.models import AccessToken, Application
from rest_framework.authtoken.models import Token

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, VIEWPORT
from tests.support.factories import append, make_thread
from tests.support.mcp_client import SECRET, asgi_server, free_port, text_of, token_of
from tests.support.oauth import (
    LIST_TOOLS,
    MCP_HEADERS,
    authorize,
    hidden_fields,
    list_tools,
    pkce,
    register,
    token_request,
)
from threadmem.models import Message

pytestmark = pytest.mark.django_db(transaction=True)

ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts" / "oauth"
PUBLIC_URL = "https://memory.example.com"


@pytest.fixture(scope="module")
def proxied_web(django_db_setup, tmp_path_factory) -> Iterator[str]:
    """The same app as behind a proxy at PUBLIC_URL, with registration off."""
    with asgi_server(
        tmp_path_factory.mktemp("uvicorn-proxied"),
        THREADMEM_PUBLIC_URL=PUBLIC_URL,
        THREADMEM_OAUTH_REGISTRATION="false",
    ) as url:
        yield url


@pytest.fixture(autouse=True)
def passwords_the_server_checks(alice, bob):
    """The personas' passwords hashed with a hasher the server process has (the suite's fast MD5 is this process's
    only), with few iterations."""
    for user in (alice, bob):
        user.password = PBKDF2PasswordHasher().encode(f"{user.username}-password", "oauthtests", iterations=1000)
        user.save(update_fields=["password"])


class MemoryStorage:
    """The SDK's token storage, kept in memory for one conversation."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def _shown(url: str) -> str:
    """A URL with its secrets cut short, for the flow's record."""
    parts = urlsplit(str(url))
    if not parts.query:
        return str(url)
    query = parse_qs(parts.query)
    for key in ("code", "code_challenge", "state", "csrfmiddlewaretoken"):
        if key in query:
            query[key] = [query[key][0][:8] + "…"]
    shown = "&".join(f"{key}={values[0]}" for key, values in query.items())
    return f"{parts.scheme}://{parts.netloc}{parts.path}?{shown}"


@pytest.mark.browser
def test_a_connector_discovers_registers_gets_the_owners_consent_and_searches(web, alice, alice_thread):
    """The SDK's OAuth client from the first 401 to a tools/call, the owner signing in and allowing in chromium."""
    from playwright.async_api import async_playwright

    flow: list[str] = []
    callback = f"http://127.0.0.1:{free_port()}/callback"
    rest = httpx2.post(
        f"{web}/api/v1/search/",
        json={"query": "staging", "channel": alice_thread.channel},
        headers={"Authorization": f"Token {token_of(alice)}"},
    ).json()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    async def log_request(request: httpx2.Request) -> None:
        flow.append(f"connector → {request.method} {_shown(request.url)}")

    async def log_response(response: httpx2.Response) -> None:
        keys = ("www-authenticate", "location", "content-type")
        headers = "; ".join(f"{key}: {response.headers[key]}" for key in keys if key in response.headers)
        await response.aread()
        body = response.text[:400].replace("\n", " ")
        flow.append(f"           ← {response.status_code} {headers}\n             {body}")

    async def main():
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = await (await browser.new_context(viewport=VIEWPORT)).new_page()
            page.set_default_timeout(15_000)
            page.on("response", lambda r: flow.append(f"browser   ← {r.status} {r.request.method} {_shown(r.url)}"))
            # Nothing listens at the callback: the browser's request to it is answered here, as a client's would be.
            await page.route(f"{callback}**", lambda route: route.fulfill(status=200, body="connected"))

            async def redirect_handler(url: str) -> None:
                flow.append(f"connector: open the browser at {_shown(url)}")
                await page.goto(url)
                await page.fill("input[name=username]", "alice")
                await page.fill("input[name=password]", "alice-password")
                await page.click("button[type=submit]")
                await page.wait_for_selector("text=Connect threadmem test connector?")
                await page.screenshot(path=str(ARTIFACTS / "consent.png"), full_page=True)
                await page.click("button[name=allow]")
                await page.wait_for_url(f"{callback}**")

            async def callback_handler() -> AuthorizationCodeResult:
                params = {key: values[0] for key, values in parse_qs(urlsplit(page.url).query).items()}
                return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

            from mcp.client.auth import OAuthClientProvider

            provider = OAuthClientProvider(
                server_url=f"{web}/mcp/",
                client_metadata=OAuthClientMetadata(
                    client_name="threadmem test connector",
                    redirect_uris=[callback],
                    grant_types=["authorization_code", "refresh_token"],
                    response_types=["code"],
                    token_endpoint_auth_method="none",
                ),
                storage=(storage := MemoryStorage()),
                redirect_handler=redirect_handler,
                callback_handler=callback_handler,
            )
            hooks = {"request": [log_request], "response": [log_response]}
            try:
                async with (
                    httpx2.AsyncClient(auth=provider, event_hooks=hooks, timeout=60) as http,
                    Client(streamable_http_client(f"{web}/mcp/", http_client=http)) as client,
                ):
                    result = await client.call_tool(
                        "search_memory", {"query": "staging", "channel": alice_thread.channel}
                    )
                # The owner's page of connectors lists the client.
                await page.goto(f"{web}/console/connectors/")
                await page.wait_for_selector("text=threadmem test connector")
                await page.screenshot(path=str(ARTIFACTS / "connectors.png"), full_page=True)
            finally:
                await browser.close()
            return result, storage

    async def bounded():
        with anyio.fail_after(120):
            return await main()

    result, storage = anyio.run(bounded)
    (ARTIFACTS / "flow.txt").write_text("\n".join(flow) + "\n")
    print("\n".join(flow))

    assert not result.is_error
    assert text_of(result) == rest["text"]
    assert "messageId=" in text_of(result)
    # What the connector saw, step by step.
    record = "\n".join(flow)
    assert f'resource_metadata="{web}/.well-known/oauth-protected-resource/mcp/"' in record
    for step in (
        f"GET {web}/.well-known/oauth-protected-resource/mcp/",
        f"GET {web}/.well-known/oauth-authorization-server",
        f"POST {web}/oauth/register/",
        f"POST {web}/oauth/token/",
    ):
        assert step in record, step
    token = AccessToken.objects.get(application__name="threadmem test connector", user=alice)
    assert token.user == alice
    assert token.resource == [f"{web}/mcp/"]
    assert token.scope == "mcp"
    assert 3500 < (token.expires - timezone.now()).total_seconds() <= 3600
    # Hashed at rest: the row holds no usable token.
    assert storage.tokens.access_token not in (token.token or "")
    # The token acts as alice over MCP, and nowhere else: the REST API takes API tokens only.
    assert list_tools(web, storage.tokens.access_token).status_code == 200
    assert (
        httpx2.get(f"{web}/api/v1/tools/", headers={"Authorization": f"Bearer {storage.tokens.access_token}"})
    ).status_code == 401


def _code(web: str, username: str, client_id: str, redirect_uri: str, challenge: str, **extra: str) -> str:
    authorization = authorize(
        web,
        username,
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "s1",
            "scope": "mcp",
            **extra,
        },
    )
    assert authorization.location.startswith(redirect_uri), authorization.response.text
    assert authorization.params["state"] == "s1"
    return authorization.params["code"]


def _exchange(web: str, client_id: str, redirect_uri: str, code: str, verifier: str, **extra: str) -> httpx2.Response:
    return token_request(
        web,
        grant_type="authorization_code",
        code=code,
        redirect_uri=redirect_uri,
        client_id=client_id,
        code_verifier=verifier,
        **extra,
    )


@pytest.fixture
def connector(web):
    redirect_uri = "https://client.example/callback"
    return register(web, redirect_uri), redirect_uri


def _tokens(web: str, username: str, connector: tuple[str, str]) -> dict:
    client_id, redirect_uri = connector
    verifier, challenge = pkce()
    code = _code(web, username, client_id, redirect_uri, challenge, resource=f"{web}/mcp/")
    response = _exchange(web, client_id, redirect_uri, code, verifier, resource=f"{web}/mcp/")
    assert response.status_code == 200, response.text
    return response.json()


def _refused(response: httpx2.Response, detail: str) -> None:
    assert response.status_code == 401
    assert response.json()["detail"] == detail
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    assert "search_memory" not in response.text


def test_a_wrong_verifier_gets_no_token(web, alice, connector):
    client_id, redirect_uri = connector
    _, challenge = pkce()
    code = _code(web, "alice", client_id, redirect_uri, challenge)
    response = _exchange(web, client_id, redirect_uri, code, pkce()[0])
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"
    assert not AccessToken.objects.filter(user=alice).exists()


def test_a_code_is_good_once(web, alice, connector):
    client_id, redirect_uri = connector
    verifier, challenge = pkce()
    code = _code(web, "alice", client_id, redirect_uri, challenge)
    first = _exchange(web, client_id, redirect_uri, code, verifier)
    assert first.status_code == 200
    # A token asked without a resource is bound to the MCP endpoint all the same.
    assert first.json()["scope"] == "mcp"
    assert AccessToken.objects.get(user=alice).resource == [f"{web}/mcp/"]
    assert list_tools(web, first.json()["access_token"]).status_code == 200
    again = _exchange(web, client_id, redirect_uri, code, verifier)
    assert again.status_code == 400
    assert again.json()["error"] == "invalid_grant"
    # The code leaked: what its first use issued is revoked (RFC 6749 §4.1.2).
    assert list_tools(web, first.json()["access_token"]).status_code == 401
    assert not AccessToken.objects.filter(user=alice).exists()


def test_pkce_is_required_and_plain_is_refused(web, alice, connector):
    client_id, redirect_uri = connector
    base = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "state": "s1"}
    missing = authorize(web, "alice", base)
    assert missing.params["error"] == "invalid_request"
    plain = authorize(web, "alice", {**base, "code_challenge": "x" * 43, "code_challenge_method": "plain"})
    assert plain.params["error"] == "invalid_request"
    assert "S256" in plain.params["error_description"]
    assert plain.params["state"] == "s1"


def test_a_denied_request_sends_the_client_access_denied_and_no_code(web, alice, connector):
    client_id, redirect_uri = connector
    _, challenge = pkce()
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "state": "s1"}
    denied = authorize(
        web, "alice", {**query, "code_challenge": challenge, "code_challenge_method": "S256"}, allow=False
    )
    assert denied.params == {"error": "access_denied", "state": "s1"}


def test_a_token_for_another_resource_is_neither_issued_nor_accepted(web, alice, connector, proxied_web):
    client_id, redirect_uri = connector
    _, challenge = pkce()
    elsewhere = authorize(
        web,
        "alice",
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": "https://elsewhere.example/mcp/",
        },
    )
    assert elsewhere.params["error"] == "invalid_target"
    # A token this server issued for its MCP endpoint at one URL is refused at another (the same database served
    # as PUBLIC_URL): its resource is not that endpoint.
    tokens = _tokens(web, "alice", connector)
    assert list_tools(web, tokens["access_token"]).status_code == 200
    _refused(
        list_tools(proxied_web, tokens["access_token"]),
        f"the access token was not issued for this resource ({PUBLIC_URL}/mcp/)",
    )


def test_an_expired_token_is_refused_and_the_refresh_token_gets_a_new_one_once(web, alice, connector):
    tokens = _tokens(web, "alice", connector)
    assert tokens["expires_in"] == 3600
    AccessToken.objects.filter(user=alice).update(expires=timezone.now() - timedelta(seconds=1))
    _refused(list_tools(web, tokens["access_token"]), "the access token has expired: refresh it or authorize again")
    client_id, _ = connector
    refreshed = token_request(
        web, grant_type="refresh_token", refresh_token=tokens["refresh_token"], client_id=client_id
    )
    assert refreshed.status_code == 200, refreshed.text
    assert list_tools(web, refreshed.json()["access_token"]).status_code == 200
    assert AccessToken.objects.get(user=alice).resource == [f"{web}/mcp/"]
    replayed = token_request(
        web, grant_type="refresh_token", refresh_token=tokens["refresh_token"], client_id=client_id
    )
    assert replayed.status_code == 400
    assert replayed.json()["error"] == "invalid_grant"


def test_a_revoked_token_is_refused(web, alice, connector):
    tokens = _tokens(web, "alice", connector)
    client_id, _ = connector
    revoked = httpx2.post(f"{web}/oauth/revoke/", data={"token": tokens["access_token"], "client_id": client_id})
    assert revoked.status_code == 200
    response = list_tools(web, tokens["access_token"])
    assert response.status_code == 401
    assert response.json()["detail"] == "Invalid token."


def test_the_owner_revokes_a_connector_in_the_console(web, alice, connector):
    tokens = _tokens(web, "alice", connector)
    with httpx2.Client(base_url=web, follow_redirects=False) as browser:
        page = browser.get("/console/connectors/")
        assert page.status_code == 302
        login_url = page.headers["location"]
        fields = hidden_fields(browser.get(login_url).text)
        assert (
            browser.post(login_url, data={**fields, "username": "alice", "password": "alice-password"}).status_code
            == 302
        )
        listing = browser.get("/console/connectors/")
        assert listing.status_code == 200
        assert "Test connector" in listing.text
        application = Application.objects.get(client_id=connector[0])
        form = hidden_fields(listing.text)
        revoke = browser.post(f"/console/connectors/{application.id}/revoke/", data=form)
        assert revoke.status_code == 302
        assert "No client holds a token of yours" in browser.get("/console/connectors/").text
        # alice is not staff: the rest of the console stays closed to her.
        assert browser.get("/console/").status_code == 403
    assert list_tools(web, tokens["access_token"]).status_code == 401
    refreshed = token_request(
        web, grant_type="refresh_token", refresh_token=tokens["refresh_token"], client_id=connector[0]
    )
    assert refreshed.status_code == 400


def test_a_redirect_uri_not_registered_gets_an_error_page_and_no_redirect(web, alice, connector):
    client_id, _ = connector
    _, challenge = pkce()
    authorization = authorize(
        web,
        "alice",
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": "https://attacker.example/callback",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        },
    )
    assert authorization.response.status_code == 400
    assert not authorization.location
    assert "Mismatching redirect URI" in authorization.response.text or "redirect" in authorization.response.text
    assert not AccessToken.objects.filter(user__isnull=False).exists()


def test_bobs_token_reaches_what_bobs_api_token_reaches_never_alices_thread(web, alice, alice_thread, bob, connector):
    append(make_thread(bob, "bob-1"), {"role": "user", "content": "bob deploys staging too"})
    tokens = _tokens(web, "bob", connector)
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {tokens['access_token']}"}
    api_headers = {**MCP_HEADERS, "Authorization": f"Bearer {Token.objects.get_or_create(user=bob)[0].key}"}
    alice_message = Message.objects.filter(thread=alice_thread).first().id

    def call(headers: dict, name: str, arguments: dict) -> dict:
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        response = httpx2.post(f"{web}/mcp/", json=body, headers=headers)
        assert response.status_code == 200
        return response.json()["result"]

    for name, arguments in (
        ("search_memory", {"query": SECRET, "channel": alice_thread.channel}),
        ("search_memory", {"query": SECRET}),
        ("search_memory", {"query": "staging"}),
        ("message_context_read", {"messageId": alice_message}),
    ):
        over_oauth = call(headers, name, arguments)
        assert over_oauth == call(api_headers, name, arguments)
        # The query is echoed back; alice's message never is.
        assert f"the key {SECRET}" not in str(over_oauth)
    scoped = call(headers, "search_memory", {"query": SECRET, "channel": alice_thread.channel})
    missing = call(headers, "search_memory", {"query": SECRET, "channel": "no-such-channel"})
    assert scoped["isError"] and missing["isError"]
    assert scoped["content"][0]["text"] == missing["content"][0]["text"].replace(
        "no-such-channel", alice_thread.channel
    )


def test_unauthenticated_mcp_points_at_the_metadata_which_names_this_server(web):
    for path in ("/mcp/", "/mcp"):
        response = httpx2.post(f"{web}{path}", json=LIST_TOOLS, headers=MCP_HEADERS)
        assert response.status_code == 401
        metadata_url = f"{web}/.well-known/oauth-protected-resource{path}"
        assert response.headers["www-authenticate"] == f'Bearer realm="threadmem", resource_metadata="{metadata_url}"'
        metadata = httpx2.get(metadata_url).json()
        assert metadata["resource"] == f"{web}{path}"
        assert metadata["authorization_servers"] == [web]
    root = httpx2.get(f"{web}/.well-known/oauth-protected-resource").json()
    assert root["resource"] == f"{web}/mcp/"
    assert httpx2.get(f"{web}/.well-known/oauth-protected-resource/api/v1/").status_code == 404
    server = httpx2.get(f"{web}/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == web
    assert server["authorization_endpoint"] == f"{web}/oauth/authorize/"
    assert server["token_endpoint"] == f"{web}/oauth/token/"
    assert server["registration_endpoint"] == f"{web}/oauth/register/"
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["response_types_supported"] == ["code"]
    assert server["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert "none" in server["token_endpoint_auth_methods_supported"]


def test_registration_takes_https_or_loopback_redirect_uris_only(web):
    def attempt(**metadata) -> httpx2.Response:
        return httpx2.post(f"{web}/oauth/register/", json={"token_endpoint_auth_method": "none", **metadata})

    for uri in ("http://client.example/cb", "ftp://client.example/cb", "https://client.example/cb#frag", "callback"):
        refused = attempt(redirect_uris=[uri])
        assert refused.status_code == 400
        assert refused.json()["error"] == "invalid_redirect_uri", uri
    assert attempt(redirect_uris=["https://c.example/cb"], grant_types=["client_credentials"]).json()["error"] == (
        "invalid_client_metadata"
    )
    assert attempt(redirect_uris="https://c.example/cb").json()["error"] == "invalid_client_metadata"
    for uri in (
        "https://claude.ai/api/mcp/auth_callback",
        "http://127.0.0.1:33418/callback",
        "http://localhost:6274/cb",
    ):
        registered = attempt(redirect_uris=[uri], client_name="ok")
        assert registered.status_code == 201, registered.text
        assert registered.json()["token_endpoint_auth_method"] == "none"
        assert Application.objects.get(client_id=registered.json()["client_id"]).client_type == "public"


def test_behind_a_proxy_the_urls_come_from_the_public_url_and_registration_can_be_off(proxied_web):
    response = httpx2.post(f"{proxied_web}/mcp/", json=LIST_TOOLS, headers=MCP_HEADERS)
    assert (
        f'resource_metadata="{PUBLIC_URL}/.well-known/oauth-protected-resource/mcp/"'
        in (response.headers["www-authenticate"])
    )
    metadata = httpx2.get(f"{proxied_web}/.well-known/oauth-protected-resource/mcp/").json()
    assert metadata["resource"] == f"{PUBLIC_URL}/mcp/"
    assert metadata["authorization_servers"] == [PUBLIC_URL]
    server = httpx2.get(f"{proxied_web}/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == PUBLIC_URL
    assert server["authorization_endpoint"] == f"{PUBLIC_URL}/oauth/authorize/"
    assert "registration_endpoint" not in server
    off = httpx2.post(f"{proxied_web}/oauth/register/", json={"redirect_uris": ["https://c.example/cb"]})
    assert off.status_code == 404
    assert "THREADMEM_OAUTH_REGISTRATION=false" in off.json()["error_description"]
