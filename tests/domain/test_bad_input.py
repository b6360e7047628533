"""Input that used to answer an HTML 500 (contract §8): each is now a JSON 4xx naming the problem, writing nothing.

Bodies are sent as raw bytes, the way a client that escapes a lone surrogate
(``"\\ud800"``) or nests 10,000 levels would send them.
"""

from __future__ import annotations

import json

import pytest

from tests.support.factories import append, row_counts
from threadmem.lib.storable import CLIPPED, MAX_JSON_DEPTH
from threadmem.models import Message

SLACK = "slack:C042/1700000000.1"
MESSAGES = f"/api/v1/threads/{SLACK}/messages/"


def nested(depth: int) -> str:
    """A JSON object nested ``depth`` levels deep (the outermost one counted)."""
    return '{"a": ' * (depth - 1) + "{}" + "}" * (depth - 1)


def tool_call(arguments: str) -> str:
    """An assistant message whose one call carries ``arguments`` as JSON text (the OpenAI wire shape)."""
    call = {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": arguments}}
    return json.dumps({"role": "assistant", "tool_calls": [call]})


BAD_REQUESTS = [
    pytest.param("/api/v1/threads/", '{"channel": "a\\ud800"}', "channel contains a lone surrogate", id="channel"),
    pytest.param("/api/v1/threads/", '{"title": "\\udfff"}', "title contains a lone surrogate", id="title"),
    pytest.param("/api/v1/search/", '{"query": "ab\\ud800c"}', "query contains a lone surrogate", id="query"),
    pytest.param(
        "/api/v1/search/", '{"query": "abc", "channel": "\\ud800"}', "channel contains a lone surrogate", id="scope"
    ),
    pytest.param(MESSAGES, '{"role": "user", "content": "x\\ud800"}', "no low surrogate", id="text"),
    pytest.param(MESSAGES, tool_call('{"a": "\\ud800"}'), "arguments contains a lone surrogate", id="args-surrogate"),
    pytest.param(MESSAGES, tool_call('{"a": NaN}'), "NaN is not a JSON value", id="args-nan"),
    pytest.param(MESSAGES, tool_call('{"a": 1e999}'), "1e999 is out of range", id="args-infinity"),
    pytest.param(MESSAGES, tool_call('{"a": ' + "9" * 5000 + "}"), "arguments is not valid JSON", id="args-digits"),
    pytest.param(MESSAGES, tool_call(nested(10_000)), "arguments nests too deeply", id="args-string-10000-deep"),
    pytest.param(
        MESSAGES,
        tool_call(nested(MAX_JSON_DEPTH + 1)),
        f"nests deeper than {MAX_JSON_DEPTH} levels",
        id="args-string-65-deep",
    ),
    pytest.param(
        MESSAGES,
        '{"role": "assistant", "tool_calls": [{"id": "c", "name": "shell", "arguments": ' + nested(300) + "}]}",
        f"nests deeper than {MAX_JSON_DEPTH} levels",
        id="args-object-300-deep",
    ),
    pytest.param("/api/v1/threads/", '{"title": ' + nested(10_000) + "}", "nests too deeply", id="thread-10000-deep"),
    pytest.param("/api/v1/search/", '{"query": ' + nested(10_000) + "}", "nests too deeply", id="search-10000-deep"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "body", "words"), BAD_REQUESTS)
def test_it_answers_bad_bodies_with_a_json_400_naming_the_problem(owner_api, thread, path, body, words):
    before = row_counts()
    response = owner_api.post(path, data=body.encode(), content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert response["Content-Type"] == "application/json"
    assert words in response.json()["detail"]
    assert row_counts() == before


@pytest.mark.django_db
def test_it_stores_arguments_exactly_as_deep_as_the_limit(owner_api, thread):
    response = owner_api.post(
        MESSAGES, data=tool_call(nested(MAX_JSON_DEPTH)).encode(), content_type="application/json"
    )
    assert response.status_code == 201
    assert json.dumps(response.json()["tool_calls"][0]["arguments"]).count("{") == MAX_JSON_DEPTH


@pytest.mark.django_db
def test_it_answers_a_non_ascii_digit_offset_with_400(owner_api, thread):
    (message,) = append(thread, {"role": "user", "content": "checking the box"})
    response = owner_api.get(f"/api/v1/messages/{message.id}/?view=audit&offset=%C2%B2")
    assert response.status_code == 400
    assert "offset must be a non-negative integer" in response.json()["detail"]


@pytest.mark.django_db
def test_it_answers_an_api_url_with_no_route_as_json_404(owner_api, thread):
    response = owner_api.get("/api/v1/threads/a%0Ab/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert "no API route matches" in response.json()["detail"]


@pytest.mark.django_db
def test_it_answers_a_nul_in_a_console_channel_url_with_404(operator_console):
    assert operator_console.get("/console/c/%00/").status_code == 404


@pytest.mark.django_db
def test_it_lists_and_reads_a_message_stored_deeper_than_any_renderer_goes(owner_api, thread):
    """Stored before the depth limit existed: listing and the audit read still answer, clipped where needed."""
    deep: dict = {}
    for _ in range(400):
        deep = {"a": deep}
    (message,) = append(thread, {"role": "assistant", "tool_calls": [{"id": "c", "name": "shell", "arguments": {}}]})
    Message.objects.filter(pk=message.pk).update(tool_calls=[{"id": "c", "name": "shell", "arguments": deep}])

    listing = owner_api.get(MESSAGES)
    assert listing.status_code == 200
    assert CLIPPED in json.dumps(listing.json()["results"][0]["tool_calls"])
    assert owner_api.get(f"/api/v1/messages/{message.id}/?view=audit").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("page", ["0", "-1", "²", "x"])
def test_it_answers_a_page_that_is_not_a_positive_integer_with_400(owner_api, thread, page):
    response = owner_api.get(MESSAGES, {"page": page})
    assert response.status_code == 400
    assert "page must be a positive integer" in response.json()["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("channel", "words"),
    [
        ("a\x07b", "control characters"),
        ("a\x85b", "control characters"),
        ("*", "must not contain '*'"),
        ("team/*", "must not contain '*'"),
        ("..", "'.' or '..' segment"),
        ("a/../b", "'.' or '..' segment"),
        ("./a", "'.' or '..' segment"),
    ],
)
def test_it_refuses_channels_outside_the_grammar(owner_api, channel, words):
    before = row_counts()
    response = owner_api.post("/api/v1/threads/", {"channel": channel}, format="json")
    assert response.status_code == 400
    assert words in response.json()["detail"]
    assert row_counts() == before


@pytest.mark.django_db
def test_it_accepts_dots_inside_a_segment(owner_api):
    assert owner_api.post("/api/v1/threads/", {"channel": "cli:a..b/v1.2"}, format="json").status_code == 201
