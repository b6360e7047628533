"""/api/v1/threads/: create, fork, list, read, update, isolate; auth and the 404 ownership rule."""

from __future__ import annotations

import datetime as dt
from urllib.parse import quote

import pytest
from rest_framework.test import APIClient

from tests.support.api import SLACK, url
from tests.support.factories import append, make_summary, make_thread, row_counts
from threadmem.models import Generation, Message, Thread

# contract §6's thread, pinned here, not read from the serializer (a test of the serializer by itself could not fail).
THREAD_FIELDS = {
    *("channel", "title", "project", "isolated", "current_generation"),  # what it is
    *("owner", "parent", "fork_message_id"),  # whose, forked from where
    *("created_at", "last_activity_at"),  # its times
}


# --- auth -----------------------------------------------------------------------


@pytest.mark.django_db
def test_it_answers_401_with_a_token_challenge_without_credentials(thread):
    response = APIClient().get(url(SLACK))
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.django_db
def test_it_answers_401_to_a_wrong_token(thread):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token 0000000000000000000000000000000000000000")
    response = client.post(url(), {"channel": "x"}, format="json")
    assert response.status_code == 401
    assert response.json()["detail"] == "Invalid token."
    assert not Thread.objects.filter(channel="x").exists()


@pytest.mark.django_db
def test_it_accepts_a_console_session(owner, thread):
    client = APIClient()
    assert client.login(username="owner", password="owner-password")
    response = client.get(url(SLACK))
    assert response.status_code == 200
    assert response.json()["channel"] == SLACK


# --- create -----------------------------------------------------------------------


@pytest.mark.django_db
def test_it_creates_a_thread_with_a_channel_that_has_slashes_and_colons(owner_api, owner):
    response = owner_api.post(url(), {"channel": SLACK, "title": "deploy"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert set(body) == THREAD_FIELDS
    assert body["channel"] == SLACK
    assert body["title"] == "deploy"
    assert body["isolated"] is False
    assert body["current_generation"] == 1
    assert body["owner"] == "owner"
    assert body["parent"] is None
    assert body["fork_message_id"] is None
    thread = Thread.objects.get(channel=SLACK)
    assert thread.owner == owner
    assert list(thread.generations.values_list("number", "state")) == [(1, "open")]
    # ...and it is reachable under that channel, slashes as is or encoded.
    assert owner_api.get(url(SLACK)).json()["channel"] == SLACK
    assert owner_api.get(url(quote(SLACK, safe=""))).json()["channel"] == SLACK


@pytest.mark.django_db
def test_it_generates_a_channel_when_none_is_given(owner_api):
    first = owner_api.post(url(), {}, format="json")
    second = owner_api.post(url(), {"title": "no channel"}, format="json")
    assert first.status_code == second.status_code == 201
    assert first.json()["channel"].startswith("thread-")
    assert first.json()["channel"] != second.json()["channel"]
    assert Thread.objects.filter(channel=second.json()["channel"], title="no channel").exists()


@pytest.mark.django_db
def test_it_refuses_a_duplicate_channel_with_409(owner_api, thread):
    before = row_counts()
    response = owner_api.post(url(), {"channel": SLACK}, format="json")
    assert response.status_code == 409
    assert SLACK in response.json()["detail"]
    assert response.json()["field"] == "channel"
    assert row_counts() == before


@pytest.mark.django_db
def test_another_owners_channel_is_free_for_a_thread_of_ones_own(owner_api, other_api, other, thread):
    """Channels are per owner: nothing in the answer says another owner holds the name."""
    response = other_api.post(url(), {"channel": SLACK, "title": "mine"}, format="json")
    assert response.status_code == 201, response.json()
    mine = Thread.objects.get(owner=other, channel=SLACK)
    assert other_api.get(url(SLACK)).json()["title"] == "mine"
    assert owner_api.get(url(SLACK)).json()["title"] == thread.title
    assert mine.pk != thread.pk and Thread.objects.filter(channel=SLACK).count() == 2
    append(thread, {"role": "user", "content": "owner-only-phrase kiwi-3301"})
    append(mine, {"role": "user", "content": "other-only-phrase kiwi-3302"})
    for client, own, foreign in ((owner_api, "kiwi-3301", "kiwi-3302"), (other_api, "kiwi-3302", "kiwi-3301")):
        text = client.post("/api/v1/search/", {"query": "kiwi", "channel": SLACK}, format="json").json()["text"]
        assert own in text and foreign not in text
        assert client.get(url(SLACK, "messages/")).json()["results"][0]["content"].endswith(own)


@pytest.mark.django_db
def test_an_operator_names_the_owner_of_a_channel_several_owners_hold(operator_api, other, thread):
    make_thread(other, SLACK, title="the other one")
    response = operator_api.get(url(SLACK))
    assert response.status_code == 409
    assert response.json()["detail"] == (
        f"channel {SLACK!r} is held by 2 owners (other, owner): name one with owner=<username>"
    )
    assert operator_api.get(url(SLACK), {"owner": "other"}).json()["title"] == "the other one"
    assert operator_api.get(url(SLACK), {"owner": "owner"}).json()["title"] == thread.title
    assert operator_api.get(url(SLACK), {"owner": "nobody"}).status_code == 404
    search = operator_api.post("/api/v1/search/", {"query": "anything", "channel": SLACK}, format="json")
    assert search.status_code == 409 and "held by 2 owners" in search.json()["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"channel": "a\u0000b"}, 400, "NUL"),
        ({"channel": "team/"}, 400, "must not end with '/'"),
        ({"channel": "team/messages"}, 400, "names an API route"),
        ({"channel": " padded"}, 400, "whitespace"),
        ({"channel": "x" * 256}, 400, "longer than 255"),
        ({"channel": 12}, 400, "channel must be a string"),
        ({"channel": ""}, 400, "channel must not be empty"),
        ({"title": "t\u0000"}, 400, "title contains a NUL"),
        ({"title": "t" * 501}, 400, "longer than 500"),
        ({"channel": "ok", "colour": "red"}, 400, "unknown fields: colour"),
        (["channel"], 400, "must be a JSON object"),
        ({"fork_from": "slack:x"}, 400, "fork_from must be an object"),
        ({"fork_from": {"channel": SLACK}}, 400, "missing: message_id"),
        ({"fork_from": {"channel": SLACK, "message_id": "1"}}, 400, "message_id must be an integer"),
        ({"fork_from": {"channel": SLACK, "message_id": 1, "seq": 1}}, 400, "unknown fields: seq"),
        ({"fork_from": {"channel": ["x"], "message_id": 1}}, 400, "fork_from.channel must be a string"),
    ],
)
def test_it_refuses_a_bad_create_body_naming_the_problem_and_writes_nothing(owner_api, thread, body, status, words):
    before = row_counts()
    response = owner_api.post(url(), body, format="json")
    assert response.status_code == status
    assert words in response.json()["detail"]
    assert row_counts() == before


@pytest.mark.django_db
def test_it_refuses_a_body_that_is_not_json(owner_api):
    before = row_counts()
    response = owner_api.post(url(), '{"channel": "x",', content_type="application/json")
    assert response.status_code == 400
    assert "not valid JSON" in response.json()["detail"]
    form = owner_api.post(url(), {"channel": "x"})  # multipart, not JSON
    assert form.status_code == 415
    assert row_counts() == before


# --- fork -------------------------------------------------------------------------


@pytest.mark.django_db
def test_it_forks_a_readable_thread_at_a_message(owner_api, thread):
    _first, second, _third = append(
        thread,
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "second"},
        {"role": "user", "content": "third"},
    )
    body = {"channel": "fork/1", "fork_from": {"channel": SLACK, "message_id": second.id}}
    response = owner_api.post(url(), body, format="json")
    assert response.status_code == 201
    assert response.json()["parent"] == SLACK
    assert response.json()["fork_message_id"] == second.id
    assert response.json()["current_generation"] == second.generation
    context = owner_api.get(url("fork/1", "context/")).json()["messages"]
    assert [m["content"] for m in context] == ["first", "second"]


@pytest.mark.django_db
def test_it_lets_operators_and_admins_fork_any_thread_and_own_the_fork(operator_api, admin_api, thread):
    (message,) = append(thread, {"role": "user", "content": "hello"})
    for name, client in (("operator", operator_api), ("admin", admin_api)):
        body = {"channel": f"fork-{name}", "fork_from": {"channel": SLACK, "message_id": message.id}}
        response = client.post(url(), body, format="json")
        assert response.status_code == 201
        assert response.json()["owner"] == name


@pytest.mark.django_db
def test_it_answers_404_when_forking_another_owners_thread(other_api, thread):
    (message,) = append(thread, {"role": "user", "content": "secret plan"})
    before = row_counts()
    body = {"channel": "stolen", "fork_from": {"channel": SLACK, "message_id": message.id}}
    response = other_api.post(url(), body, format="json")
    assert response.status_code == 404
    assert SLACK in response.json()["detail"]
    assert row_counts() == before


@pytest.mark.django_db
def test_it_answers_404_naming_a_fork_message_that_is_not_in_the_thread(owner_api, owner, thread):
    elsewhere = make_thread(owner, "elsewhere")
    (foreign,) = append(elsewhere, {"role": "user", "content": "not in slack"})
    before = row_counts()
    for message_id in (foreign.id, 2**70):
        body = {"channel": "fork", "fork_from": {"channel": SLACK, "message_id": message_id}}
        response = owner_api.post(url(), body, format="json")
        assert response.status_code == 404
        assert f"message {message_id} is not in thread" in response.json()["detail"]
    assert row_counts() == before


@pytest.mark.django_db
def test_it_answers_404_when_forking_an_unknown_channel(owner_api):
    before = row_counts()
    body = {"fork_from": {"channel": "nope", "message_id": 1}}
    response = owner_api.post(url(), body, format="json")
    assert response.status_code == 404
    assert "'nope' not found" in response.json()["detail"]
    assert row_counts() == before


# --- list -------------------------------------------------------------------------


@pytest.mark.django_db
def test_it_lists_only_the_callers_threads_most_recent_first(owner_api, other_api, owner, other):
    old = make_thread(owner, "old")
    new = make_thread(owner, "new")
    make_thread(other, "others")
    Thread.objects.filter(pk=old.pk).update(last_activity_at=dt.datetime(2024, 1, 1, tzinfo=dt.UTC))
    Thread.objects.filter(pk=new.pk).update(last_activity_at=dt.datetime(2024, 1, 2, tzinfo=dt.UTC))
    body = owner_api.get(url()).json()
    assert [t["channel"] for t in body["results"]] == ["new", "old"]
    assert body["count"] == 2
    assert body["next"] is None
    assert [t["channel"] for t in other_api.get(url()).json()["results"]] == ["others"]
    append(old, {"role": "user", "content": "activity moves it up"})
    assert [t["channel"] for t in owner_api.get(url()).json()["results"]] == ["old", "new"]


@pytest.mark.django_db
def test_it_lists_every_thread_to_operators_and_admins(operator_api, admin_api, owner, other):
    make_thread(owner, "a")
    make_thread(other, "b")
    for client in (operator_api, admin_api):
        channels = {t["channel"] for t in client.get(url()).json()["results"]}
        assert channels == {"a", "b"}


@pytest.mark.django_db
def test_it_paginates_the_thread_list(owner_api, owner):
    for index in range(5):
        make_thread(owner, f"t{index}")
    first = owner_api.get(url(), {"page_size": 2}).json()
    assert len(first["results"]) == 2
    assert first["count"] == 5
    assert first["next"] is not None
    seen = [t["channel"] for t in first["results"]]
    next_url = first["next"]
    while next_url:
        page = owner_api.get(next_url).json()
        seen += [t["channel"] for t in page["results"]]
        next_url = page["next"]
    assert sorted(seen) == [f"t{index}" for index in range(5)]


@pytest.mark.django_db
def test_it_lists_threads_in_a_fixed_number_of_queries(owner_api, owner, django_assert_num_queries):
    parent = make_thread(owner, "parent")
    (message,) = append(parent, {"role": "user", "content": "x"})
    for index in range(4):
        make_thread(owner, f"fork{index}", fork_from=message)
    # auth token, count, page (owner and parent joined in)
    with django_assert_num_queries(3):
        body = owner_api.get(url()).json()
    assert {t["parent"] for t in body["results"]} == {None, "parent"}


# --- read -------------------------------------------------------------------------


@pytest.mark.django_db
def test_it_reads_a_thread_with_its_generations_and_their_message_counts(owner_api, thread):
    append(thread, {"role": "user", "content": "one"}, {"role": "assistant", "content": "two"})
    # A compacted first generation: closed, with a summary opening generation 2.
    Thread.objects.filter(pk=thread.pk).update(current_generation=2)
    thread.refresh_from_db()
    Generation.objects.create(thread=thread, number=2)
    (late,) = append(thread, {"role": "user", "content": "three"})
    summary = make_summary(thread, generation=2, seq=99, content="1. Primary request", role="system")
    Generation.objects.filter(thread=thread, number=1).update(
        state="closed", closed_at=dt.datetime(2024, 5, 1, tzinfo=dt.UTC), summary_message=summary
    )
    response = owner_api.get(url(SLACK))
    assert response.status_code == 200
    body = response.json()
    assert set(body) == THREAD_FIELDS | {"generations"}
    assert body["current_generation"] == 2
    generations = body["generations"]
    assert [(g["number"], g["state"], g["message_count"]) for g in generations] == [(1, "closed", 2), (2, "open", 2)]
    assert generations[0]["summary_message_id"] == summary.id
    assert generations[0]["closed_at"].startswith("2024-05-01")
    assert generations[1]["summary_message_id"] is None
    assert generations[1]["closed_at"] is None
    assert generations[1]["started_at"]
    assert late.generation == 2


@pytest.mark.django_db
def test_it_counts_messages_of_every_generation_in_one_query(owner_api, thread, django_assert_num_queries):
    for number in range(2, 7):
        Generation.objects.create(thread=thread, number=number)
        Message.objects.create(thread=thread, generation=number, seq=number, role="user", content="x")
    # auth token, thread, generations with counts
    with django_assert_num_queries(3):
        body = owner_api.get(url(SLACK)).json()
    assert [g["message_count"] for g in body["generations"]] == [0, 1, 1, 1, 1, 1]


@pytest.mark.django_db
def test_it_answers_404_for_another_owners_thread_and_200_for_operators_and_admins(
    other_api, operator_api, admin_api, thread
):
    response = other_api.get(url(SLACK))
    assert response.status_code == 404
    assert response.json()["detail"] == f"thread {SLACK!r} not found"
    assert operator_api.get(url(SLACK)).status_code == 200
    assert admin_api.get(url(SLACK)).json()["owner"] == "owner"


@pytest.mark.django_db
def test_it_answers_404_for_an_unknown_channel_even_with_a_nul(owner_api):
    assert owner_api.get(url("nope")).status_code == 404
    assert owner_api.get(url("no%00pe")).status_code == 404
