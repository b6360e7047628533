"""/api/v1/threads/<channel>/: update the title and toggle isolation (the helpers are tests/support/api.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from tests.support.api import SLACK, url
from tests.support.factories import row_counts, token_client
from threadmem.models import IsolationEvent

# --- update ---------------------------------------------------------------------


@pytest.mark.django_db
def test_it_lets_the_owner_and_operators_change_the_title(owner_api, operator_api, thread):
    response = owner_api.patch(url(SLACK), {"title": "renamed"}, format="json")
    assert response.status_code == 200
    assert response.json()["title"] == "renamed"
    assert response.json()["generations"][0]["number"] == 1
    assert operator_api.patch(url(SLACK), {"title": "by staff"}, format="json").status_code == 200
    thread.refresh_from_db()
    assert thread.title == "by staff"


@pytest.mark.django_db
def test_it_answers_404_to_another_owners_title_change(other_api, thread):
    response = other_api.patch(url(SLACK), {"title": "mine now"}, format="json")
    assert response.status_code == 404
    thread.refresh_from_db()
    assert thread.title == "deploy the staging box"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({}, "nothing to change"),
        ({"channel": "new"}, "unknown fields: channel"),
        ({"title": 5}, "title must be a string"),
        ({"title": "a\u0000"}, "NUL"),
        ([{"title": "x"}], "must be a JSON object"),
    ],
)
def test_it_refuses_a_bad_update_naming_the_problem(owner_api, thread, body, words):
    response = owner_api.patch(url(SLACK), body, format="json")
    assert response.status_code == 400
    assert words in response.json()["detail"]
    thread.refresh_from_db()
    assert (thread.channel, thread.title) == (SLACK, "deploy the staging box")


# --- isolation --------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("persona", ["owner", "operator"])
def test_it_refuses_isolation_to_non_admins_with_403_and_changes_nothing(request, thread, persona):
    client = request.getfixturevalue(f"{persona}_api")
    before = row_counts()
    response = client.patch(url(SLACK), {"isolated": True, "title": "sneaky"}, format="json")
    assert response.status_code == 403
    assert "only admins" in response.json()["detail"]
    assert response.json()["field"] == "isolated"
    thread.refresh_from_db()
    assert (thread.isolated, thread.title) == (False, "deploy the staging box")
    assert row_counts() == before


@pytest.mark.django_db
def test_it_answers_404_not_403_to_another_owner_asking_for_isolation(other_api, thread):
    response = other_api.patch(url(SLACK), {"isolated": True}, format="json")
    assert response.status_code == 404
    assert not IsolationEvent.objects.exists()


@pytest.mark.django_db
def test_it_lets_an_admin_toggle_isolation_and_records_each_toggle(admin_api, admin, thread):
    on = admin_api.patch(url(SLACK), {"isolated": True}, format="json")
    assert on.status_code == 200
    assert on.json()["isolated"] is True
    thread.refresh_from_db()
    assert thread.isolated is True
    off = admin_api.patch(url(SLACK), {"isolated": False, "title": "cleared"}, format="json")
    assert off.json()["isolated"] is False
    assert off.json()["title"] == "cleared"
    events = list(
        IsolationEvent.objects.order_by("id").values_list("actor", "thread", "message", "isolated", "surface")
    )
    assert events == [(admin.id, thread.id, None, True, "api"), (admin.id, thread.id, None, False, "api")]


@pytest.mark.django_db
def test_it_lets_a_holder_of_the_isolate_permission_toggle_isolation(owner, thread):
    owner.user_permissions.add(Permission.objects.get(codename="isolate", content_type__app_label="threadmem"))
    response = token_client(owner).patch(url(SLACK), {"isolated": True}, format="json")
    assert response.status_code == 200
    assert IsolationEvent.objects.get().actor == owner


@pytest.mark.django_db
def test_it_refuses_a_non_boolean_isolation_value(admin_api, thread):
    before = row_counts()
    response = admin_api.patch(url(SLACK), {"isolated": "yes"}, format="json")
    assert response.status_code == 400
    assert response.json()["detail"] == "isolated must be true or false"
    assert row_counts() == before


def test_it_reserves_every_thread_route_suffix_as_a_channel_ending():
    """A channel "a/<suffix>" would be routed as thread "a"'s <suffix> route."""
    from api.urls import urlpatterns
    from threadmem.domain.services import CHANNEL_RESERVED_LAST_SEGMENTS

    prefix = "threads/<path:channel>/"
    suffixes = {str(p.pattern)[len(prefix) :].strip("/") for p in urlpatterns if str(p.pattern).startswith(prefix)}
    suffixes.discard("")
    assert "messages" in suffixes
    assert suffixes <= CHANNEL_RESERVED_LAST_SEGMENTS
