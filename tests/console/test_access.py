"""Who may open the console: staff only; anonymous to the login page, other users 403."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.support.factories import append


@pytest.fixture
def pages(thread):
    message = append(thread, {"role": "user", "content": "hello"})[0]
    return [
        reverse("console:threads"),
        reverse("console:thread", args=[thread.id]),
        reverse("console:thread-compactions", args=[thread.id]),
        reverse("console:thread-by-channel", args=[thread.channel]),
        reverse("console:message", args=[message.id]),
        reverse("console:message-raw", args=[message.id]),
        reverse("console:message-model-read", args=[message.id]),
        reverse("console:search") + "?q=hello",
        reverse("console:tool-calls"),
    ]


def test_it_sends_anonymous_visitors_to_the_login_page(client, pages):
    for url in pages:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/console/login/?next="), url


def test_it_refuses_signed_in_users_who_are_not_staff(owner_console, pages):
    for url in pages:
        response = owner_console.get(url)
        assert response.status_code == 403, url


def test_it_serves_every_page_to_operators(operator_console, pages):
    for url in pages:
        response = operator_console.get(url, follow=True)
        assert response.status_code == 200, url


def test_it_logs_staff_in_and_out(client, operator):
    response = client.post("/console/login/", {"username": "operator", "password": "operator-password"})
    assert response.status_code == 302
    assert response["Location"] == "/console/"
    assert client.get("/console/").status_code == 200

    response = client.post("/console/logout/")
    assert response.status_code == 302
    assert client.get("/console/").status_code == 302


def test_it_refuses_to_log_in_a_user_who_is_not_staff(client, owner):
    response = client.post("/console/login/", {"username": "owner", "password": "owner-password"})
    assert response.status_code == 200
    assert "for operators" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_it_returns_to_the_page_asked_for_after_login(client, operator, thread):
    url = reverse("console:thread", args=[thread.id])
    response = client.post(
        f"/console/login/?next={url}", {"username": "operator", "password": "operator-password", "next": url}
    )
    assert response["Location"] == url


def test_it_answers_404_for_missing_objects(operator_console, thread):
    for url in [
        reverse("console:thread", args=[999_999]),
        reverse("console:thread-compactions", args=[999_999]),
        reverse("console:thread-by-channel", args=["no-such-channel"]),
        reverse("console:message", args=[999_999]),
        reverse("console:message-raw", args=[999_999]),
        reverse("console:message-model-read", args=[999_999]),
        reverse("console:thread", args=[thread.id]) + "?generation=7",
        reverse("console:thread", args=[thread.id]) + "?generation=x",
        reverse("console:thread", args=[thread.id]) + "?page=9",
        reverse("console:threads") + "?page=50",
    ]:
        response = operator_console.get(url)
        assert response.status_code == 404, url
    assert "Not found" in response.content.decode()


def test_it_redirects_a_channel_address_to_its_thread(operator_console, thread):
    response = operator_console.get(reverse("console:thread-by-channel", args=[thread.channel]))
    assert response.status_code == 302
    assert response["Location"] == reverse("console:thread", args=[thread.id])


def test_it_protects_console_forms_with_csrf(admin, thread):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(admin)
    response = client.post(reverse("console:thread-isolation", args=[thread.id]), {"isolated": "true", "confirm": "on"})
    assert response.status_code == 403
    thread.refresh_from_db()
    assert thread.isolated is False


def test_it_answers_unknown_console_addresses_with_a_plain_404(operator_console):
    response = operator_console.get("/console/no-such-page/")
    assert response.status_code == 404
    body = response.content.decode()
    assert "Nothing lives at this address." in body
    assert "Resolver404" not in body
