"""Isolation toggles: admins only, confirmed first, always through the audited services."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.support.factories import append
from threadmem.models import IsolationEvent, Message, Thread


@pytest.fixture
def message(thread):
    return append(thread, {"role": "user", "content": "an api key: sk-123"})[0]


def thread_toggle(thread) -> str:
    return reverse("console:thread-isolation", args=[thread.id])


def message_toggle(message) -> str:
    return reverse("console:message-isolation", args=[message.id])


def test_operators_see_no_isolation_control(operator_console, thread, message):
    thread_page = operator_console.get(reverse("console:thread", args=[thread.id])).content.decode()
    message_page = operator_console.get(reverse("console:message", args=[message.id])).content.decode()

    assert thread_toggle(thread) not in thread_page
    assert "Isolate thread" not in thread_page
    assert message_toggle(message) not in message_page
    assert "Isolate message" not in message_page


def test_admins_see_the_isolation_controls(admin_console, thread, message):
    thread_page = admin_console.get(reverse("console:thread", args=[thread.id])).content.decode()
    message_page = admin_console.get(reverse("console:message", args=[message.id])).content.decode()

    assert f'action="{thread_toggle(thread)}"' in thread_page
    assert f'action="{message_toggle(message)}"' in message_page


@pytest.mark.parametrize("persona", ["operator_console", "owner_console"])
def test_non_admins_get_403_on_the_toggle(request, persona, thread, message):
    client = request.getfixturevalue(persona)
    for target in (thread_toggle(thread), message_toggle(message)):
        response = client.post(target, {"isolated": "true", "confirm": "on"})
        assert response.status_code == 403, target
    assert IsolationEvent.objects.count() == 0
    assert Thread.objects.get(pk=thread.pk).isolated is False
    assert Message.objects.get(pk=message.pk).isolated is False


def test_it_asks_for_confirmation_before_isolating_a_thread(admin_console, thread):
    response = admin_console.post(thread_toggle(thread), {"isolated": "true"})

    assert response.status_code == 200
    body = response.content.decode()
    assert f"Isolate thread {thread.channel}?" in body
    assert 'name="confirm" value="on"' in body
    assert Thread.objects.get(pk=thread.pk).isolated is False
    assert IsolationEvent.objects.count() == 0


def test_admins_isolate_and_release_a_thread_with_an_audit_trail(admin_console, admin, thread):
    response = admin_console.post(thread_toggle(thread), {"isolated": "true", "confirm": "on"})

    assert response.status_code == 302
    assert Thread.objects.get(pk=thread.pk).isolated is True
    event = IsolationEvent.objects.get()
    assert (event.actor, event.thread_id, event.message_id, event.isolated, event.surface) == (
        admin,
        thread.id,
        None,
        True,
        "console",
    )
    page = admin_console.get(response["Location"]).content.decode()
    assert "isolated." in page  # the flash message
    assert "Release thread…" in page
    assert "<strong>admin</strong>" in page[page.index('<ol class="trail">') :]

    admin_console.post(thread_toggle(thread), {"isolated": "false", "confirm": "on"})
    assert Thread.objects.get(pk=thread.pk).isolated is False
    assert list(IsolationEvent.objects.order_by("id").values_list("isolated", flat=True)) == [True, False]


def test_admins_isolate_a_message_with_an_audit_trail(admin_console, admin, message):
    confirm = admin_console.post(message_toggle(message), {"isolated": "true"})
    assert f"Isolate message #{message.id}?" in confirm.content.decode()
    assert Message.objects.get(pk=message.pk).isolated is False

    response = admin_console.post(message_toggle(message), {"isolated": "true", "confirm": "on"})

    assert response.status_code == 302
    assert Message.objects.get(pk=message.pk).isolated is True
    event = IsolationEvent.objects.get()
    assert (event.actor, event.message_id, event.isolated, event.surface) == (admin, message.id, True, "console")
    page = admin_console.get(response["Location"]).content.decode()
    assert "flag-isolated" in page
    thread_page = admin_console.get(reverse("console:thread", args=[message.thread_id])).content.decode()
    assert f"message #{message.id}</a>" in thread_page[thread_page.index('<ol class="trail">') :]


def test_it_rejects_a_malformed_toggle(admin_console, thread):
    response = admin_console.post(thread_toggle(thread), {"isolated": "maybe", "confirm": "on"})
    assert response.status_code == 400
    assert IsolationEvent.objects.count() == 0


def test_it_answers_404_for_toggles_of_missing_objects(admin_console):
    assert admin_console.post("/console/threads/999999/isolation/", {"isolated": "true"}).status_code == 404
    assert admin_console.post("/console/messages/999999/isolation/", {"isolated": "true"}).status_code == 404


def test_the_toggle_does_not_answer_get(admin_console, thread):
    assert admin_console.get(thread_toggle(thread)).status_code == 405
