"""An authorization code exchanged twice: refused, and what its first exchange issued is revoked (RFC 6749
§4.1.2), through the real authorization, token and revocation endpoints."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.test import Client
from oauth2_provider.models import AccessToken, RefreshToken

from oauth.tokens import access_token_user
from tests.support.oauth import hidden_fields, pkce

pytestmark = pytest.mark.django_db

REDIRECT_URI = "https://client.example/callback"
RESOURCE = "http://testserver/mcp/"


@pytest.fixture
def client_id(client: Client) -> str:
    metadata = {"client_name": "Connector", "redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"}
    response = client.post("/oauth/register/", json.dumps(metadata), content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["client_id"]


def authorization_query(client_id: str, challenge: str) -> dict[str, str]:
    return {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "s1",
        "scope": "mcp",
    }


def code_for(owner, client_id: str, challenge: str) -> str:
    """The owner signs in and allows the client on the consent page: the code the redirect carries."""
    browser = Client()
    browser.force_login(owner)
    query = authorization_query(client_id, challenge)
    url = f"/oauth/authorize/?{urlencode(query)}"
    consent = browser.get(url)
    assert consent.status_code == 200, consent.content
    allowed = browser.post(url, {**hidden_fields(consent.content.decode()), "allow": "Authorize"})
    assert allowed.status_code == 302 and allowed["Location"].startswith(REDIRECT_URI), allowed
    return parse_qs(urlsplit(allowed["Location"]).query)["code"][0]


def exchange(client_id: str, code: str, verifier: str):
    return Client().post(
        "/oauth/token/",
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "client_id": client_id,
            "code_verifier": verifier,
        },
    )


def refresh(client_id: str, refresh_token: str):
    return Client().post(
        "/oauth/token/", {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id}
    )


def test_a_reused_code_is_refused_and_revokes_every_token_its_first_use_issued(owner, client_id):
    verifier, challenge = pkce()
    code = code_for(owner, client_id, challenge)
    first = exchange(client_id, code, verifier)
    assert first.status_code == 200, first.content
    tokens = first.json()
    assert access_token_user(tokens["access_token"], resource=RESOURCE) == owner
    # The client refreshes once: the refreshed pair is the same issue's, revoked with it.
    refreshed = refresh(client_id, tokens["refresh_token"])
    assert refreshed.status_code == 200, refreshed.content
    assert access_token_user(refreshed.json()["access_token"], resource=RESOURCE) == owner

    again = exchange(client_id, code, verifier)
    assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")
    assert access_token_user(refreshed.json()["access_token"], resource=RESOURCE) is None
    assert access_token_user(tokens["access_token"], resource=RESOURCE) is None
    assert refresh(client_id, refreshed.json()["refresh_token"]).json()["error"] == "invalid_grant"
    assert not AccessToken.objects.filter(user=owner).exists()
    assert not RefreshToken.objects.filter(user=owner, revoked__isnull=True).exists()


def test_a_reused_code_leaves_the_owners_other_authorizations_alone(owner, client_id):
    verifier, challenge = pkce()
    kept_code = code_for(owner, client_id, challenge)
    kept = exchange(client_id, kept_code, verifier).json()
    reused = code_for(owner, client_id, challenge)
    assert exchange(client_id, reused, verifier).status_code == 200
    assert exchange(client_id, reused, verifier).status_code == 400
    assert access_token_user(kept["access_token"], resource=RESOURCE) == owner
    assert refresh(client_id, kept["refresh_token"]).status_code == 200


@pytest.mark.parametrize("field", ["code", "client_id", "redirect_uri", "code_verifier", "grant_type"])
@pytest.mark.parametrize("text", ["\x00", "a\x00b"], ids=repr)
def test_a_nul_in_any_token_request_field_answers_4xx_never_500(owner, client_id, field, text):
    verifier, challenge = pkce()
    code = code_for(owner, client_id, challenge)
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT_URI,
        "client_id": client_id,
        "code_verifier": verifier,
    }
    response = Client().post("/oauth/token/", {**data, field: text})
    assert 400 <= response.status_code < 500, response.content
    assert not AccessToken.objects.filter(user=owner).exists()


def test_a_nul_in_a_basic_authorization_client_id_answers_401(owner, client_id):
    import base64

    credentials = base64.b64encode(b"client\x00id:secret").decode()
    response = Client().post(
        "/oauth/token/",
        {"grant_type": "authorization_code", "code": "x", "redirect_uri": REDIRECT_URI},
        HTTP_AUTHORIZATION=f"Basic {credentials}",
    )
    assert 400 <= response.status_code < 500, response.content


@pytest.mark.parametrize("field", ["client_id", "redirect_uri", "state", "code_challenge", "scope", "resource"])
def test_a_nul_in_an_authorization_request_answers_400_never_500(owner, client_id, field):
    browser = Client()
    browser.force_login(owner)
    query = {**authorization_query(client_id, pkce()[1]), field: "a\x00b"}
    response = browser.get(f"/oauth/authorize/?{urlencode(query)}")
    assert response.status_code == 400, response.content


@pytest.mark.parametrize("field", ["token", "token_type_hint", "client_id"])
def test_a_nul_in_a_revocation_answers_400_never_500(client_id, field):
    data = {"token": "t", "client_id": client_id, field: "\x00"}
    assert Client().post("/oauth/revoke/", data).status_code == 400
