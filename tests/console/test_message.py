"""The message audit page: the record as stored, paged content, calls and results linked."""

from __future__ import annotations

from html import escape as html_escape

import pytest
from django.urls import reverse

from console.selectors import CONTENT_PAGE_CHARS
from tests.support.factories import append, append_tool_exchange, make_summary
from threadmem.domain import services


def url(message, **params) -> str:
    out = reverse("console:message", args=[message.id])
    if params:
        out += "?" + "&".join(f"{k}={v}" for k, v in params.items())
    return out


@pytest.fixture
def call_and_result(thread):
    call = {"id": "call_9", "name": "bash", "arguments": {"command": "kubectl get pods", "env": {"NS": "web"}}}
    return append_tool_exchange(thread, call, "web-1 Running", content="checking the rollout")


def test_it_shows_the_message_as_stored_with_its_flags(operator_console, thread):
    message = append(
        thread, {"role": "user", "content": "<b>not html</b>", "session_id": "sess-7", "model_visible": False}
    )[0]

    body = operator_console.get(url(message)).content.decode()

    assert "&lt;b&gt;not html&lt;/b&gt;" in body
    assert "sess-7" in body
    assert "model-invisible" in body
    assert thread.channel in body


def test_it_pretty_prints_tool_call_arguments_and_links_each_result(operator_console, call_and_result):
    call, result = call_and_result

    body = operator_console.get(url(call)).content.decode()

    # Indented JSON (PostgreSQL's jsonb keeps its own key order, so no order is assumed).
    assert "\n  &quot;command&quot;: &quot;kubectl get pods&quot;" in body
    assert "\n  &quot;env&quot;: {\n    &quot;NS&quot;: &quot;web&quot;\n  }" in body
    assert f'href="{url(result)}">→ result #{result.id} · 13 chars' in body


def test_it_links_a_result_to_its_call(operator_console, call_and_result):
    call, result = call_and_result

    body = operator_console.get(url(result)).content.decode()

    assert f'Result of <strong>bash</strong> called in <a href="{url(call)}">message #{call.id}</a>' in body


def test_it_says_when_no_call_carries_the_results_id(operator_console, thread):
    orphan = append(thread, {"role": "tool", "tool_call_id": "ghost", "content": "?"})[0]
    body = operator_console.get(url(orphan)).content.decode()
    assert "No stored call carries tool_call_id" in body


def test_it_pages_huge_content_in_fixed_slices(operator_console, thread, settings):
    settings.THREADMEM_MAX_MESSAGE_BYTES = 10 * 1024 * 1024
    text = "".join(chr(ord("A") + i) * CONTENT_PAGE_CHARS for i in range(5)) + "z" * 10
    message = append(thread, {"role": "tool", "tool_call_id": "t", "content": text})[0]

    first = operator_console.get(url(message))
    last = operator_console.get(url(message, page=6))

    body = first.content.decode()
    assert "A" * CONTENT_PAGE_CHARS in body
    assert "B" not in body.split('<pre class="content audit-content">')[1].split("</pre>")[0]
    assert "Page 1 of 6" in body
    assert len(first.content) < CONTENT_PAGE_CHARS + 30_000
    assert "zzzzzzzzzz</pre>" in last.content.decode()
    assert "characters 250,001–250,010 of 250,010" in last.content.decode()
    assert operator_console.get(url(message, page=7)).status_code == 404


def test_it_turns_message_ids_in_a_summary_into_links(operator_console, thread):
    cited = append(thread, {"role": "user", "content": "the evidence"})[0]
    summary = make_summary(thread, generation=2, seq=50, content=f"see messageId={cited.id} and #{cited.id}")
    body = operator_console.get(url(summary)).content.decode()
    assert body.count(f'<a class="mid" href="{url(cited)}">{cited.id}</a>') == 2


def test_it_does_not_link_ids_in_ordinary_messages(operator_console, thread):
    message = append(thread, {"role": "user", "content": "see messageId=1"})[0]
    body = operator_console.get(url(message)).content.decode()
    assert "see messageId=1" in body


def test_it_shows_supersession_both_ways(operator_console, thread):
    draft = append(thread, {"role": "assistant", "content": "draft"})[0]
    final = append(thread, {"role": "assistant", "content": "final", "supersedes": draft.id})[0]

    assert f"superseded by #{final.id}" in operator_console.get(url(draft)).content.decode()
    assert f'href="{url(draft)}">#{draft.id}</a>' in operator_console.get(url(final)).content.decode()


def test_it_offers_the_raw_row_as_json(operator_console, call_and_result):
    call, _ = call_and_result
    response = operator_console.get(reverse("console:message-raw", args=[call.id]))
    assert response.status_code == 200
    assert "attachment" in response["Content-Disposition"]
    data = response.json()
    assert data["tool_calls"][0]["arguments"] == {"command": "kubectl get pods", "env": {"NS": "web"}}
    assert data["content"] == "checking the rollout"


def test_it_links_back_to_the_right_page_of_the_thread(operator_console, thread):
    messages = append(thread, *[{"role": "user", "content": f"m{i}"} for i in range(150)])
    body = operator_console.get(url(messages[120])).content.decode()
    assert f"?generation=1&amp;page=2#m{messages[120].id}" in body


def test_it_shows_who_isolated_the_message_and_when(operator_console, thread, admin):
    message = append(thread, {"role": "user", "content": "secret"})[0]
    services.message_set_isolated(message=message, isolated=True, actor=admin, surface="api")

    body = operator_console.get(url(message)).content.decode()

    trail = body[body.index('<ol class="trail">') :]
    assert "<strong>admin</strong>" in trail
    assert "via api" in trail


@pytest.mark.parametrize("size", [10, 200_000])
def test_it_renders_a_message_in_a_fixed_number_of_queries(
    operator_console, call_and_result, thread, settings, size, django_assert_num_queries
):
    call, result = call_and_result
    big = append(thread, {"role": "tool", "tool_call_id": "call_9", "content": "x" * size})[0]

    # session, user, message, results, supersedes, thread page, trail, two permission lookups
    with django_assert_num_queries(9):
        operator_console.get(url(call))
    # session, user, message, call, call name, supersedes, thread page, trail, two permission lookups
    with django_assert_num_queries(10):
        operator_console.get(url(big))
    assert result.id != big.id


def test_it_shows_the_message_as_the_model_reads_it(operator_console, operator, call_and_result):
    from threadmem.features.search import message_context_read
    from threadmem.models import ToolCall

    call, _ = call_and_result
    response = operator_console.get(reverse("console:message-model-read", args=[call.id]))

    assert response.status_code == 200
    expected = message_context_read(user=operator, message_id=call.id, surface="console")
    assert response.context["read"].text == expected.text
    assert html_escape(expected.text) in response.content.decode()
    logged = ToolCall.objects.filter(tool="message_context_read", surface="console", caller=operator)
    assert logged.count() == 2


def test_it_says_when_the_model_cannot_read_a_message(admin_console, thread, admin):
    message = append(thread, {"role": "user", "content": "secret"})[0]
    services.message_set_isolated(message=message, isolated=True, actor=admin)

    response = admin_console.get(reverse("console:message-model-read", args=[message.id]))

    assert response.status_code == 200
    body = response.content.decode()
    assert "The model gets 404" in body
    assert "because it is isolated" in body
    assert "tool-text" not in body


def test_it_pages_the_models_read_by_offset(operator_console, thread):
    message = append(thread, {"role": "tool", "tool_call_id": "t", "content": "y" * 30_000})[0]
    first = operator_console.get(reverse("console:message-model-read", args=[message.id]))
    next_offset = first.context["read"].next_offset
    assert next_offset is not None and 0 < next_offset < 30_000
    second = operator_console.get(reverse("console:message-model-read", args=[message.id]), {"offset": next_offset})
    assert second.context["read"].offset == next_offset
