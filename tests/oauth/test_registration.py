"""Open client registration (RFC 7591) through the real endpoints: counted per client address, unused clients
bounded and expired, and text no database holds (or that only misleads on the consent page) refused with a 400."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import Application

pytestmark = pytest.mark.django_db

METADATA = {
    "client_name": "Test connector",
    "redirect_uris": ["https://client.example/callback"],
    "grant_types": ["authorization_code", "refresh_token"],
    "response_types": ["code"],
    "token_endpoint_auth_method": "none",
}


def register(client: Client, address: str = "203.0.113.5", body: bytes | None = None, **metadata):
    body = body if body is not None else json.dumps({**METADATA, **metadata}).encode()
    return client.post("/oauth/register/", body, content_type="application/json", REMOTE_ADDR=address)


# --- the rate per client address ---------------------------------------------------------------------------


def test_registrations_past_the_rate_answer_429_with_retry_after_per_address(client, settings):
    settings.THREADMEM_OAUTH_REGISTRATION_RATE = "3/hour"
    for _ in range(3):
        assert register(client).status_code == 201
    refused = register(client)
    assert refused.status_code == 429, refused.content
    assert refused.json()["error"] == "too_many_requests"
    assert "THREADMEM_OAUTH_REGISTRATION" in refused.json()["error_description"]
    assert 1 <= int(refused["Retry-After"]) <= 3600
    assert Application.objects.count() == 3
    # A refused attempt counts too, and a forwarded-for header (the client's to write) changes nothing.
    assert register(client, body=b"{", HTTP_X_FORWARDED_FOR="198.51.100.9").status_code == 429
    # Another address has its own count.
    assert register(client, address="198.51.100.7").status_code == 201


def test_an_ipv6_host_counts_as_its_64(client, settings):
    settings.THREADMEM_OAUTH_REGISTRATION_RATE = "2/hour"
    assert register(client, address="2001:db8:1:2::1").status_code == 201
    assert register(client, address="2001:db8:1:2:ffff::9").status_code == 201
    assert register(client, address="2001:db8:1:2::abcd").status_code == 429
    assert register(client, address="2001:db8:1:3::1").status_code == 201


def test_the_default_rate_holds_a_burst(client):
    """The probe's burst (200 registrations in 51 s from one address) stops at the default, 30 an hour."""
    answers = [register(client).status_code for _ in range(40)]
    assert answers == [201] * 30 + [429] * 10


# --- unused clients: expiry and cap ------------------------------------------------------------------------


def test_clients_unused_for_a_day_are_removed_at_the_next_registration(client, owner):
    old, used = (register(client, address=f"192.0.2.{n}").json()["client_id"] for n in (1, 2))
    Application.objects.filter(client_id__in=[old, used]).update(created=timezone.now() - timedelta(hours=25))
    from oauth2_provider.models import AccessToken

    AccessToken.objects.create(
        user=owner,
        application=Application.objects.get(client_id=used),
        token="t",
        scope="mcp",
        expires=timezone.now() + timedelta(hours=1),
    )
    fresh = register(client, address="192.0.2.3").json()["client_id"]
    assert set(Application.objects.values_list("client_id", flat=True)) == {used, fresh}


def test_past_the_cap_of_unused_clients_registration_waits_for_the_oldest_to_expire(client, monkeypatch):
    from oauth import registration

    monkeypatch.setattr(registration, "UNUSED_CLIENTS_MAX", 2)
    for n in range(2):
        assert register(client, address=f"192.0.2.{n}").status_code == 201
    Application.objects.update(created=timezone.now() - timedelta(hours=23))
    refused = register(client, address="192.0.2.9")
    assert refused.status_code == 429
    assert "never been used" in refused.json()["error_description"]
    assert 3000 <= int(refused["Retry-After"]) <= 3600  # the oldest expires in an hour
    assert Application.objects.count() == 2


# --- text ------------------------------------------------------------------------------------------------------

HOSTILE_TEXT = ["\x00", "\ud800", "\udfff", "\x1b[2J", "\n", "\x7f", "\x85"]


@pytest.mark.parametrize("text", HOSTILE_TEXT, ids=[repr(t) for t in HOSTILE_TEXT])
@pytest.mark.parametrize(
    "field",
    ["client_name", "redirect_uri", "client_uri", "logo_uri", "scope", "contacts", "software_id", "key"],
)
def test_nul_surrogates_and_control_characters_in_any_field_answer_400_and_register_nothing(client, field, text):
    if field == "redirect_uri":
        metadata = {"redirect_uris": [f"https://client.example/cb{text}"]}
    elif field == "contacts":
        metadata = {"contacts": [f"ops{text}@client.example"]}
    elif field == "key":
        metadata = {f"x{text}": "value"}
    else:
        metadata = {field: f"a{text}b"}
    response = register(client, **metadata)
    assert response.status_code == 400, response.content
    expected = "invalid_redirect_uri" if field == "redirect_uri" else "invalid_client_metadata"
    assert response.json()["error"] == expected
    assert not Application.objects.exists()


@pytest.mark.parametrize("text", ["\x00", "\ud800", "\x1b"], ids=repr)
def test_an_update_with_hostile_text_answers_400_and_changes_nothing(client, text):
    registered = register(client).json()
    path = f"/oauth/register/{registered['client_id']}/"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {registered['registration_access_token']}"}
    for change in ({"client_name": f"x{text}"}, {"redirect_uris": [f"https://client.example/{text}"]}):
        body = json.dumps({**METADATA, **change})
        response = client.put(path, body, content_type="application/json", **auth)
        assert response.status_code == 400, response.content
    assert Application.objects.get().name == "Test connector"
    ok = client.put(path, json.dumps({**METADATA, "client_name": "Renamed"}), content_type="application/json", **auth)
    assert ok.status_code == 200 and Application.objects.get().name == "Renamed"


@pytest.mark.parametrize("client_id", ["%00", "a%00b", "%1b", "%ED%A0%80", "x" * 300])
@pytest.mark.parametrize("method", ["get", "put", "delete"])
def test_a_hostile_client_id_in_the_path_answers_401_never_500(client, client_id, method):
    response = client.generic(
        method.upper(),
        f"/oauth/register/{client_id}/",
        json.dumps(METADATA) if method == "put" else "",
        content_type="application/json",
        HTTP_AUTHORIZATION="Bearer nothing",
    )
    assert response.status_code == 401, response.content


def test_a_body_that_is_not_utf8_answers_400(client):
    response = register(client, body=b'{"client_name": "\xff\xfe", "redirect_uris": ["https://c.example/cb"]}')
    assert response.status_code == 400, response.content
    assert not Application.objects.exists()


@pytest.mark.parametrize(
    ("raw", "rate"), [("", "30/hour"), ("true", "30/hour"), ("false", None), ("off", None), ("5/min", "5/min")]
)
def test_the_setting_is_a_rate_or_off(monkeypatch, raw, rate):
    from config.env import env_rate_or_off

    monkeypatch.setenv("THREADMEM_OAUTH_REGISTRATION", raw)
    assert env_rate_or_off("THREADMEM_OAUTH_REGISTRATION", "30/hour") == rate


@pytest.mark.parametrize("raw", ["30", "30/fortnight", "0/hour", "many/hour"])
def test_a_setting_that_is_no_rate_stops_the_process_naming_it(monkeypatch, raw):
    from django.core.exceptions import ImproperlyConfigured

    from config.env import env_rate_or_off

    monkeypatch.setenv("THREADMEM_OAUTH_REGISTRATION", raw)
    with pytest.raises(ImproperlyConfigured, match="THREADMEM_OAUTH_REGISTRATION must be false, true or a rate"):
        env_rate_or_off("THREADMEM_OAUTH_REGISTRATION", "30/hour")
