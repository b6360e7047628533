"""Whatever a caller sends a memory tool is refused with a clear 4xx and logged as something the log can hold
and the console can render: a message id that is not a positive integer, a number that is not finite."""

from __future__ import annotations

import pytest

from tests.support.factories import append
from threadmem.features.tools import tool_answer
from threadmem.models import ToolCall

ODD_IDS = ["-1", "%C2%B2", "%D9%A3", "1_0", "0", "99999999999999999999999"]


@pytest.mark.django_db
@pytest.mark.parametrize("raw_id", ODD_IDS)
def test_an_audit_read_of_an_id_that_is_not_a_positive_integer_answers_404_and_the_log_still_renders(
    owner_api, operator_console, thread, raw_id
):
    append(thread, {"role": "user", "content": "hello"})
    response = owner_api.get(f"/api/v1/messages/{raw_id}/", {"view": "audit"})
    assert response.status_code == 404
    assert "a message id is a positive integer" in response.json()["detail"]
    assert ToolCall.objects.filter(tool="message_context_read", status_code=404).count() == 1

    page = operator_console.get("/console/tool-calls/")

    assert page.status_code == 200
    assert 'href="/console/messages/' not in page.content.decode()


@pytest.mark.django_db
def test_log_rows_of_any_shape_render_on_the_console(operator_console, owner):
    # Rows as an older version wrote them, or as a caller's JSON made them.
    for arguments in (
        {"message_id": "-1"},
        {"message_id": "²", "offset": "NaN"},
        {"message_id": -5, "offset": -3},
        {"message_id": {"nested": [1]}, "offset": 10**30},
        {"message_id": 7, "offset": 12_345},
        {},
    ):
        ToolCall.objects.create(
            tool="message_context_read",
            caller=owner,
            arguments=arguments,
            chars_returned=0,
            latency_ms=1.0,
            status_code=404,
        )
    page = operator_console.get("/console/tool-calls/")
    assert page.status_code == 200
    body = page.content.decode()
    assert 'href="/console/messages/7/"' in body and "offset 12,345" in body
    assert "&#x27;-1&#x27;" in body


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('{"query": "abcdef", "channel": 1e999}', "channel must be a string"),
        ('{"query": "abcdef", "channel": -1e999}', "channel must be a string"),
        ('{"query": 1e999}', "query must be a string"),
        ('{"query": "abcdef", "channel": 100000000000000000000000000000}', "channel must be a string"),
    ],
)
def test_a_search_with_a_number_that_is_not_finite_answers_400_and_is_logged(owner_api, thread, body, words):
    response = owner_api.post("/api/v1/search/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert words in response.json()["detail"]
    (row,) = ToolCall.objects.filter(status_code=400)
    assert all(isinstance(value, str) for value in row.arguments.values() if value is not None)
    assert owner_api.get("/api/v1/tool-calls/").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("offset", [float("nan"), float("inf"), -1, 2.5, 10**30])
def test_a_read_with_an_offset_that_is_not_a_finite_non_negative_integer_is_refused_and_logged(owner, thread, offset):
    (message,) = append(thread, {"role": "user", "content": "hello"})
    answer = tool_answer(
        name="message_context_read",
        arguments={"message_id": message.id, "offset": offset},
        user=owner,
        surface=ToolCall.Surface.MCP,
    )
    assert answer.is_error
    assert "offset" in answer.text and "SELECT" not in answer.text and "INSERT" not in answer.text
    assert ToolCall.objects.filter(status_code=400).count() == 1
